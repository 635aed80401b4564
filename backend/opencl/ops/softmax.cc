// Softmax over the last dimension with params.beta: softmax_forward, softmax_backward
// (kernels/softmax.cl), one work-item per row; LOG_SOFTMAX likewise (log_softmax_*).
#include <cmath>

#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "softmax.cl";

std::string check_softmax(const StepView& s) {
  std::string why;
  const int32_t first = s.in(0);  // x forward, y backward
  if (!(why = require_tensor(s, first, s.step.phase == CLTRAIN_PHASE_FORWARD ? "input" : "output")).empty()) return why;
  const cltrain_tensor_desc& t = s.tensor(first);
  if (t.rank < 1 || t.dims[t.rank - 1] <= 0) return "needs a non-empty last dimension";
  if (!std::isfinite(s.step.params.beta)) return "beta is not finite";
  const uint64_t n = s.count(first);
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return require_count(s, s.out(0), "output", n);
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    if (!(why = require_count(s, s.in(1), "output gradient", n)).empty()) return why;
    return require_count(s, s.out(0), "input gradient", n);
  }
  return "has no " + phase_name(s.step.phase) + " step";
}

StepRun prepare_softmax(const OpContext& c) {
  const StepView& s = c.s;
  const cltrain_tensor_desc& t = s.tensor(s.in(0));
  const uint64_t cols = static_cast<uint64_t>(t.dims[t.rank - 1]);
  const uint64_t rows = s.count(s.in(0)) / cols;
  Defines d;
  d.set("ROWS", rows).set("COLS", cols).set_float("BETA", s.step.params.beta);
  const std::string name = s.step.op == CLTRAIN_OP_LOG_SOFTMAX ? "log_softmax" : "softmax";
  Kernel k;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    k = c.kernel(kFamily, d, (name + "_forward").c_str());
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)));
  } else {
    k = c.kernel(kFamily, d, (name + "_backward").c_str());
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.out(0)));
  }
  return [k, rows](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, rows); };
}

}  // namespace

const OpFamily kOp_SOFTMAX = {check_softmax, prepare_softmax};
const OpFamily kOp_LOG_SOFTMAX = {check_softmax, prepare_softmax};

}  // namespace cltrain::ocl
