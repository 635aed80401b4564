// Steps that move or add whole tensors: RESHAPE (a buffer copy; forward y = x, backward dx = dy)
// and ACCUMULATE (kernels/elementwise.cl: acc += a).
#include "launch.h"
#include "ops/ops.h"

namespace cltrain::ocl {
namespace {

std::string check_same_count(const StepView& s, const char* in_role, const char* out_role) {
  std::string why;
  if (!(why = require_tensor(s, s.in(0), in_role)).empty()) return why;
  return require_count(s, s.out(0), out_role, s.count(s.in(0)));
}

std::string check_reshape(const StepView& s) {
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return check_same_count(s, "input", "output");
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) return check_same_count(s, "output gradient", "input gradient");
  return "has no " + phase_name(s.step.phase) + " step";
}

StepRun prepare_reshape(Backend& b, const StepView& s) {
  const int32_t src = s.in(0), dst = s.out(0);
  const size_t src_off = static_cast<size_t>(elem_offset(b, src)) * 4;
  const size_t dst_off = static_cast<size_t>(elem_offset(b, dst)) * 4;
  const size_t bytes = s.count(src) * 4;
  const std::string what = s.what();
  return [&b, src_off, dst_off, bytes, what](const cltrain_run_args*) {
    if (bytes == 0 || src_off == dst_off) return;
    CLT_CALL(clEnqueueCopyBuffer, (b.queue, b.pool, b.pool, src_off, dst_off, bytes, 0, nullptr, nullptr), what);
  };
}

std::string check_accumulate(const StepView& s) {
  if (s.step.phase != CLTRAIN_PHASE_BACKWARD) return "has no " + phase_name(s.step.phase) + " step";
  return check_same_count(s, "addend", "accumulator");
}

StepRun prepare_accumulate(Backend& b, const StepView& s) {
  const uint64_t count = s.count(s.in(0));
  Defines d;
  d.set("COUNT", count);
  Kernel k = make_kernel(b, "elementwise.cl", d, "accumulate");
  set_args(k, b.pool, elem_offset(b, s.in(0)), elem_offset(b, s.out(0)));
  return [&b, k, count](const cltrain_run_args*) { launch_1d(b, k, count); };
}

}  // namespace

const OpFamily kOp_RESHAPE = {check_reshape, prepare_reshape};
const OpFamily kOp_ACCUMULATE = {check_accumulate, prepare_accumulate};

}  // namespace cltrain::ocl
