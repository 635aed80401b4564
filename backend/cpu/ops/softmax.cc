// SOFTMAX over the last dimension: y = exp(beta x_i) / sum_j exp(beta x_j), in the order of
// cltrain_backend.h's Numerics: t = beta x, e = clt_exp(t - max t), y = e / (sequential sum of e).
// LOG_SOFTMAX: y = (x - max x) - clt_log(sum of e), in cltrain_ops.h's order.
#include <cmath>

#include "cpu_op.h"
#include "numerics.h"

namespace cltrain {
namespace cpu {
namespace {

uint64_t row_length(const TensorRef& t) { return t.rank() == 0 ? 1 : static_cast<uint64_t>(t.dim(t.rank() - 1)); }

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "x"); !e.empty()) return e;
  if (row_length(s.in[0]) == 0) return "x " + shape_string(s.in[0]) + " has an empty last dimension";
  if (!std::isfinite(s.params().beta)) return "beta is not finite";
  return require_elements(s.out[0], s.in[0].elements, "y");
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "y"); !e.empty()) return e;
  if (row_length(s.in[0]) == 0) return "y " + shape_string(s.in[0]) + " has an empty last dimension";
  if (std::string e = require_elements(s.in[1], s.in[0].elements, "dy"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "dx");
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const float beta = s.params().beta;
  const uint64_t len = row_length(s.in[0]);
  const uint64_t rows = s.in[0].elements / len;
  for (uint64_t r = 0; r < rows; ++r) {
    const float* x = s.in[0].data + r * len;
    float* y = s.out[0].data + r * len;
    float top = beta * x[0];
    for (uint64_t i = 1; i < len; ++i) top = std::fmax(top, beta * x[i]);
    float sum = 0.0f;
    for (uint64_t i = 0; i < len; ++i) {
      y[i] = clt_exp(beta * x[i] - top);
      sum = sum + y[i];
    }
    for (uint64_t i = 0; i < len; ++i) y[i] = y[i] / sum;
  }
  return {};
}

// d = sum of the rounded products dy_i y_i; dx_i = beta (y_i (dy_i - d)).
std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float beta = s.params().beta;
  const uint64_t len = row_length(s.in[0]);
  const uint64_t rows = s.in[0].elements / len;
  for (uint64_t r = 0; r < rows; ++r) {
    const float* y = s.in[0].data + r * len;
    const float* dy = s.in[1].data + r * len;
    float* dx = s.out[0].data + r * len;
    float d = 0.0f;
    for (uint64_t i = 0; i < len; ++i) {
      const float p = dy[i] * y[i];
      d = d + p;
    }
    for (uint64_t i = 0; i < len; ++i) dx[i] = beta * (y[i] * (dy[i] - d));
  }
  return {};
}

// LOG_SOFTMAX: mx = max x_i; s = sum of clt_exp(x_i - mx); y_i = (x_i - mx) - clt_log(s).
std::string log_forward(const StepView& s, const cltrain_run_args&) {
  const uint64_t len = row_length(s.in[0]);
  for (uint64_t r = 0; r < s.in[0].elements / len; ++r) {
    const float* x = s.in[0].data + r * len;
    float* y = s.out[0].data + r * len;
    float top = x[0];
    for (uint64_t i = 1; i < len; ++i) top = std::fmax(top, x[i]);
    float sum = 0.0f;
    for (uint64_t i = 0; i < len; ++i) sum = sum + clt_exp(x[i] - top);
    const float g = clt_log(sum);
    for (uint64_t i = 0; i < len; ++i) y[i] = (x[i] - top) - g;
  }
  return {};
}

// d = sum of dy_i; dx_i = dy_i - clt_exp(y_i) * d.
std::string log_backward(const StepView& s, const cltrain_run_args&) {
  const uint64_t len = row_length(s.in[0]);
  for (uint64_t r = 0; r < s.in[0].elements / len; ++r) {
    const float* y = s.in[0].data + r * len;
    const float* dy = s.in[1].data + r * len;
    float* dx = s.out[0].data + r * len;
    float d = 0.0f;
    for (uint64_t i = 0; i < len; ++i) d = d + dy[i];
    for (uint64_t i = 0; i < len; ++i) dx[i] = dy[i] - clt_exp(y[i]) * d;
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_LOG_SOFTMAX = {{{check_forward, log_forward}, {check_backward, log_backward}, {}}};
extern const CpuOp kCpuOp_SOFTMAX = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
