// ACCUMULATE: acc += a, the step that sums a disposable back-prop contribution into its tensor.
#include "ops/op_descriptor.h"

namespace cltrain {

const OpDescriptor kOpDesc_ACCUMULATE = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_ACCUMULATE);
  d.half_storage = true;
  d.flops = [](const StepTensors& s) { return s.elements(s.in(0)); };
  return d;
}();

}  // namespace cltrain

namespace cltrain {

// ACCUMULATE_BOX: acc's box (SLICE's cuts in params) += a; the backward of a SLICE whose x already
// has a gradient (training_graph.cc).
const OpDescriptor kOpDesc_ACCUMULATE_BOX = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_ACCUMULATE_BOX);
  d.flops = [](const StepTensors& s) { return s.elements(s.in(0)); };
  return d;
}();

}  // namespace cltrain

namespace cltrain {

// ACCUMULATE_FC_GRADS: dW += dz^T x, db += column sums of dz; the weight gradients of a
// FULLY_CONNECTED whose weight already has one (training_graph.cc).
const OpDescriptor kOpDesc_ACCUMULATE_FC_GRADS = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_ACCUMULATE_FC_GRADS);
  d.half_storage = true;
  d.flops = [](const StepTensors& s) {
    const uint64_t dz = s.elements(s.in(1));
    uint64_t f = 0;
    if (s.out(0) >= 0) f += 2 * dz * static_cast<uint64_t>(s.dim(s.out(0), 1)) + s.elements(s.out(0));
    if (s.out(1) >= 0) f += dz + s.elements(s.out(1));
    return f;
  };
  return d;
}();

}  // namespace cltrain
