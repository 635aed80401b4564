// TRANSPOSE_CONV (Keras Conv2DTranspose, PyTorch ConvTranspose2d): forward in [x, W, b] out [y],
// backward in [x, W, y, dy] out [dx, dW, db], y's shape given (the file's output_shape): strides 1
// to 3, SAME and VALID (an output larger than the taps reach: its border is the bias alone), even
// and odd filters, fused activations, the backward variants the training graph makes (a first
// layer without dx, a frozen filter without dW, no bias). Exact: the numerics' fma chains.
#include <cmath>

#include "case_common.h"
#include "reference.h"
#include "window_geometry.h"

namespace cltrain {
namespace optest {
namespace {

struct TConvSpec {
  std::string tag;
  std::vector<int32_t> x;  // [N,H,W,I]
  int32_t kh, kw, out_ch, padding, stride_h, stride_w, out_h, out_w;
  int32_t act = CLTRAIN_ACT_NONE;
  bool bias = true, dx = true, dw = true;
};

OpCase tconv_case(const TConvSpec& s) {
  OpCase c;
  c.op = CLTRAIN_OP_TRANSPOSE_CONV;
  c.name = "TransposeConv_" + s.tag + "_" + act_name(s.act);
  const std::vector<int32_t> wdims{s.out_ch, s.kh, s.kw, s.x[3]}, ydims{s.x[0], s.out_h, s.out_w, s.out_ch};
  cltrain_op_params p{};
  p.activation = s.act;
  p.padding = s.padding;
  p.stride_h = s.stride_h;
  p.stride_w = s.stride_w;
  p.dilation_h = p.dilation_w = 1;
  AxisGeometry gh, gw;
  axis_geometry(s.padding, s.out_h, s.kh, s.stride_h, 1, "height", &gh);
  axis_geometry(s.padding, s.out_w, s.kw, s.stride_w, 1, "width", &gw);
  const int32_t x = c.input("x", s.x);
  const int32_t w = c.weight("W", wdims);
  const int32_t b = s.bias ? c.weight("b", {s.out_ch}) : -1;
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = s.dx ? c.output("dx", s.x, CLTRAIN_ROLE_BACK_PROP) : -1;
  const int32_t dw = s.dw ? c.output("dW", wdims, CLTRAIN_ROLE_GRADIENT) : -1;
  const int32_t db = s.bias ? c.output("db", {s.out_ch}, CLTRAIN_ROLE_GRADIENT) : -1;
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {x, w, b}, {y}, p);
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {s.dw ? x : -1, w, s.act != CLTRAIN_ACT_NONE ? y : -1, dy}, {dx, dw, db}, p);
  c.y = y;
  c.dy = dy;
  c.activation = s.act;
  if (dx >= 0) c.grads.push_back({x, dx});
  if (dw >= 0) c.grads.push_back({w, dw});
  if (db >= 0) c.grads.push_back({b, db});
  c.fd_samples = 32;
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 1e-5;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-2;
  const int64_t N = s.x[0], H = s.x[1], W = s.x[2], I = s.x[3], OH = s.out_h, OW = s.out_w, O = s.out_ch;
  const int64_t KH = s.kh, KW = s.kw, SH = s.stride_h, SW = s.stride_w, PT = gh.pad_before, PL = gw.pad_before;
  const int32_t act = s.act;
  // cltrain_ops.h's numerics, in the value type (double: the reference; float: the exact chains).
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    const auto& xv = in.at(x);
    const auto& wv = in.at(w);
    const auto& dyv = in.at(dy);
    const auto at_input = [](int64_t o, int64_t k, int64_t st, int64_t pad, int64_t e) -> int64_t {
      const int64_t t = o + pad - k;
      return t < 0 || t % st != 0 || t / st >= e ? -1 : t / st;
    };
    std::vector<T> yv(static_cast<size_t>(N * OH * OW * O)), dz(yv.size());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t o = 0; o < O; ++o) {
            T acc = 0;
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = at_input(oh, kh, SH, PT, H);
              if (ih < 0) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = at_input(ow, kw, SW, PL, W);
                if (iw < 0) continue;
                for (int64_t i = 0; i < I; ++i)
                  acc = std::fma(xv[static_cast<size_t>(((n * H + ih) * W + iw) * I + i)],
                                 wv[static_cast<size_t>(((o * KH + kh) * KW + kw) * I + i)], acc);
              }
            }
            const size_t j = static_cast<size_t>(((n * OH + oh) * OW + ow) * O + o);
            yv[j] = ref_act(act, b >= 0 ? acc + in.at(b)[static_cast<size_t>(o)] : acc);
            dz[j] = ref_act_grad(act, yv[j], dyv[j]);
          }
    std::decay_t<decltype(in)> out{{y, yv}};
    const auto dz_at = [&](int64_t n, int64_t oh, int64_t ow, int64_t o) {
      return dz[static_cast<size_t>(((n * OH + oh) * OW + ow) * O + o)];
    };
    if (dx >= 0) {
      std::vector<T> v(xv.size());
      for (int64_t n = 0; n < N; ++n)
        for (int64_t ih = 0; ih < H; ++ih)
          for (int64_t iw = 0; iw < W; ++iw)
            for (int64_t i = 0; i < I; ++i) {
              T acc = 0;
              for (int64_t kh = 0; kh < KH; ++kh) {
                const int64_t oh = ih * SH - PT + kh;
                if (oh < 0 || oh >= OH) continue;
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t ow = iw * SW - PL + kw;
                  if (ow < 0 || ow >= OW) continue;
                  for (int64_t o = 0; o < O; ++o)
                    acc =
                        std::fma(dz_at(n, oh, ow, o), wv[static_cast<size_t>(((o * KH + kh) * KW + kw) * I + i)], acc);
                }
              }
              v[static_cast<size_t>(((n * H + ih) * W + iw) * I + i)] = acc;
            }
      out[dx] = v;
    }
    if (dw >= 0) {
      std::vector<T> v(wv.size());
      for (int64_t o = 0; o < O; ++o)
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw)
            for (int64_t i = 0; i < I; ++i) {
              T acc = 0;
              for (int64_t n = 0; n < N; ++n)
                for (int64_t ih = 0; ih < H; ++ih) {
                  const int64_t oh = ih * SH - PT + kh;
                  if (oh < 0 || oh >= OH) continue;
                  for (int64_t iw = 0; iw < W; ++iw) {
                    const int64_t ow = iw * SW - PL + kw;
                    if (ow < 0 || ow >= OW) continue;
                    acc = std::fma(dz_at(n, oh, ow, o), xv[static_cast<size_t>(((n * H + ih) * W + iw) * I + i)], acc);
                  }
                }
              v[static_cast<size_t>(((o * KH + kh) * KW + kw) * I + i)] = acc;
            }
      out[dw] = v;
    }
    if (db >= 0) {
      std::vector<T> v(static_cast<size_t>(O));
      for (int64_t o = 0; o < O; ++o) {
        T acc = 0;
        for (int64_t q = 0; q < N * OH * OW; ++q) acc = acc + dz[static_cast<size_t>(q * O + o)];
        v[static_cast<size_t>(o)] = acc;
      }
      out[db] = v;
    }
    return out;
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  const int32_t SAME = CLTRAIN_PADDING_SAME, VALID = CLTRAIN_PADDING_VALID;
  const int32_t RELU = CLTRAIN_ACT_RELU, TANH = CLTRAIN_ACT_TANH;  // RELU without a bias: b crosses its kinks
  // clang-format off
  return {
      // Keras Conv2DTranspose(4, 3, strides=2, padding="same"): a U-Net's upsampling.
      tconv_case({"same_s2_k3_n2_h3w4_i3_o4", {2, 3, 4, 3}, 3, 3, 4, SAME, 2, 2, 6, 8, TANH}),
      // An even filter (PyTorch's ConvTranspose2d(k=4, s=2, p=1) as onnx2tf writes it: SAME).
      tconv_case({"same_s2_k4_n1_h3w3_i2_o3", {1, 3, 3, 2}, 4, 4, 3, SAME, 2, 2, 6, 6}),
      tconv_case({"valid_s2_k3_n2_h3w2_i2_o3", {2, 3, 2, 2}, 3, 3, 3, VALID, 2, 2, 7, 5, TANH}),
      // VALID with an output one larger than the taps reach: its last row and column are b alone.
      tconv_case({"valid_s2_k2_border_n1_h3w3_i3_o2", {1, 3, 3, 3}, 2, 2, 2, VALID, 2, 2, 7, 7}),
      tconv_case({"same_s1_k3_n2_h4w5_i3_o2", {2, 4, 5, 3}, 3, 3, 2, SAME, 1, 1, 4, 5}),
      tconv_case({"same_s3x2_k3x2_nobias_n2_h2w3_i2_o3", {2, 2, 3, 2}, 3, 2, 3, SAME, 3, 2, 6, 6, RELU, false}),
      // A first layer (no dx) and a frozen filter (no dW, x not read).
      tconv_case({"first_layer_same_s2_k3_n2_h3w3_i1_o2", {2, 3, 3, 1}, 3, 3, 2, SAME, 2, 2, 6, 6, CLTRAIN_ACT_NONE,
                  true, false, true}),
      tconv_case({"frozen_valid_s1_k2_n2_h3w3_i2_o3", {2, 3, 3, 2}, 2, 2, 3, VALID, 1, 1, 4, 4, CLTRAIN_ACT_NONE,
                  true, true, false}),
  };
  // clang-format on
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
