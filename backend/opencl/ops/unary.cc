// NEG and RSQRT (kernels/unary.cl), one work-item per element: forward in [x] out [y]; backward
// in [dy] out [dx] (NEG) or in [y, dy] out [dx] (RSQRT).
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "unary.cl";

std::string check(const StepView& s) {
  std::string why;
  if (!(why = require_tensor(s, s.in(0), "input")).empty()) return why;
  const uint64_t n = s.count(s.in(0));
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return require_count(s, s.out(0), "output", n);
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    if (s.step.op == CLTRAIN_OP_RSQRT && !(why = require_count(s, s.in(1), "output gradient", n)).empty()) return why;
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
    k = c.kernel(kFamily, d, s.step.op == CLTRAIN_OP_NEG ? "neg_forward" : "rsqrt_forward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)));
  } else if (s.step.op == CLTRAIN_OP_NEG) {
    k = c.kernel(kFamily, d, "neg_backward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)));
  } else {
    k = c.kernel(kFamily, d, "rsqrt_backward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.out(0)));
  }
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_NEG = {check, prepare};
const OpFamily kOp_RSQRT = {check, prepare};

}  // namespace cltrain::ocl
