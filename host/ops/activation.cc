// RELU, RELU6, TANH, LOGISTIC: element-wise, forward in [x] out [y], backward from y.
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

void check(OperandCheck& c) {
  c.require_float(0);
  c.same_shape();
}

// The derivative comes from y: the backward reads y and dy, never x.
void backward(StepBuilder& s) {
  s.in = {s.y(), s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

// y may take x's bytes, dx those of dy.
InPlacePair in_place(const cltrain_step_desc& step) {
  if (step.phase == CLTRAIN_PHASE_FORWARD) return {0, 0, true};
  if (step.phase == CLTRAIN_PHASE_BACKWARD) return {0, 1, true};
  return {};
}

template <uint64_t kForward, uint64_t kBackward>
uint64_t flops(const StepTensors& s) {
  return s.elements(s.out(0)) * (s.forward() ? kForward : kBackward);
}

OpDescriptor activation(int32_t op, uint64_t (*cost)(const StepTensors&)) {
  OpDescriptor d = descriptor_of(op);
  d.check = check;
  d.backward = backward;
  d.in_place = in_place;
  d.flops = cost;
  return d;
}

}  // namespace

const OpDescriptor kOpDesc_RELU = activation(CLTRAIN_OP_RELU, flops<1, 1>);
const OpDescriptor kOpDesc_RELU6 = activation(CLTRAIN_OP_RELU6, flops<2, 1>);
const OpDescriptor kOpDesc_TANH = activation(CLTRAIN_OP_TANH, flops<5, 3>);
const OpDescriptor kOpDesc_LOGISTIC = activation(CLTRAIN_OP_LOGISTIC, flops<3, 3>);

}  // namespace cltrain
