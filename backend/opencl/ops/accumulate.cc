// ACCUMULATE: acc += a (kernels/accumulate.cl), one work-item per element.
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

std::string check(const StepView& s) {
  if (s.step.phase != CLTRAIN_PHASE_BACKWARD) return "has no " + phase_name(s.step.phase) + " step";
  return require_same_count(s, "addend", "accumulator");
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const uint64_t count = s.count(s.in(0));
  Defines d;
  c.storage(c.storage(d, "A_H", s.in(0)), "Y_H", s.out(0));
  Kernel k = c.kernel("accumulate.cl", d, "accumulate");
  set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)), static_cast<cl_uint>(count));
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_ACCUMULATE = {check, prepare, nullptr, true};

}  // namespace cltrain::ocl
