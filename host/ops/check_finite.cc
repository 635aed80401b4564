// CHECK_FINITE: flag = 1 where any input element is NaN or Inf, the check the training graph makes
// of the loss and the gradients before it applies a step's updates.
#include "ops/op_descriptor.h"

namespace cltrain {

const OpDescriptor kOpDesc_CHECK_FINITE = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_CHECK_FINITE);
  d.flops = [](const StepTensors& s) {
    uint64_t n = 0;
    for (int i = 0; i < s.step.num_inputs; ++i) n += s.elements(s.in(i));
    return n;
  };
  return d;
}();

}  // namespace cltrain
