#include "ops/conv_shape.h"

#include <climits>

#include "memory_plan.h"
#include "ops/dims.h"
#include "window_geometry.h"

namespace cltrain::ocl {
namespace {

std::string make_axis(int32_t padding, int64_t in, int64_t filter, int64_t stride, int64_t dilation, const char* what,
                      ConvAxis* a) {
  AxisGeometry g;
  if (std::string e = axis_geometry(padding, in, filter, stride, dilation, what, &g); !e.empty()) return e;
  a->in = in, a->filter = filter, a->stride = stride, a->dilation = dilation;
  a->out = g.out;
  a->pad_before = g.pad_before;
  return {};
}

std::string require_rank4(const StepView& s, int32_t id, const char* role) {
  if (id < 0) return std::string("needs the ") + role + " tensor";
  const cltrain_tensor_desc& t = s.tensor(id);
  if (t.rank != 4) return std::string(role) + " " + dims_string(dims_of(t)) + " is not rank 4";
  for (int i = 0; i < 4; ++i)
    if (t.dims[i] < 1) return std::string(role) + " " + dims_string(dims_of(t)) + " has an empty dimension";
  return {};
}

// Filter shape: W [O,KH,KW,I] (conv) or [1,KH,KW,C*M] (depthwise, with the input's C).
std::string filter_shape(const StepView& s, ConvShape& sh, int64_t in_channels) {
  std::string why;
  if (!(why = require_rank4(s, sh.w_t, "weight")).empty()) return why;
  const cltrain_tensor_desc& w = s.tensor(sh.w_t);
  sh.h.filter = w.dims[1], sh.w.filter = w.dims[2];
  if (!sh.depthwise) {
    sh.out_ch = w.dims[0], sh.in_ch = w.dims[3];
    return {};
  }
  sh.out_ch = w.dims[3];
  if (w.dims[0] != 1) return "depthwise weight " + dims_string(dims_of(w)) + " is not [1,KH,KW,C*M]";
  if (in_channels <= 0) {  // db only: the multiplier does not matter
    sh.in_ch = sh.out_ch, sh.multiplier = 1;
    return {};
  }
  if (sh.out_ch % in_channels != 0)
    return "depthwise weight " + dims_string(dims_of(w)) + " does not have a multiple of the input's " +
           std::to_string(in_channels) + " channels";
  sh.in_ch = in_channels;
  sh.multiplier = sh.out_ch / in_channels;
  const int32_t m = s.step.params.depth_multiplier;
  if (m != 0 && m != sh.multiplier)
    return "depth multiplier " + std::to_string(m) + " does not match the weight " + dims_string(dims_of(w));
  return {};
}

// Geometry from the input (x or dx); checks the output-shaped tensor (y or dy).
std::string geometry(const StepView& s, ConvShape& sh, int32_t input, int32_t output) {
  std::string why;
  if (!(why = require_rank4(s, input, "input")).empty()) return why;
  const cltrain_tensor_desc& x = s.tensor(input);
  if (!(why = filter_shape(s, sh, x.dims[3])).empty()) return why;
  if (x.dims[3] != sh.in_ch)
    return "input " + dims_string(dims_of(x)) + " does not have the weight's " + std::to_string(sh.in_ch) + " channels";
  const cltrain_op_params& p = s.step.params;
  sh.n = x.dims[0];
  if (!(why = make_axis(p.padding, x.dims[1], sh.h.filter, p.stride_h, p.dilation_h, "height", &sh.h)).empty())
    return why;
  if (!(why = make_axis(p.padding, x.dims[2], sh.w.filter, p.stride_w, p.dilation_w, "width", &sh.w)).empty())
    return why;
  if (!(why = require_rank4(s, output, "output")).empty()) return why;
  const std::vector<uint64_t> want = {static_cast<uint64_t>(sh.n), static_cast<uint64_t>(sh.h.out),
                                      static_cast<uint64_t>(sh.w.out), static_cast<uint64_t>(sh.out_ch)};
  if (dims_of(s.tensor(output)) != want)
    return "output " + dims_string(dims_of(s.tensor(output))) + " should be " + dims_string(want) + " for input " +
           dims_string(dims_of(x));
  sh.has_geometry = true;
  return {};
}

}  // namespace

Defines ConvShape::defines() const {
  Defines d;
  d.set("N", n).set("H", h.in).set("W", w.in).set("IC", in_ch).set("OH", h.out).set("OW", w.out).set("OC", out_ch);
  d.set("KH", h.filter).set("KW", w.filter).set("SH", h.stride).set("SW", w.stride);
  d.set("DH", h.dilation).set("DW", w.dilation).set("PT", h.pad_before).set("PL", w.pad_before);
  if (depthwise) d.set("M", multiplier);
  return d;
}

std::string check_conv(const StepView& s, ConvShape& sh) {
  sh = ConvShape{};
  sh.depthwise = s.step.op == CLTRAIN_OP_DEPTHWISE_CONV_2D;
  sh.activation = s.step.params.activation;
  if (!activation_supported(sh.activation))
    return "fused activation " + std::to_string(sh.activation) + " is not supported";
  std::string why;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    sh.x = s.in(0), sh.w_t = s.in(1), sh.bias = s.in(2), sh.y = s.out(0);
    if (!(why = geometry(s, sh, sh.x, sh.y)).empty()) return why;
    if (sh.bias >= 0 && !(why = require_count(s, sh.bias, "bias", static_cast<uint64_t>(sh.out_ch))).empty())
      return why;
  } else if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    sh.x = s.in(0), sh.w_t = s.in(1), sh.y = s.in(2), sh.dy = s.in(3);
    sh.dx = s.out(0), sh.dw = s.out(1), sh.db = s.out(2);
    if (sh.dw >= 0 && sh.x < 0) return "needs the input tensor for the weight gradient";
    sh.dx_activation = s.step.params.dx_activation;
    if (sh.dx_activation != CLTRAIN_ACT_NONE) {
      if (!activation_supported(sh.dx_activation) || sh.dx_activation == CLTRAIN_ACT_NONE)
        return "dx_activation " + std::to_string(sh.dx_activation) + " is not supported";
      if (sh.x < 0 || sh.dx < 0) return "dx_activation needs the input and its gradient";
    }
    if (sh.x >= 0 && sh.dx >= 0 && dims_of(s.tensor(sh.x)) != dims_of(s.tensor(sh.dx)))
      return "input gradient " + dims_string(dims_of(s.tensor(sh.dx))) + " differs from the input " +
             dims_string(dims_of(s.tensor(sh.x)));
    const int32_t input = sh.x >= 0 ? sh.x : sh.dx;
    if (input >= 0) {
      if (!(why = geometry(s, sh, input, sh.dy)).empty()) return why;
    } else {
      if (!(why = filter_shape(s, sh, -1)).empty()) return why;
      if (!(why = require_rank4(s, sh.dy, "output gradient")).empty()) return why;
      if (s.tensor(sh.dy).dims[3] != sh.out_ch) return "output gradient does not have the weight's output channels";
      sh.n = s.tensor(sh.dy).dims[0];
      sh.h.out = s.tensor(sh.dy).dims[1], sh.w.out = s.tensor(sh.dy).dims[2];
    }
    if (sh.activation != CLTRAIN_ACT_NONE && !(why = require_count(s, sh.y, "output", s.count(sh.dy))).empty())
      return why;
    if (sh.dw >= 0 && !(why = require_count(s, sh.dw, "weight gradient", s.count(sh.w_t))).empty()) return why;
    if (sh.db >= 0 && !(why = require_count(s, sh.db, "bias gradient", static_cast<uint64_t>(sh.out_ch))).empty())
      return why;
  } else {
    return "has no " + phase_name(s.step.phase) + " step";
  }
  for (int32_t id : {sh.x, sh.y, sh.dy, sh.dx, sh.w_t})
    if (id >= 0 && s.count(id) > INT_MAX) return "is too large for 32-bit indexing";
  return {};
}

}  // namespace cltrain::ocl
