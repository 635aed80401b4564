// RESHAPE: the same elements under another shape; both directions are a copy.
#include <cstring>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

std::string check_copy(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "input"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "output");
}

std::string run_copy(const StepView& s, const cltrain_run_args&) {
  if (s.out[0].data != s.in[0].data) std::memmove(s.out[0].data, s.in[0].data, s.in[0].elements * sizeof(float));
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_RESHAPE = {{{check_copy, run_copy}, {check_copy, run_copy}, {}}};

}  // namespace cpu
}  // namespace cltrain
