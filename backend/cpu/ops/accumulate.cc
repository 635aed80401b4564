// ACCUMULATE (backward phase): acc += a; acc is both read and written.
#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "a"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "acc");
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float* a = s.in[0].data;
  float* acc = s.out[0].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i) acc[i] += a[i];
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_ACCUMULATE = {{{}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
