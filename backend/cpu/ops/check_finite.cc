// CHECK_FINITE (backward phase): flag = 1 where any element of any input is NaN or Inf; flag is
// read and written.
#include <cstring>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

std::string check_backward(const StepView& s) {
  if (s.step->num_inputs < 1 || s.step->num_outputs != 1) return "takes 1 to 8 inputs and one flag";
  for (int i = 0; i < s.step->num_inputs; ++i)
    if (std::string e = require(s.in[i], "x"); !e.empty()) return e;
  return require_elements(s.out[0], 1, "flag");
}

// By the bits (exponent all ones), as the kernels test it: no compiler option can fold it away.
bool finite(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return (u & 0x7f800000u) != 0x7f800000u;
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  for (int i = 0; i < s.step->num_inputs; ++i) {
    const float* x = s.in[i].data;
    for (uint64_t k = 0; k < s.in[i].elements; ++k)
      if (!finite(x[k])) {
        s.out[0].data[0] = 1.0f;
        return {};
      }
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_CHECK_FINITE = {{{}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
