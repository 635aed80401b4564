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
