#include "ops/common.h"

#include "graph/labels.h"
#include "window_geometry.h"

namespace cltrain {

using graph::shape_str;

void check_convolution(OperandCheck& c, bool depthwise) {
  c.require_float(0);
  c.require_float(1);
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  c.require_rank4(x, "input", "[N,H,W,C]");
  c.require_rank4(w, "weights", depthwise ? "[1,KH,KW,C*M]" : "[O,KH,KW,I]");
  const int64_t channels = x.shape[3];
  int64_t out_channels;
  if (depthwise) {
    if (w.shape[0] != 1 || channels < 1 || w.shape[3] % channels != 0)
      c.bad("weights shape " + shape_str(w.shape) + " is not [1,KH,KW,C*M] for input " + shape_str(x.shape));
    const int32_t m = static_cast<int32_t>(w.shape[3] / channels);
    if (c.op.params.depth_multiplier != 0 && c.op.params.depth_multiplier != m)
      c.bad("depth multiplier " + std::to_string(c.op.params.depth_multiplier) + " does not match weights " +
            shape_str(w.shape) + " for input " + shape_str(x.shape));
    c.op.params.depth_multiplier = m;
    out_channels = w.shape[3];
  } else {
    if (w.shape[3] != channels)
      c.bad("weights shape " + shape_str(w.shape) + " does not fit input " + shape_str(x.shape) +
            " (weights are [O,KH,KW,I] with I the input's channels)");
    out_channels = w.shape[0];
  }
  if (c.has_input(2)) {
    c.require_float(2);
    const Tensor& b = c.in(2);
    if (b.shape.size() != 1 || b.shape[0] != out_channels)
      c.bad("bias shape " + shape_str(b.shape) + " is not [" + std::to_string(out_channels) + "]");
  }
  const int64_t oh = c.window(1, w.shape[1], c.op.params.stride_h, c.op.params.dilation_h);
  const int64_t ow = c.window(2, w.shape[2], c.op.params.stride_w, c.op.params.dilation_w);
  c.expect_output({x.shape[0], oh, ow, out_channels});
}

void check_pool(OperandCheck& c) {
  c.require_float(0);
  const Tensor& x = c.in(0);
  c.require_rank4(x, "input", "[N,H,W,C]");
  // A window wider than 2 * extent - 1 covers the whole input from every position, as one of
  // 2 * extent - 1 does; larger filters only cost time (2^31 took minutes per step).
  for (int axis : {1, 2}) {
    const int64_t f = axis == 1 ? c.op.params.filter_h : c.op.params.filter_w;
    if (f > 2 * x.shape[axis] - 1)
      c.bad(std::string("pool filter ") + (axis == 1 ? "height " : "width ") + std::to_string(f) +
            " exceeds 2 * input " + (axis == 1 ? "height" : "width") +
            " - 1 = " + std::to_string(2 * x.shape[axis] - 1));
  }
  const int64_t oh = c.window(1, c.op.params.filter_h, c.op.params.stride_h, 1);
  const int64_t ow = c.window(2, c.op.params.filter_w, c.op.params.stride_w, 1);
  c.expect_output({x.shape[0], oh, ow, x.shape[3]});
}

namespace {

// (output position, filter tap) pairs of one axis whose input position lies inside the input.
uint64_t inside_pairs(int32_t padding, int64_t in, int64_t filter, int64_t stride, int64_t dilation) {
  AxisGeometry g;
  if (!axis_geometry(padding, in, filter, stride, dilation, "axis", &g).empty()) return 0;
  uint64_t pairs = 0;
  for (int64_t o = 0; o < g.out; ++o)
    for (int64_t k = 0; k < filter; ++k) {
      const int64_t i = o * stride - g.pad_before + k * dilation;
      if (i >= 0 && i < in) ++pairs;
    }
  return pairs;
}

// Inside (output position, tap) pairs of a window over x [N,H,W,C], per batch image and channel.
uint64_t window_pairs(const StepTensors& s, int32_t x, int64_t filter_h, int64_t filter_w, int64_t dilation_h,
                      int64_t dilation_w) {
  const cltrain_op_params& p = s.step.params;
  return inside_pairs(p.padding, s.dim(x, 1), filter_h, p.stride_h, dilation_h) *
         inside_pairs(p.padding, s.dim(x, 2), filter_w, p.stride_w, dilation_w);
}

}  // namespace

uint64_t convolution_flops(const StepTensors& s, bool depthwise) {
  const int32_t w = s.in(1);
  const int32_t x = s.in(0) >= 0 ? s.in(0) : s.out(0);  // backward: x may be absent, dx then is not
  const int32_t y = s.forward() ? s.out(0) : s.in(3);
  const cltrain_op_params& p = s.step.params;
  const int64_t dil_h = p.dilation_h > 0 ? p.dilation_h : 1, dil_w = p.dilation_w > 0 ? p.dilation_w : 1;
  const uint64_t pairs = window_pairs(s, x, s.dim(w, 1), s.dim(w, 2), dil_h, dil_w);
  const uint64_t out_channels = static_cast<uint64_t>(depthwise ? s.dim(w, 3) : s.dim(w, 0));
  const uint64_t per_tap = depthwise ? 1 : static_cast<uint64_t>(s.dim(w, 3));  // input channels summed
  const uint64_t macs = static_cast<uint64_t>(s.dim(x, 0)) * out_channels * per_tap * pairs;
  const uint64_t ys = s.elements(y);
  if (s.forward()) return 2 * macs + (s.in(2) >= 0 ? ys : 0) + activation_forward_flops(p.activation) * ys;
  uint64_t f = s.in(2) >= 0 ? activation_backward_flops(p.activation) * ys : 0;
  if (s.out(0) >= 0) f += 2 * macs + activation_backward_flops(p.dx_activation) * s.elements(s.out(0));
  if (s.out(1) >= 0) f += 2 * macs;
  if (s.out(2) >= 0) f += ys;
  return f;
}

// Average: one add per inside tap and one divide per output; backward one divide per output and
// one add per inside tap. Max: one comparison per inside tap; backward one add per output.
uint64_t pool_flops(const StepTensors& s, bool average) {
  const cltrain_op_params& p = s.step.params;
  const int32_t x = s.forward() ? s.in(0) : s.out(0);
  const int32_t y = s.forward() ? s.out(0) : (average ? s.in(0) : s.in(1));
  const uint64_t taps =
      static_cast<uint64_t>(s.dim(x, 0) * s.dim(x, 3)) * window_pairs(s, x, p.filter_h, p.filter_w, 1, 1);
  const uint64_t ys = s.elements(y);
  if (s.forward()) return taps + (average ? ys : 0) + activation_forward_flops(p.activation) * ys;
  // The producer's activation derivative (dx_activation) is taken once per window.
  return (average ? taps + ys : ys) + activation_backward_flops(p.activation) * ys +
         activation_backward_flops(p.dx_activation) * ys;
}

uint64_t weighted_flops(const StepTensors& s, uint64_t macs, uint64_t ys) {
  const int32_t act = s.step.params.activation;
  if (s.forward()) return 2 * macs + (s.in(2) >= 0 ? ys : 0) + activation_forward_flops(act) * ys;
  uint64_t f = s.in(2) >= 0 ? activation_backward_flops(act) * ys : 0;
  if (s.out(0) >= 0) f += 2 * macs;
  if (s.out(1) >= 0) f += 2 * macs;
  if (s.out(2) >= 0) f += ys;
  return f;
}

void weighted_backward(StepBuilder& s, bool applies_dx_activation) {
  const int32_t x = s.input(0), w = s.input(1), b = s.input(2);
  const int32_t dx = s.grad_of(x), dw = s.grad_of(w), db = s.grad_of(b);
  // The producer's activation derivative, applied to dx where x dies (dx may take its bytes).
  if (applies_dx_activation && dx >= 0) s.params.dx_activation = s.producer_activation(x);
  const bool read_x = dw >= 0 || s.params.dx_activation != CLTRAIN_ACT_NONE;
  s.in = {read_x ? x : -1, w, s.y_if_activation(), s.dy()};  // W is persistent: passing it costs nothing
  s.out = {dx, dw, db};
}

InPlacePair convolution_in_place(const cltrain_step_desc& step) {
  if (step.phase == CLTRAIN_PHASE_BACKWARD && step.params.dx_activation != CLTRAIN_ACT_NONE) return {0, 0, true};
  return {};
}

}  // namespace cltrain
