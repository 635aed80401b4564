// HARD_SWISH: forward in [x] out [y], y = x * relu6(x + 3) / 6; backward in [x, dy] out [dx], in
// the rounding order of cltrain_ops.h (dx may share dy's bytes: each element reads its own first).
#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "x"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "y");
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "x"); !e.empty()) return e;
  if (std::string e = require_elements(s.in[1], s.in[0].elements, "dy"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "dx");
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i) {
    const float t = x[i] + 3.0f;
    const float u = t < 0.0f ? 0.0f : t;
    const float r = u > 6.0f ? 6.0f : u;
    y[i] = (x[i] * r) / 6.0f;
  }
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  const float* dy = s.in[1].data;
  float* dx = s.out[0].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i) {
    const float v = x[i], d = dy[i];
    dx[i] = (v > -3.0f && v < 3.0f) ? d * ((2.0f * v + 3.0f) / 6.0f) : (v >= 3.0f ? d : 0.0f);
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_HARD_SWISH = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
