// UPDATE_SGD and UPDATE_ADAM: the optimizer updates the training graph places after the step
// that completes each gradient.
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

uint64_t updated_elements(const StepTensors& s) {
  const int32_t count = s.step.params.update_count;
  return count > 0 ? static_cast<uint64_t>(count) : s.elements(s.out(0));
}

}  // namespace

const OpDescriptor kOpDesc_UPDATE_SGD = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_UPDATE_SGD);
  d.flops = [](const StepTensors& s) { return 2 * updated_elements(s); };
  return d;
}();

const OpDescriptor kOpDesc_UPDATE_ADAM = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_UPDATE_ADAM);
  d.flops = [](const StepTensors& s) { return 12 * updated_elements(s); };
  return d;
}();

// Adam whose v takes GATHER's sum of squared rows (an embedding table) in place of g * g.
const OpDescriptor kOpDesc_UPDATE_ADAM_SQUARES = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_UPDATE_ADAM_SQUARES);
  d.flops = [](const StepTensors& s) { return 11 * updated_elements(s); };
  return d;
}();

}  // namespace cltrain
