// NEG: forward in [x] out [y], y = -x; backward in [dy] out [dx], dx = -dy.
// RSQRT: forward in [x] out [y], y = 1 / sqrt(x); backward in [y, dy] out [dx],
// dx = (-0.5 dy) ((y y) y). dx may share dy's bytes: each element reads its own first.
#include "cpu_op.h"
#include "numerics.h"

namespace cltrain {
namespace cpu {
namespace {

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "x"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "y");
}

template <int kInputs>
std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, kInputs, 1); !e.empty()) return e;
  for (int k = 0; k < kInputs; ++k)
    if (std::string e = require_elements(s.in[k], s.in[0].elements, k + 1 == kInputs ? "dy" : "y"); !e.empty())
      return e;
  return require_elements(s.out[0], s.in[0].elements, "dx");
}

std::string neg_forward(const StepView& s, const cltrain_run_args&) {
  for (uint64_t i = 0; i < s.in[0].elements; ++i) s.out[0].data[i] = -s.in[0].data[i];
  return {};
}

std::string neg_backward(const StepView& s, const cltrain_run_args&) {
  for (uint64_t i = 0; i < s.in[0].elements; ++i) s.out[0].data[i] = -s.in[0].data[i];
  return {};
}

std::string rsqrt_forward(const StepView& s, const cltrain_run_args&) {
  for (uint64_t i = 0; i < s.in[0].elements; ++i) s.out[0].data[i] = 1.0f / clt_sqrt(s.in[0].data[i]);
  return {};
}

std::string rsqrt_backward(const StepView& s, const cltrain_run_args&) {
  const float* y = s.in[0].data;
  const float* dy = s.in[1].data;
  float* dx = s.out[0].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i) {
    const float v = y[i], d = dy[i];
    dx[i] = (-0.5f * d) * ((v * v) * v);
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_NEG = {{{check_forward, neg_forward}, {check_backward<1>, neg_backward}, {}}};
extern const CpuOp kCpuOp_RSQRT = {{{check_forward, rsqrt_forward}, {check_backward<2>, rsqrt_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
