// LOSS_MSE, LOSS_CCE and LOSS_CCE_LOGITS: steps the training graph adds (forward: the loss, backward: the
// gradient of the prediction).
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

// Per element MSE 3 forward (and one divide per sample) and CCE 5; backward 4, or 3 with SUM.
uint64_t loss_flops(const StepTensors& s, uint64_t forward_cost, bool mse) {
  const uint64_t n = s.elements(s.in(0));
  const bool over_batch = s.step.params.reduction == CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE;
  if (s.forward()) {
    const uint64_t samples = mse ? static_cast<uint64_t>(s.dim(s.in(0), 0)) : 0;  // q / K per sample
    return forward_cost * n + samples + (over_batch ? 1 : 0);
  }
  return (over_batch ? 4 : 3) * n;
}

}  // namespace

const OpDescriptor kOpDesc_LOSS_MSE = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_LOSS_MSE);
  d.flops = [](const StepTensors& s) { return loss_flops(s, 3, true); };
  return d;
}();

const OpDescriptor kOpDesc_LOSS_CCE = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_LOSS_CCE);
  d.flops = [](const StepTensors& s) { return loss_flops(s, 5, false); };
  return d;
}();

// From logits: a softmax's max, exp and sum (about 20 an element) before CCE's 5 each way.
const OpDescriptor kOpDesc_LOSS_CCE_LOGITS = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_LOSS_CCE_LOGITS);
  d.flops = [](const StepTensors& s) {
    return loss_flops(s, 25, false) + (s.forward() ? 0 : 20 * s.elements(s.in(0)));
  };
  return d;
}();

}  // namespace cltrain
