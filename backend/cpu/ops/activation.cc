// RELU, and the fused activations other ops apply to their outputs.
#include <algorithm>
#include <cmath>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {

bool activation_supported(int32_t activation) {
  switch (activation) {
    case CLTRAIN_ACT_NONE:
    case CLTRAIN_ACT_RELU:
    case CLTRAIN_ACT_RELU_N1_TO_1:
    case CLTRAIN_ACT_RELU6:
    case CLTRAIN_ACT_TANH:
      return true;
    default:
      return false;
  }
}

float apply_activation(int32_t activation, float z) {
  switch (activation) {
    case CLTRAIN_ACT_RELU:
      return std::max(z, 0.0f);
    case CLTRAIN_ACT_RELU_N1_TO_1:
      return std::min(std::max(z, -1.0f), 1.0f);
    case CLTRAIN_ACT_RELU6:
      return std::min(std::max(z, 0.0f), 6.0f);
    case CLTRAIN_ACT_TANH:
      return std::tanh(z);
    default:
      return z;
  }
}

// Where the output sits on a clamp, the derivative is zero.
float activation_derivative(int32_t activation, float y) {
  switch (activation) {
    case CLTRAIN_ACT_RELU:
      return y > 0.0f ? 1.0f : 0.0f;
    case CLTRAIN_ACT_RELU_N1_TO_1:
      return (y > -1.0f && y < 1.0f) ? 1.0f : 0.0f;
    case CLTRAIN_ACT_RELU6:
      return (y > 0.0f && y < 6.0f) ? 1.0f : 0.0f;
    case CLTRAIN_ACT_TANH:
      return 1.0f - y * y;
    default:
      return 1.0f;
  }
}

namespace {

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "x"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "y");
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "y"); !e.empty()) return e;
  if (std::string e = require_elements(s.in[1], s.in[0].elements, "dy"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "dx");
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i) y[i] = std::max(x[i], 0.0f);
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float* y = s.in[0].data;
  const float* dy = s.in[1].data;
  float* dx = s.out[0].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i)
    dx[i] = dy[i] * activation_derivative(CLTRAIN_ACT_RELU, y[i]);
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_RELU = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
