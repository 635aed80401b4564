// The activations whose backward reads x: HARD_SWISH (kernels/hard_swish.cl) and GELU
// (kernels/gelu.cl, its form a definition), one work-item per element: forward in [x] out [y],
// backward in [x, dy] out [dx].
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

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
  const bool gelu = s.step.op == CLTRAIN_OP_GELU;
  const std::string name = gelu ? "gelu" : "hard_swish";
  Defines d;
  d.set("COUNT", count);
  if (gelu) d.set("APPROXIMATE", s.step.params.approximate ? 1 : 0);
  Kernel k;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    k = c.kernel(name + ".cl", d, (name + "_forward").c_str());
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)));
  } else {
    k = c.kernel(name + ".cl", d, (name + "_backward").c_str());
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.out(0)));
  }
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_HARD_SWISH = {check, prepare};
const OpFamily kOp_GELU = {check, prepare};

}  // namespace cltrain::ocl
