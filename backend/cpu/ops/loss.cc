// LOSS_MSE and LOSS_CCE: forward in [pred, expected] out [loss], backward out [dpred].
// A sample is the first dimension of pred; the reduction sums over samples and, for
// SUM_OVER_BATCH_SIZE, divides by their number (the backward includes the same scale).
#include <algorithm>

#include <cmath>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

constexpr float kCceLow = 1e-7f;
constexpr float kCceHigh = 1.0f - 1e-7f;

std::string check_operands(const StepView& s) {
  if (std::string e = require(s.in[0], "pred"); !e.empty()) return e;
  if (std::string e = require_elements(s.in[1], s.in[0].elements, "expected"); !e.empty()) return e;
  if (s.in[0].elements == 0) return "pred " + shape_string(s.in[0]) + " is empty";
  const int32_t r = s.params().reduction;
  if (r != CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE && r != CLTRAIN_REDUCTION_SUM)
    return "reduction " + std::to_string(r) + " is not supported";
  return {};
}

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  if (std::string e = check_operands(s); !e.empty()) return e;
  return require_elements(s.out[0], 1, "loss");
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  if (std::string e = check_operands(s); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "dpred");
}

float reduction_scale(const StepView& s) {
  return s.params().reduction == CLTRAIN_REDUCTION_SUM
             ? 1.0f
             : 1.0f / static_cast<float>(batch_size(s.in[0]));
}

std::string mse_forward(const StepView& s, const cltrain_run_args&) {
  const float* p = s.in[0].data;
  const float* e = s.in[1].data;
  const uint64_t per_sample = sample_elements(s.in[0]);
  const uint64_t samples = s.in[0].elements / per_sample;
  float total = 0.0f;
  for (uint64_t b = 0; b < samples; ++b) {
    float sum = 0.0f;
    for (uint64_t i = b * per_sample; i < (b + 1) * per_sample; ++i) {
      const float d = p[i] - e[i];
      sum += d * d;
    }
    total += sum / static_cast<float>(per_sample);
  }
  s.out[0].data[0] = total * reduction_scale(s);
  return {};
}

std::string mse_backward(const StepView& s, const cltrain_run_args&) {
  const float* p = s.in[0].data;
  const float* e = s.in[1].data;
  float* dp = s.out[0].data;
  const float scale = 2.0f * reduction_scale(s) / static_cast<float>(sample_elements(s.in[0]));
  for (uint64_t i = 0; i < s.in[0].elements; ++i) dp[i] = scale * (p[i] - e[i]);
  return {};
}

std::string cce_forward(const StepView& s, const cltrain_run_args&) {
  const float* p = s.in[0].data;
  const float* e = s.in[1].data;
  float total = 0.0f;
  for (uint64_t i = 0; i < s.in[0].elements; ++i)
    total -= e[i] * std::log(std::min(std::max(p[i], kCceLow), kCceHigh));
  s.out[0].data[0] = total * reduction_scale(s);
  return {};
}

std::string cce_backward(const StepView& s, const cltrain_run_args&) {
  const float* p = s.in[0].data;
  const float* e = s.in[1].data;
  float* dp = s.out[0].data;
  const float scale = reduction_scale(s);
  for (uint64_t i = 0; i < s.in[0].elements; ++i) {
    const bool clamped = p[i] < kCceLow || p[i] > kCceHigh;
    dp[i] = clamped ? 0.0f : -scale * e[i] / p[i];
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_LOSS_MSE = {{{check_forward, mse_forward}, {check_backward, mse_backward}, {}}};
extern const CpuOp kCpuOp_LOSS_CCE = {{{check_forward, cce_forward}, {check_backward, cce_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
