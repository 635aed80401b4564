#include "flops.h"

#include "ops/op_descriptor.h"

namespace cltrain {

uint64_t flops_of_step(const cltrain_step_desc& step, const std::vector<cltrain_tensor_desc>& tensors) {
  const OpDescriptor* d = find_op(step.op);
  return d && d->flops ? d->flops(StepTensors{step, tensors}) : 0;
}

uint64_t flops_of_steps(const std::vector<cltrain_step_desc>& steps, const std::vector<cltrain_tensor_desc>& tensors,
                        size_t first, size_t end) {
  uint64_t total = 0;
  for (size_t i = first; i < end && i < steps.size(); ++i) total += flops_of_step(steps[i], tensors);
  return total;
}

}  // namespace cltrain
