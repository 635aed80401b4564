// Losses (kernels/loss.cl): loss_forward sums the whole batch in one work-item, in increasing
// index, into the one-element loss; loss_backward writes dpred elementwise. LOSS_CCE_LOGITS:
// loss_logits_forward likewise, loss_logits_backward one work-item per row of logits. Conventions and
// rounding orders as cltrain_backend.h: CCE clamps pred to [1e-7, 1 - 1e-7]; SUM_OVER_BATCH_SIZE
// divides by N = dims[0] of pred.
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "loss.cl";

std::string check_loss(const StepView& s) {
  std::string why;
  const int32_t pred = s.in(0), expected = s.in(1);
  if (!(why = require_tensor(s, pred, "prediction")).empty()) return why;
  const uint64_t n = s.count(pred);
  if (n == 0) return "prediction is empty";
  if (!(why = require_count(s, expected, "expected", n)).empty()) return why;
  const int red = s.step.params.reduction;
  if (red != CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE && red != CLTRAIN_REDUCTION_SUM)
    return "reduction " + std::to_string(red) + " is not supported";
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return require_count(s, s.out(0), "loss", 1);
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) return require_count(s, s.out(0), "prediction gradient", n);
  return "has no " + phase_name(s.step.phase) + " step";
}

StepRun prepare_loss(const OpContext& c) {
  const StepView& s = c.s;
  const int32_t pred = s.in(0), expected = s.in(1), out = s.out(0);
  const cltrain_tensor_desc& p = s.tensor(pred);
  const uint64_t count = s.count(pred);
  const uint64_t batch = p.rank > 0 && p.dims[0] > 0 ? static_cast<uint64_t>(p.dims[0]) : 1;
  const bool mse = s.step.op == CLTRAIN_OP_LOSS_MSE, logits = s.step.op == CLTRAIN_OP_LOSS_CCE_LOGITS;
  const uint64_t classes = p.rank > 0 && p.dims[p.rank - 1] > 0 ? static_cast<uint64_t>(p.dims[p.rank - 1]) : 1;
  Defines d;
  d.set("COUNT", count).set("N", batch).set("K", count / batch).set("C", classes).set("ROWS", count / classes);
  d.set(mse ? "LOSS_MSE" : "LOSS_CCE", 1).set(mse ? "LOSS_CCE" : "LOSS_MSE", 0);
  d.set("DIV_N", s.step.params.reduction == CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE);
  const bool forward = s.step.phase == CLTRAIN_PHASE_FORWARD;
  const std::string name = std::string(logits ? "loss_logits_" : "loss_") + (forward ? "forward" : "backward");
  Kernel k = c.kernel(kFamily, d, name.c_str());
  set_args(k, c.pool(), c.offset(pred), c.offset(expected), c.offset(out));
  const uint64_t items = forward ? 1 : logits ? count / classes : count;
  return [k, items](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, items); };
}

}  // namespace

const OpFamily kOp_LOSS_MSE = {check_loss, prepare_loss};
const OpFamily kOp_LOSS_CCE = {check_loss, prepare_loss};
const OpFamily kOp_LOSS_CCE_LOGITS = {check_loss, prepare_loss};

}  // namespace cltrain::ocl
