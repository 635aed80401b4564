// FILL: y = params.fill_value everywhere (kernels/fill.cl), one work-item per element.
#include <cstring>

#include "ops/op.h"

namespace cltrain::ocl {
namespace {

std::string check(const StepView& s) {
  if (s.step.phase != CLTRAIN_PHASE_FORWARD) return "has no " + phase_name(s.step.phase) + " step";
  if (s.step.num_inputs != 0 || s.step.num_outputs != 1 || s.out(0) < 0) return "needs no input and one output";
  if (s.count(s.out(0)) > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const uint64_t count = s.count(s.out(0));
  uint32_t bits;
  std::memcpy(&bits, &s.step.params.fill_value, 4);
  Defines d;
  d.set("VALUE_BITS", static_cast<long long>(bits));
  Kernel k = c.kernel("fill.cl", d, "fill_forward");
  set_args(k, c.pool(), c.offset(s.out(0)), static_cast<cl_uint>(count));
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_FILL = {check, prepare};

}  // namespace cltrain::ocl
