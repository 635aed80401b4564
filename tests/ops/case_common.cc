#include "case_common.h"

#include <type_traits>

#include "reference.h"

namespace cltrain {
namespace optest {

std::vector<uint64_t> reduced_strides(const std::vector<int32_t>& x, int32_t mask) {
  std::vector<uint64_t> stride(x.size());
  uint64_t s = 1;
  for (size_t d = x.size(); d-- > 0;) {
    const bool reduced = (mask >> d) & 1;
    stride[d] = reduced ? 0 : s;
    if (!reduced) s *= static_cast<uint64_t>(x[d]);
  }
  return stride;
}

std::vector<uint64_t> y_index(const std::vector<int32_t>& x, const std::vector<uint64_t>& stride,
                              const std::vector<int32_t>& offset) {
  std::vector<uint64_t> out(element_count(x));
  for (uint64_t i = 0; i < out.size(); ++i) {
    uint64_t rest = i, j = 0;
    for (size_t d = x.size(); d-- > 0;) {
      const uint64_t coord = rest % static_cast<uint64_t>(x[d]);
      rest /= static_cast<uint64_t>(x[d]);
      j += (coord + (offset.empty() ? 0 : static_cast<uint64_t>(offset[d]))) * stride[d];
    }
    out[i] = j;
  }
  return out;
}

OpCase unary_case(int32_t op, const std::string& name, std::vector<int32_t> xdims, std::vector<int32_t> ydims,
                  const cltrain_op_params& p) {
  OpCase c;
  c.op = op;
  c.name = name;
  const int32_t x = c.input("x", xdims);
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", xdims, CLTRAIN_ROLE_BACK_PROP);
  c.step(op, CLTRAIN_PHASE_FORWARD, {x}, {y}, p);
  c.step(op, CLTRAIN_PHASE_BACKWARD, {dy}, {dx}, p);
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.fd_samples = 32;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-3;
  return c;
}

void copy_reference(OpCase& c, std::vector<uint64_t> map, uint64_t y_count, float fill) {
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 0.0;
  const int32_t x = 0, y = 1, dy = 2, dx = 3;
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    std::vector<T> yv(y_count, T(fill)), dxv(map.size());
    for (size_t i = 0; i < map.size(); ++i) {
      yv[map[i]] = in.at(x)[i];
      dxv[i] = in.at(dy)[map[i]];
    }
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
}

void gather_reference(OpCase& c, std::vector<uint64_t> src, uint64_t x_count) {
  const int32_t x = 0, y = 1, dy = 2, dx = 3;
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    std::vector<T> yv(src.size()), dxv(x_count, T(0));
    for (size_t i = 0; i < src.size(); ++i) {
      yv[i] = in.at(x)[src[i]];
      dxv[src[i]] = dxv[src[i]] + in.at(dy)[i];
    }
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
}

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
  if (!s.opencl_scratch_bytes.empty()) c.backend_env = {{"CLTRAIN_OPENCL_SCRATCH_BYTES", s.opencl_scratch_bytes}};
  return c;
}

}  // namespace optest
}  // namespace cltrain
