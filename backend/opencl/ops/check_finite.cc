// CHECK_FINITE: flag = 1 where any element of the inputs is NaN or Inf (kernels/check_finite.cl),
// one launch over the inputs laid end to end.
#include <string>

#include "ops/op.h"

namespace cltrain::ocl {
namespace {

std::string check(const StepView& s) {
  if (s.step.phase != CLTRAIN_PHASE_BACKWARD) return "has no " + phase_name(s.step.phase) + " step";
  if (s.step.num_inputs < 1 || s.step.num_outputs != 1 || s.out(0) < 0) return "takes 1 to 8 inputs and one flag";
  uint64_t total = 0;
  for (int i = 0; i < s.step.num_inputs; ++i) {
    if (s.in(i) < 0) return "has an absent input";
    total += s.count(s.in(i));
  }
  if (total > UINT32_MAX) return "is too large for 32-bit indexing";
  if (s.count(s.out(0)) != 1) return "needs a flag of one element";
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  Defines d;
  uint64_t end = 0;
  cl_uint off[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  cl_uint8 ends{};
  for (int i = 0; i < s.step.num_inputs; ++i) {
    end += s.count(s.in(i));
    ends.s[i] = static_cast<cl_uint>(end);
    off[i] = c.offset(s.in(i));
  }
  d.set("N_IN", s.step.num_inputs);
  Kernel k = c.kernel("check_finite.cl", d, "check_finite");
  set_args(k, c.pool(), c.offset(s.out(0)), off[0], off[1], off[2], off[3], off[4], off[5], off[6], off[7], ends,
           static_cast<cl_uint>(end));
  return [k, end](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, end); };
}

}  // namespace

const OpFamily kOp_CHECK_FINITE = {check, prepare};

}  // namespace cltrain::ocl
