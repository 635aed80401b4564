// FILL (forward phase): every element of y is params.fill_value.
#include <algorithm>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 0, 1); !e.empty()) return e;
  return require(s.out[0], "y");
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  std::fill(s.out[0].data, s.out[0].data + s.out[0].elements, s.params().fill_value);
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_FILL = {{{check_forward, run_forward}, {}, {}}};

}  // namespace cpu
}  // namespace cltrain
