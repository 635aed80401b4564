// RESHAPE: a copy within the pool (forward y = x, backward dx = dy), nothing at all where the host
// made the two share their bytes (tensor_desc.alias).
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

std::string check(const StepView& s) {
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return require_same_count(s, "input", "output");
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) return require_same_count(s, "output gradient", "input gradient");
  return "has no " + phase_name(s.step.phase) + " step";
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const int32_t src = s.in(0), dst = s.out(0);
  // The host gives float16 storage to both or neither (an op's tensors pass through unrounded).
  if (c.half(src) != c.half(dst)) fail(CLTRAIN_INVALID, s.what() + ": input and output differ in storage");
  const size_t elem = c.half(src) ? 2 : 4;
  const size_t src_off = static_cast<size_t>(c.offset(src)) * elem;
  const size_t dst_off = static_cast<size_t>(c.offset(dst)) * elem;
  const size_t bytes = s.count(src) * elem;
  const cl_mem pool = c.pool();
  const std::string what = s.what();
  return [pool, src_off, dst_off, bytes, what](const Queue& q, const cltrain_run_args*) {
    if (bytes != 0 && src_off != dst_off) q.copy(pool, src_off, dst_off, bytes, what);
  };
}

}  // namespace

const OpFamily kOp_RESHAPE = {check, prepare, nullptr, true};

}  // namespace cltrain::ocl
