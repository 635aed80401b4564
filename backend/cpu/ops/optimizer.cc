// Optimizer updates (update phase): UPDATE_SGD in [grad] out [W]; UPDATE_ADAM in [grad] out
// [W, m, v]. The outputs are read and written. The run's learning rate overrides the step's
// when it is > 0. With params.update_count > 0 only W[update_offset, update_offset + update_count)
// and the matching grad elements are updated; Adam's m and v then hold update_count elements.
#include <cmath>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

float learning_rate(const StepView& s, const cltrain_run_args& args) {
  return args.learning_rate > 0.0f ? args.learning_rate : s.params().learning_rate;
}

// The updated range [first, first + count) of W's n elements: params.update_offset and
// update_count when update_count > 0, else the whole tensor.
struct Range {
  uint64_t first, count;
};
Range update_range(const StepView& s, uint64_t n) {
  const cltrain_op_params& p = s.params();
  if (p.update_count > 0) return {static_cast<uint64_t>(p.update_offset), static_cast<uint64_t>(p.update_count)};
  return {0, n};
}

std::string range_check(const StepView& s, uint64_t n) {
  const cltrain_op_params& p = s.params();
  if (p.update_count < 0) return "update_count " + std::to_string(p.update_count) + " is negative";
  if (p.update_count == 0) {
    if (p.update_offset != 0) return "update_offset " + std::to_string(p.update_offset) + " without an update_count";
    return {};
  }
  if (p.update_offset < 0) return "update_offset " + std::to_string(p.update_offset) + " is negative";
  if (static_cast<uint64_t>(p.update_offset) + static_cast<uint64_t>(p.update_count) > n)
    return "update range [" + std::to_string(p.update_offset) + ", " +
           std::to_string(static_cast<uint64_t>(p.update_offset) + static_cast<uint64_t>(p.update_count)) +
           ") exceeds W's " + std::to_string(n) + " elements";
  return {};
}

std::string sgd_check(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "grad"); !e.empty()) return e;
  if (std::string e = require_elements(s.out[0], s.in[0].elements, "W"); !e.empty()) return e;
  return range_check(s, s.in[0].elements);
}

// W = W - lr * g.
std::string sgd_run(const StepView& s, const cltrain_run_args& args) {
  const float lr = learning_rate(s, args);
  const Range r = update_range(s, s.in[0].elements);
  const float* g = s.in[0].data + r.first;
  float* w = s.out[0].data + r.first;
  for (uint64_t i = 0; i < r.count; ++i) w[i] = w[i] - lr * g[i];
  return {};
}

std::string adam_check(const StepView& s) {
  const bool squares = s.step->op == CLTRAIN_OP_UPDATE_ADAM_SQUARES;
  if (std::string e = require_slots(s, squares ? 2 : 1, 3); !e.empty()) return e;
  if (std::string e = require(s.in[0], "grad"); !e.empty()) return e;
  const uint64_t n = s.in[0].elements;
  if (squares)
    if (std::string e = require_elements(s.in[1], n, "gsq"); !e.empty()) return e;
  if (std::string e = require_elements(s.out[0], n, "W"); !e.empty()) return e;
  if (std::string e = range_check(s, n); !e.empty()) return e;
  const uint64_t count = update_range(s, n).count;
  if (std::string e = require_elements(s.out[1], count, "m"); !e.empty()) return e;
  if (std::string e = require_elements(s.out[2], count, "v"); !e.empty()) return e;
  const cltrain_op_params& p = s.params();
  if (!(p.beta1 >= 0.0f && p.beta1 < 1.0f) || !(p.beta2 >= 0.0f && p.beta2 < 1.0f))
    return "beta1 " + std::to_string(p.beta1) + " and beta2 " + std::to_string(p.beta2) + " must lie in [0, 1)";
  if (!(p.epsilon >= 0.0f)) return "epsilon must not be negative";
  return {};
}

// step = (float)(lr * sqrt(1 - b2^t) / (1 - b1^t)) in double; m = b1 m + (1 - b1) g;
// v = b2 v + (1 - b2) (g g) (gsq in place of g g where given); W = W - (step m) / (sqrt(v) + eps); 1 - b1 and 1 - b2 in
// float.
std::string adam_run(const StepView& s, const cltrain_run_args& args) {
  if (args.iteration < 1) return "iteration " + std::to_string(args.iteration) + " is not a 1-based iteration";
  const cltrain_op_params& p = s.params();
  const double t = static_cast<double>(args.iteration);
  const double lr = static_cast<double>(learning_rate(s, args));
  const float step = static_cast<float>(lr * std::sqrt(1.0 - std::pow(static_cast<double>(p.beta2), t)) /
                                        (1.0 - std::pow(static_cast<double>(p.beta1), t)));
  const float b1 = p.beta1, b2 = p.beta2, eps = p.epsilon;
  const float c1 = 1.0f - b1, c2 = 1.0f - b2;
  const Range r = update_range(s, s.in[0].elements);
  const float* g = s.in[0].data + r.first;
  const float* gsq = s.in[1].data ? s.in[1].data + r.first : nullptr;  // GATHER's dsq, else g * g
  float* w = s.out[0].data + r.first;
  float* m = s.out[1].data;
  float* v = s.out[2].data;
  for (uint64_t i = 0; i < r.count; ++i) {
    const float mi = b1 * m[i] + c1 * g[i];
    const float vi = b2 * v[i] + c2 * (gsq ? gsq[i] : g[i] * g[i]);
    m[i] = mi;
    v[i] = vi;
    w[i] = w[i] - (step * mi) / (std::sqrt(vi) + eps);
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_UPDATE_SGD = {{{}, {}, {sgd_check, sgd_run}}};
extern const CpuOp kCpuOp_UPDATE_ADAM = {{{}, {}, {adam_check, adam_run}}};
extern const CpuOp kCpuOp_UPDATE_ADAM_SQUARES = {{{}, {}, {adam_check, adam_run}}};

}  // namespace cpu
}  // namespace cltrain
