// Optimizer updates (update phase): UPDATE_SGD in [grad] out [W]; UPDATE_ADAM in [grad] out
// [W, m, v]. The outputs are read and written. The run's learning rate overrides the step's
// when it is > 0.
#include <cmath>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

float learning_rate(const StepView& s, const cltrain_run_args& args) {
  return args.learning_rate > 0.0f ? args.learning_rate : s.params().learning_rate;
}

std::string sgd_check(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "grad"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "W");
}

// W = W - lr * g.
std::string sgd_run(const StepView& s, const cltrain_run_args& args) {
  const float lr = learning_rate(s, args);
  const float* g = s.in[0].data;
  float* w = s.out[0].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i) w[i] = w[i] - lr * g[i];
  return {};
}

std::string adam_check(const StepView& s) {
  if (std::string e = require_slots(s, 1, 3); !e.empty()) return e;
  if (std::string e = require(s.in[0], "grad"); !e.empty()) return e;
  const uint64_t n = s.in[0].elements;
  if (std::string e = require_elements(s.out[0], n, "W"); !e.empty()) return e;
  if (std::string e = require_elements(s.out[1], n, "m"); !e.empty()) return e;
  if (std::string e = require_elements(s.out[2], n, "v"); !e.empty()) return e;
  const cltrain_op_params& p = s.params();
  if (!(p.beta1 >= 0.0f && p.beta1 < 1.0f) || !(p.beta2 >= 0.0f && p.beta2 < 1.0f))
    return "beta1 " + std::to_string(p.beta1) + " and beta2 " + std::to_string(p.beta2) +
           " must lie in [0, 1)";
  if (!(p.epsilon >= 0.0f)) return "epsilon must not be negative";
  return {};
}

// step = (float)(lr * sqrt(1 - b2^t) / (1 - b1^t)) in double; m = b1 m + (1 - b1) g;
// v = b2 v + (1 - b2) (g g); W = W - (step m) / (sqrt(v) + eps); 1 - b1 and 1 - b2 in float.
std::string adam_run(const StepView& s, const cltrain_run_args& args) {
  if (args.iteration < 1)
    return "iteration " + std::to_string(args.iteration) + " is not a 1-based iteration";
  const cltrain_op_params& p = s.params();
  const double t = static_cast<double>(args.iteration);
  const double lr = static_cast<double>(learning_rate(s, args));
  const float step = static_cast<float>(lr * std::sqrt(1.0 - std::pow(static_cast<double>(p.beta2), t)) /
                                        (1.0 - std::pow(static_cast<double>(p.beta1), t)));
  const float b1 = p.beta1, b2 = p.beta2, eps = p.epsilon;
  const float c1 = 1.0f - b1, c2 = 1.0f - b2;
  const float* g = s.in[0].data;
  float* w = s.out[0].data;
  float* m = s.out[1].data;
  float* v = s.out[2].data;
  for (uint64_t i = 0; i < s.in[0].elements; ++i) {
    const float mi = b1 * m[i] + c1 * g[i];
    const float vi = b2 * v[i] + c2 * (g[i] * g[i]);
    m[i] = mi;
    v[i] = vi;
    w[i] = w[i] - (step * mi) / (std::sqrt(vi) + eps);
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_UPDATE_SGD = {{{}, {}, {sgd_check, sgd_run}}};
extern const CpuOp kCpuOp_UPDATE_ADAM = {{{}, {}, {adam_check, adam_run}}};

}  // namespace cpu
}  // namespace cltrain
