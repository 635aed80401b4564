// CONV_2D and DEPTHWISE_CONV_2D: forward in [x, W, b] out [y], backward in [x, W, y, dy] out
// [dx, dW, db], over strides, dilations, SAME/VALID padding (even filters: uneven padding),
// depth multipliers, fused activations, and the backward variants the training graph makes: a
// first layer (no dx), a frozen filter (no dW, x -1) and a bias-only layer.
#include "op_case.h"
#include "reference.h"

namespace cltrain {
namespace optest {
namespace {

constexpr int32_t SAME = CLTRAIN_PADDING_SAME, VALID = CLTRAIN_PADDING_VALID;

struct ConvSpec {
  std::string tag;
  std::vector<int32_t> x;  // [N,H,W,C]
  int32_t kh, kw;
  int32_t channels;  // CONV_2D: output channels; DEPTHWISE_CONV_2D: the depth multiplier
  int32_t padding, stride_h, stride_w, dilation_h, dilation_w;
  int32_t act;
  bool bias = true;
  bool dx = true;  // false: a first layer
  bool dw = true;  // false: a frozen filter (x is -1)
  float w_scale = 1.0f;
  int fd_samples = 32;
  double fd_eps = 1e-2;  // smaller where a bias moves many outputs across a clamp
  int32_t dx_act = CLTRAIN_ACT_NONE;  // params.dx_activation: x's producer's activation (RELU, RELU6)
};

OpCase conv_case(const ConvSpec& s, bool depthwise) {
  OpCase c;
  c.op = depthwise ? CLTRAIN_OP_DEPTHWISE_CONV_2D : CLTRAIN_OP_CONV_2D;
  c.name = std::string(depthwise ? "DepthwiseConv2D_" : "Conv2D_") + s.tag + "_" + act_name(s.act);
  const int32_t in_ch = s.x[3];
  const int32_t out_ch = depthwise ? in_ch * s.channels : s.channels;
  const std::vector<int32_t> wdims =
      depthwise ? std::vector<int32_t>{1, s.kh, s.kw, out_ch} : std::vector<int32_t>{out_ch, s.kh, s.kw, in_ch};
  cltrain_op_params p{};
  p.activation = s.act;
  p.padding = s.padding;
  p.stride_h = s.stride_h;
  p.stride_w = s.stride_w;
  p.dilation_h = s.dilation_h;
  p.dilation_w = s.dilation_w;
  p.depth_multiplier = depthwise ? s.channels : 0;
  cltrain_op_params bp = p;
  bp.dx_activation = s.dx_act;
  const std::vector<int32_t> ydims = window_output(s.x, p, s.kh, s.kw, out_ch);

  // With a dx_activation, x is that activation's output (and more: negatives, and above 6).
  const int32_t x = c.input("x", s.x, s.dx_act == CLTRAIN_ACT_RELU6 ? 8.0f : 1.0f);
  const int32_t w = c.weight("W", wdims, s.w_scale);
  const int32_t b = s.bias ? c.weight("b", {out_ch}) : -1;
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = s.dx ? c.output("dx", s.x, CLTRAIN_ROLE_BACK_PROP) : -1;
  const int32_t dw = s.dw ? c.output("dW", wdims, CLTRAIN_ROLE_GRADIENT) : -1;
  const int32_t db = s.bias ? c.output("db", {out_ch}, CLTRAIN_ROLE_GRADIENT) : -1;
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {x, w, b}, {y}, p);
  const bool read_x = s.dw || s.dx_act != CLTRAIN_ACT_NONE;
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {read_x ? x : -1, w, s.act != CLTRAIN_ACT_NONE ? y : -1, dy}, {dx, dw, db}, bp);
  c.y = y;
  c.dy = dy;
  c.activation = s.act;
  c.dx_activation = s.dx_act;
  if (dx >= 0) c.grads.push_back({x, dx});
  if (dw >= 0) c.grads.push_back({w, dw});
  if (db >= 0) c.grads.push_back({b, db});
  c.fd_samples = s.fd_samples;
  c.tol.vs_cpu = 1e-4;  // devices that round otherwise (exp of TANH, fma emulation)
  c.tol.vs_reference = 1e-4;
  c.tol.fd_eps = s.fd_eps;
  c.tol.fd_tol = 1e-2;
  const std::vector<int32_t> xdims = s.x;
  c.reference = [=](const Values& in) {
    const ConvRef r = conv_reference(in.at(x), xdims, in.at(w), wdims, b >= 0 ? in.at(b) : std::vector<double>{}, p,
                                     depthwise, in.at(dy));
    Values out{{y, r.y}};
    if (dx >= 0) out[dx] = r.dx;
    if (dx >= 0 && s.dx_act != CLTRAIN_ACT_NONE)  // the select of the producer's derivative
      for (size_t i = 0; i < out[dx].size(); ++i) {
        const double v = in.at(x)[i];
        if (!(v > 0.0 && (s.dx_act != CLTRAIN_ACT_RELU6 || v < 6.0))) out[dx][i] = 0.0;
      }
    if (dw >= 0) out[dw] = r.dw;
    if (db >= 0) out[db] = r.db;
    return out;
  };
  return c;
}

std::vector<OpCase> make_cases() {
  const int32_t NONE = CLTRAIN_ACT_NONE, RELU = CLTRAIN_ACT_RELU, RELU6 = CLTRAIN_ACT_RELU6, TANH = CLTRAIN_ACT_TANH;
  const std::vector<ConvSpec> conv = {
      {"same_s1_k3_n2_h5w6_i3_o4", {2, 5, 6, 3}, 3, 3, 4, SAME, 1, 1, 1, 1, RELU},
      {"valid_s2x1_k3x2_n2_h7w6_i2_o3", {2, 7, 6, 2}, 3, 2, 3, VALID, 2, 1, 1, 1, NONE},
      // An even filter: SAME pads less before than after.
      {"same_s2_k4_nobias_n1_h8w7_i3_o5", {1, 8, 7, 3}, 4, 4, 5, SAME, 2, 2, 1, 1, RELU6, false, true, true, 2.0f},
      {"valid_dil2_k3_n2_h8w7_i2_o3", {2, 8, 7, 2}, 3, 3, 3, VALID, 1, 1, 2, 2, TANH},
      {"same_dil2x3_k3_n1_h7w9_i2_o3", {1, 7, 9, 2}, 3, 3, 3, SAME, 1, 1, 2, 3, NONE},
      {"first_layer_same_k5_n2_h8w8_i1_o8", {2, 8, 8, 1}, 5, 5, 8, SAME, 1, 1, 1, 1, RELU, true, false, true, 1.0f, 32,
       1e-3},
      // 5 input and 19 output channels: partial SIMD vectors everywhere.
      {"tails_same_s1_k3_n2_h6w6_i5_o19", {2, 6, 6, 5}, 3, 3, 19, SAME, 1, 1, 1, 1, CLTRAIN_ACT_RELU_N1_TO_1, true,
       true, true, 0.3f, 32, 1e-3},
      {"frozen_same_k3_n2_h5w5_i4_o6", {2, 5, 5, 4}, 3, 3, 6, SAME, 1, 1, 1, 1, NONE, true, true, false},
      {"bias_only_valid_k3_n2_h5w5_i3_o4", {2, 5, 5, 3}, 3, 3, 4, VALID, 1, 1, 1, 1, RELU, true, false, false},
      // mnist-kaggle's second convolution on a smaller image: long chains, whole SIMD tiles.
      {"mnist_same_k5_n2_h10w10_i32_o32", {2, 10, 10, 32}, 5, 5, 32, SAME, 1, 1, 1, 1, RELU, true, true, true, 0.2f,
       16},
      // The producer's derivative applied to dx (params.dx_activation): a 3x3, a 1x1 (which on
      // OpenCL then gathers instead of writing dx from the GEMM), and one without dW.
      {"dxrelu_same_s1_k3_n2_h6w5_i4_o3", {2, 6, 5, 4}, 3, 3, 3, SAME, 1, 1, 1, 1, RELU, true, true, true, 1.0f, 32,
       1e-2, RELU},
      {"dxrelu6_pointwise_n2_h4w4_i8_o6", {2, 4, 4, 8}, 1, 1, 6, SAME, 1, 1, 1, 1, NONE, true, true, true, 1.0f, 32,
       1e-2, RELU6},
      {"dxrelu_frozen_valid_s2_k3_n2_h7w7_i3_o4", {2, 7, 7, 3}, 3, 3, 4, VALID, 2, 2, 1, 1, NONE, true, true, false,
       1.0f, 32, 1e-2, RELU},
  };
  const std::vector<ConvSpec> depthwise = {
      {"same_s1_k3_m1_n2_h5w6_c5", {2, 5, 6, 5}, 3, 3, 1, SAME, 1, 1, 1, 1, RELU},
      {"valid_s2_k3_m2_nobias_n2_h7w7_c3", {2, 7, 7, 3}, 3, 3, 2, VALID, 2, 2, 1, 1, NONE, false},
      {"same_dil2_k3_m3_n1_h7w8_c2", {1, 7, 8, 2}, 3, 3, 3, SAME, 1, 1, 2, 2, RELU6, true, true, true, 4.0f},
      {"first_layer_same_s2_k2_m1_n2_h6w5_c4", {2, 6, 5, 4}, 2, 2, 1, SAME, 2, 2, 1, 1, TANH, true, false},
      // MobileNetV2's depthwise after a ReLU6 expansion: 16 channels (vector lanes on OpenCL).
      {"dxrelu6_same_s2_k3_m1_n2_h6w6_c16", {2, 6, 6, 16}, 3, 3, 1, SAME, 2, 2, 1, 1, RELU6, true, true, true, 1.0f,
       32, 1e-2, RELU6},
      {"dxrelu_same_s1_k3_m2_n1_h5w5_c3", {1, 5, 5, 3}, 3, 3, 2, SAME, 1, 1, 1, 1, NONE, true, true, true, 1.0f, 32,
       1e-2, RELU},
  };
  std::vector<OpCase> cases;
  for (const ConvSpec& s : conv) cases.push_back(conv_case(s, false));
  for (const ConvSpec& s : depthwise) cases.push_back(conv_case(s, true));
  return cases;
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
