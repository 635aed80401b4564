// LOSS_MSE, LOSS_CCE and LOSS_CCE_LOGITS: forward in [pred, expected] out [loss], backward out [dpred].
// A sample is the first dimension of pred; the reduction sums over samples and, for
// SUM_OVER_BATCH_SIZE, divides by their number (the backward includes the same scale). The
// order of every rounding is cltrain_backend.h's (Numerics): divisions, never a reciprocal.
#include <algorithm>
#include <cmath>

#include "cpu_op.h"
#include "numerics.h"

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

bool sum_over_batch(const StepView& s) { return s.params().reduction == CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE; }

// N: the first dimension of pred.
float batch(const StepView& s) { return static_cast<float>(batch_size(s.in[0])); }

// Per sample of K elements q = sum of d * d (d = p - e); l = sum over samples of q / K.
std::string mse_forward(const StepView& s, const cltrain_run_args&) {
  const float* p = s.in[0].data;
  const float* e = s.in[1].data;
  const uint64_t per_sample = sample_elements(s.in[0]);
  const uint64_t samples = s.in[0].elements / per_sample;
  const float k = static_cast<float>(per_sample);
  float l = 0.0f;
  for (uint64_t b = 0; b < samples; ++b) {
    float q = 0.0f;
    for (uint64_t i = b * per_sample; i < (b + 1) * per_sample; ++i) {
      const float d = p[i] - e[i];
      q = q + d * d;
    }
    l = l + q / k;
  }
  s.out[0].data[0] = sum_over_batch(s) ? l / batch(s) : l;
  return {};
}

// dpred = (2 d) / K, then / N.
std::string mse_backward(const StepView& s, const cltrain_run_args&) {
  const float* p = s.in[0].data;
  const float* e = s.in[1].data;
  float* dp = s.out[0].data;
  const float k = static_cast<float>(sample_elements(s.in[0]));
  const bool sobs = sum_over_batch(s);
  const float n = batch(s);
  for (uint64_t i = 0; i < s.in[0].elements; ++i) {
    const float g = (2.0f * (p[i] - e[i])) / k;
    dp[i] = sobs ? g / n : g;
  }
  return {};
}

// std::min/std::max, not fmin/fmax: a NaN prediction stays NaN (as the OpenCL kernel's selects).
float clamp_pred(float p) { return std::min(std::max(p, kCceLow), kCceHigh); }

// l = sum over all elements of (-e) * clt_log(pc), pc = min(max(p, 1e-7), 1 - 1e-7).
std::string cce_forward(const StepView& s, const cltrain_run_args&) {
  const float* p = s.in[0].data;
  const float* e = s.in[1].data;
  float l = 0.0f;
  for (uint64_t i = 0; i < s.in[0].elements; ++i) l = l + (-e[i]) * clt_log(clamp_pred(p[i]));
  s.out[0].data[0] = sum_over_batch(s) ? l / batch(s) : l;
  return {};
}

// dpred = (-e / pc) / N, 0 where p was clamped (p != pc).
std::string cce_backward(const StepView& s, const cltrain_run_args&) {
  const float* p = s.in[0].data;
  const float* e = s.in[1].data;
  float* dp = s.out[0].data;
  const bool sobs = sum_over_batch(s);
  const float n = batch(s);
  for (uint64_t i = 0; i < s.in[0].elements; ++i) {
    const float pc = clamp_pred(p[i]);
    const float g = -e[i] / pc;
    dp[i] = p[i] != pc ? 0.0f : sobs ? g / n : g;
  }
  return {};
}

// LOSS_CCE_LOGITS: rows of C = pred's last dimension. Per row: m = the largest z (first, then
// z > m ? z : m), t_i = z_i - m, s = sum of clt_exp(t_i).
struct RowSoftmax {
  float m = 0.0f, s = 0.0f;
  RowSoftmax(const float* z, uint64_t c) {
    m = z[0];
    for (uint64_t i = 1; i < c; ++i) m = z[i] > m ? z[i] : m;
    for (uint64_t i = 0; i < c; ++i) s = s + clt_exp(z[i] - m);
  }
};

uint64_t classes(const StepView& s) {
  const int32_t r = s.in[0].rank();
  return r > 0 && s.in[0].dim(r - 1) > 0 ? static_cast<uint64_t>(s.in[0].dim(r - 1)) : 1;
}

// l = l + (-e_i) * (t_i - clt_log(s)) over the rows in order.
std::string cce_logits_forward(const StepView& s, const cltrain_run_args&) {
  const float* z = s.in[0].data;
  const float* e = s.in[1].data;
  const uint64_t c = classes(s);
  float l = 0.0f;
  for (uint64_t r = 0; r < s.in[0].elements / c; ++r) {
    const RowSoftmax row(z + r * c, c);
    const float g = clt_log(row.s);
    for (uint64_t i = r * c; i < (r + 1) * c; ++i) l = l + (-e[i]) * ((z[i] - row.m) - g);
  }
  s.out[0].data[0] = sum_over_batch(s) ? l / batch(s) : l;
  return {};
}

// dz_i = (clt_exp(t_i) / s) * se - e_i, se the row's sum of e; then / N.
std::string cce_logits_backward(const StepView& s, const cltrain_run_args&) {
  const float* z = s.in[0].data;
  const float* e = s.in[1].data;
  float* dz = s.out[0].data;
  const uint64_t c = classes(s);
  const bool sobs = sum_over_batch(s);
  const float n = batch(s);
  for (uint64_t r = 0; r < s.in[0].elements / c; ++r) {
    const RowSoftmax row(z + r * c, c);
    float se = 0.0f;
    for (uint64_t i = r * c; i < (r + 1) * c; ++i) se = se + e[i];
    for (uint64_t i = r * c; i < (r + 1) * c; ++i) {
      const float g = (clt_exp(z[i] - row.m) / row.s) * se - e[i];
      dz[i] = sobs ? g / n : g;
    }
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_LOSS_CCE_LOGITS = {
    {{check_forward, cce_logits_forward}, {check_backward, cce_logits_backward}, {}}};
extern const CpuOp kCpuOp_LOSS_MSE = {{{check_forward, mse_forward}, {check_backward, mse_backward}, {}}};
extern const CpuOp kCpuOp_LOSS_CCE = {{{check_forward, cce_forward}, {check_backward, cce_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
