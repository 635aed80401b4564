#include "flops.h"

#include "memory_plan.h"
#include "window_geometry.h"

namespace cltrain {
namespace {

struct StepTensors {
  const cltrain_step_desc& step;
  const std::vector<cltrain_tensor_desc>& tensors;

  int32_t in(int i) const { return i < step.num_inputs ? step.inputs[i] : -1; }
  int32_t out(int i) const { return i < step.num_outputs ? step.outputs[i] : -1; }
  bool valid(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < tensors.size(); }
  uint64_t elements(int32_t id) const { return valid(id) ? tensor_elements(tensors[static_cast<size_t>(id)]) : 0; }
  int64_t dim(int32_t id, int d) const {
    if (!valid(id)) return 0;
    const cltrain_tensor_desc& t = tensors[static_cast<size_t>(id)];
    return d < t.rank ? t.dims[d] : 0;
  }
  bool forward() const { return step.phase == CLTRAIN_PHASE_FORWARD; }
};

uint64_t activation_forward(int32_t act) {
  switch (act) {
    case CLTRAIN_ACT_RELU: return 1;
    case CLTRAIN_ACT_RELU_N1_TO_1:
    case CLTRAIN_ACT_RELU6: return 2;
    case CLTRAIN_ACT_TANH: return 5;
    default: return 0;
  }
}

uint64_t activation_backward(int32_t act) {
  switch (act) {
    case CLTRAIN_ACT_RELU:
    case CLTRAIN_ACT_RELU_N1_TO_1:
    case CLTRAIN_ACT_RELU6: return 1;
    case CLTRAIN_ACT_TANH: return 3;
    default: return 0;
  }
}

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

// CONV_2D and DEPTHWISE_CONV_2D: in [x, W, b] -> [y]; backward in [x, W, y, dy] -> [dx, dW, db].
uint64_t conv_flops(const StepTensors& s, bool depthwise) {
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
  if (s.forward())
    return 2 * macs + (s.in(2) >= 0 ? ys : 0) + activation_forward(p.activation) * ys;
  uint64_t f = s.in(2) >= 0 ? activation_backward(p.activation) * ys : 0;
  if (s.out(0) >= 0) f += 2 * macs + activation_backward(p.dx_activation) * s.elements(s.out(0));
  if (s.out(1) >= 0) f += 2 * macs;
  if (s.out(2) >= 0) f += ys;
  return f;
}

uint64_t pool_flops(const StepTensors& s, bool average) {
  const cltrain_op_params& p = s.step.params;
  const int32_t x = s.forward() ? s.in(0) : s.out(0);
  const int32_t y = s.forward() ? s.out(0) : (average ? s.in(0) : s.in(1));
  const uint64_t taps =
      static_cast<uint64_t>(s.dim(x, 0) * s.dim(x, 3)) * window_pairs(s, x, p.filter_h, p.filter_w, 1, 1);
  const uint64_t ys = s.elements(y);
  if (s.forward()) return taps + (average ? ys : 0) + activation_forward(p.activation) * ys;
  // The producer's activation derivative (dx_activation) is taken once per window.
  return (average ? taps + ys : ys) + activation_backward(p.activation) * ys +
         activation_backward(p.dx_activation) * ys;
}

// ADD, SUB, MUL, DIV: forward one op per element of y; backward per element of y and gradient
// asked for: add/sub 1, mul 2, div 2 (da) and 4 (db).
uint64_t arithmetic_flops(const StepTensors& s, uint64_t da_cost, uint64_t db_cost) {
  const int32_t act = s.step.params.activation;
  if (s.forward()) {
    const uint64_t ys = s.elements(s.out(0));
    return ys + activation_forward(act) * ys;
  }
  const uint64_t ys = s.elements(s.in(3));
  uint64_t f = s.in(2) >= 0 ? activation_backward(act) * ys : 0;
  if (s.out(0) >= 0) f += da_cost * ys;
  if (s.out(1) >= 0) f += db_cost * ys;
  return f;
}

// Element-wise ops: cost per element of their output.
uint64_t elementwise(const StepTensors& s, uint64_t forward_cost, uint64_t backward_cost) {
  return s.elements(s.out(0)) * (s.forward() ? forward_cost : backward_cost);
}

uint64_t loss_flops(const StepTensors& s, uint64_t forward_cost, bool mse) {
  const uint64_t n = s.elements(s.in(0));
  const bool over_batch = s.step.params.reduction == CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE;
  if (s.forward()) {
    const uint64_t samples = mse ? static_cast<uint64_t>(s.dim(s.in(0), 0)) : 0;  // q / K per sample
    return forward_cost * n + samples + (over_batch ? 1 : 0);
  }
  return (over_batch ? 4 : 3) * n;
}

uint64_t updated_elements(const StepTensors& s) {
  const int32_t count = s.step.params.update_count;
  return count > 0 ? static_cast<uint64_t>(count) : s.elements(s.out(0));
}

}  // namespace

uint64_t flops_of_step(const cltrain_step_desc& step, const std::vector<cltrain_tensor_desc>& tensors) {
  const StepTensors s{step, tensors};
  switch (static_cast<cltrain_op>(step.op)) {
    case CLTRAIN_OP_FULLY_CONNECTED: {
      const int32_t w = s.in(1);
      const uint64_t m = static_cast<uint64_t>(s.dim(w, 0)), k = static_cast<uint64_t>(s.dim(w, 1));
      const int32_t y = s.forward() ? s.out(0) : s.in(3);
      const uint64_t ys = s.elements(y), macs = ys * k;  // rows * M * K
      const int32_t act = step.params.activation;
      if (m == 0) return 0;
      if (s.forward()) return 2 * macs + (s.in(2) >= 0 ? ys : 0) + activation_forward(act) * ys;
      uint64_t f = s.in(2) >= 0 ? activation_backward(act) * ys : 0;
      if (s.out(0) >= 0) f += 2 * macs;
      if (s.out(1) >= 0) f += 2 * macs;
      if (s.out(2) >= 0) f += ys;
      return f;
    }
    case CLTRAIN_OP_CONV_2D: return conv_flops(s, false);
    case CLTRAIN_OP_DEPTHWISE_CONV_2D: return conv_flops(s, true);
    case CLTRAIN_OP_MAX_POOL_2D: return pool_flops(s, false);
    case CLTRAIN_OP_AVERAGE_POOL_2D: return pool_flops(s, true);
    case CLTRAIN_OP_MEAN:
      return s.forward() ? s.elements(s.in(0)) + s.elements(s.out(0)) : s.elements(s.out(0));
    case CLTRAIN_OP_RESHAPE:
    case CLTRAIN_OP_PAD:
    case CLTRAIN_OP_CONCATENATION: return 0;
    case CLTRAIN_OP_ADD:
    case CLTRAIN_OP_SUB: return arithmetic_flops(s, 1, 1);
    case CLTRAIN_OP_MUL: return arithmetic_flops(s, 2, 2);
    case CLTRAIN_OP_DIV: return arithmetic_flops(s, 2, 4);
    case CLTRAIN_OP_RELU: return elementwise(s, 1, 1);
    case CLTRAIN_OP_RELU6: return elementwise(s, 2, 1);
    case CLTRAIN_OP_TANH: return elementwise(s, 5, 3);
    case CLTRAIN_OP_LOGISTIC: return elementwise(s, 3, 3);
    case CLTRAIN_OP_SOFTMAX: return elementwise(s, 6, 5);
    case CLTRAIN_OP_LOSS_MSE: return loss_flops(s, 3, true);
    case CLTRAIN_OP_LOSS_CCE: return loss_flops(s, 5, false);
    case CLTRAIN_OP_ACCUMULATE: return s.elements(s.in(0));
    case CLTRAIN_OP_UPDATE_SGD: return 2 * updated_elements(s);
    case CLTRAIN_OP_UPDATE_ADAM: return 12 * updated_elements(s);
    case CLTRAIN_OP_COUNT: break;
  }
  return 0;
}

uint64_t flops_of_steps(const std::vector<cltrain_step_desc>& steps, const std::vector<cltrain_tensor_desc>& tensors,
                        size_t first, size_t end) {
  uint64_t total = 0;
  for (size_t i = first; i < end && i < steps.size(); ++i) total += flops_of_step(steps[i], tensors);
  return total;
}

}  // namespace cltrain
