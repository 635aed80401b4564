// The standalone activations RELU, RELU6, TANH and LOGISTIC (forward in [x] out [y], backward
// in [y, dy] out [dx]), and the fused activations other ops apply to their outputs. Derivatives
// select, never multiply by 0 or 1 (cltrain_backend.h, Numerics).
#include <vector>

#include "cpu_op.h"
#include "numerics.h"

namespace cltrain {
namespace cpu {

bool activation_supported(int32_t activation) {
  switch (activation) {
    case CLTRAIN_ACT_NONE:
    case CLTRAIN_ACT_RELU:
    case CLTRAIN_ACT_RELU_N1_TO_1:
    case CLTRAIN_ACT_RELU6:
    case CLTRAIN_ACT_TANH: return true;
    default: return false;
  }
}

float tanh_forward(float x) { return clt_tanh(x); }

float logistic_forward(float x) { return 1.0f / (1.0f + clt_exp(-x)); }

// Clamps select as x < lo ? lo : x, then v > hi ? hi : v (NaN passes through, -0 stays).
float apply_activation(int32_t activation, float z) {
  switch (activation) {
    case CLTRAIN_ACT_RELU: return z < 0.0f ? 0.0f : z;
    case CLTRAIN_ACT_RELU_N1_TO_1: {
      const float v = z < -1.0f ? -1.0f : z;
      return v > 1.0f ? 1.0f : v;
    }
    case CLTRAIN_ACT_RELU6: {
      const float v = z < 0.0f ? 0.0f : z;
      return v > 6.0f ? 6.0f : v;
    }
    case CLTRAIN_ACT_TANH: return tanh_forward(z);
    default: return z;
  }
}

float activation_backward(int32_t activation, float y, float dy) {
  switch (activation) {
    case CLTRAIN_ACT_RELU: return y > 0.0f ? dy : 0.0f;
    case CLTRAIN_ACT_RELU_N1_TO_1: return (y > -1.0f && y < 1.0f) ? dy : 0.0f;
    case CLTRAIN_ACT_RELU6: return (y > 0.0f && y < 6.0f) ? dy : 0.0f;
    case CLTRAIN_ACT_TANH: return dy * (1.0f - y * y);
    default: return dy;
  }
}

void apply_activation(int32_t activation, float* y, uint64_t n) {
  if (activation == CLTRAIN_ACT_NONE) return;
  for (uint64_t i = 0; i < n; ++i) y[i] = apply_activation(activation, y[i]);
}

void activation_backward(int32_t activation, const float* y, float* dy, uint64_t n) {
  if (activation == CLTRAIN_ACT_NONE) return;
  for (uint64_t i = 0; i < n; ++i) dy[i] = activation_backward(activation, y[i], dy[i]);
}

std::string require_dx_activation(const StepView& s) {
  const int32_t act = s.params().dx_activation;
  if (act == CLTRAIN_ACT_NONE) return {};
  if (!activation_supported(act)) return "dx_activation " + std::to_string(act) + " is not supported";
  if (!s.in[0].present() || !s.out[0].present()) return "dx_activation needs x and dx";
  return {};
}

void input_grad_into(const StepView& s, const std::function<void(float* target)>& compute) {
  const int32_t act = s.params().dx_activation;
  if (act == CLTRAIN_ACT_NONE) return compute(s.out[0].data);
  std::vector<float> tmp(s.out[0].elements);
  compute(tmp.data());
  const float* x = s.in[0].data;
  float* dx = s.out[0].data;
  for (uint64_t i = 0; i < tmp.size(); ++i) dx[i] = activation_backward(act, x[i], tmp[i]);
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

// The standalone ops as the fused activation that matches them; LOGISTIC has none.
constexpr int32_t kLogistic = -1;

template <int32_t kAct>
std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i)
    y[i] = kAct == kLogistic ? logistic_forward(x[i]) : apply_activation(kAct, x[i]);
  return {};
}

template <int32_t kAct>
std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float* y = s.in[0].data;
  const float* dy = s.in[1].data;
  float* dx = s.out[0].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i)
    dx[i] = kAct == kLogistic ? dy[i] * (y[i] * (1.0f - y[i])) : activation_backward(kAct, y[i], dy[i]);
  return {};
}

template <int32_t kAct>
constexpr CpuOp standalone() {
  return {{{check_forward, run_forward<kAct>}, {check_backward, run_backward<kAct>}, {}}};
}

}  // namespace

extern const CpuOp kCpuOp_RELU = standalone<CLTRAIN_ACT_RELU>();
extern const CpuOp kCpuOp_RELU6 = standalone<CLTRAIN_ACT_RELU6>();
extern const CpuOp kCpuOp_TANH = standalone<CLTRAIN_ACT_TANH>();
extern const CpuOp kCpuOp_LOGISTIC = standalone<kLogistic>();

}  // namespace cpu
}  // namespace cltrain
