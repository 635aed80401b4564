// HARD_SWISH (kernels/hard_swish.cl), one work-item per element: forward in [x] out [y], backward
// in [x, dy] out [dx].
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "hard_swish.cl";

std::string check(const StepView& s) {
  std::string why;
  if (!(why = require_tensor(s, s.in(0), "input")).empty()) return why;
  const uint64_t n = s.count(s.in(0));
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return require_count(s, s.out(0), "output", n);
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    if (!(why = require_count(s, s.in(1), "output gradient", n)).empty()) return why;
    return require_count(s, s.out(0), "input gradient", n);
  }
  return "has no " + phase_name(s.step.phase) + " step";
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const uint64_t count = s.count(s.in(0));
  Defines d;
  d.set("COUNT", count);
  Kernel k;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    k = c.kernel(kFamily, d, "hard_swish_forward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)));
  } else {
    k = c.kernel(kFamily, d, "hard_swish_backward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.out(0)));
  }
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_HARD_SWISH = {check, prepare};

}  // namespace cltrain::ocl
