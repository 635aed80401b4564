// HARD_SWISH: y = x * relu6(x + 3) / 6, element-wise (MobileNetV3's activation). Its backward
// reads x, not y.
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

void check(OperandCheck& c) {
  c.require_float(0);
  c.same_shape();
}

void backward(StepBuilder& s) {
  s.in = {s.input(0), s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

// dx may take dy's bytes; y never takes x's (the backward reads x).
InPlacePair in_place(const cltrain_step_desc& step) {
  return step.phase == CLTRAIN_PHASE_BACKWARD ? InPlacePair{0, 1, true} : InPlacePair{};
}

// Forward: an add, two compares, a multiply and a divide per element; backward: two compares,
// an add, a multiply, a divide and a multiply.
uint64_t flops(const StepTensors& s) { return s.elements(s.out(0)) * (s.forward() ? 5 : 6); }

}  // namespace

const OpDescriptor kOpDesc_HARD_SWISH = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_HARD_SWISH);
  d.check = check;
  d.backward = backward;
  d.in_place = in_place;
  d.flops = flops;
  return d;
}();

}  // namespace cltrain
