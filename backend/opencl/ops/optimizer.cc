// Optimizer updates (kernels/optimizer.cl): sgd_update and adam_update, one work-item per weight.
// The learning rate is a kernel argument set at run time (run_args may override it); Adam's
// bias-corrected step size is computed here on the host in double. A partial update
// (params.update_count > 0) moves the gradient and weight offsets by update_offset and runs
// update_count work-items; Adam's m and v hold update_count elements.
#include <cmath>

#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "optimizer.cl";

float learning_rate(const cltrain_step_desc& step, const cltrain_run_args* args) {
  return args && args->learning_rate > 0.0f ? args->learning_rate : step.params.learning_rate;
}

// The updated range of W's n elements: [update_offset, update_offset + update_count) when
// update_count > 0, else the whole tensor.
struct Range {
  uint64_t first, count;
};
Range update_range(const cltrain_op_params& p, uint64_t n) {
  if (p.update_count > 0) return {static_cast<uint64_t>(p.update_offset), static_cast<uint64_t>(p.update_count)};
  return {0, n};
}

std::string check_range(const cltrain_op_params& p, uint64_t n) {
  if (p.update_count < 0) return "update_count " + std::to_string(p.update_count) + " is negative";
  if (p.update_count == 0)
    return p.update_offset == 0 ? std::string()
                                : "update_offset " + std::to_string(p.update_offset) + " without an update_count";
  if (p.update_offset < 0) return "update_offset " + std::to_string(p.update_offset) + " is negative";
  const uint64_t end = static_cast<uint64_t>(p.update_offset) + static_cast<uint64_t>(p.update_count);
  if (end > n)
    return "update range [" + std::to_string(p.update_offset) + ", " + std::to_string(end) + ") exceeds the weight's " +
           std::to_string(n) + " elements";
  return {};
}

std::string check_update(const StepView& s) {
  if (s.step.phase != CLTRAIN_PHASE_UPDATE) return "has no " + phase_name(s.step.phase) + " step";
  std::string why;
  if (!(why = require_tensor(s, s.in(0), "gradient")).empty()) return why;
  const uint64_t n = s.count(s.in(0));
  if (!(why = require_count(s, s.out(0), "weight", n)).empty()) return why;
  if (!(why = check_range(s.step.params, n)).empty()) return why;
  if (s.step.op == CLTRAIN_OP_UPDATE_ADAM || s.step.op == CLTRAIN_OP_UPDATE_ADAM_SQUARES) {
    const uint64_t count = update_range(s.step.params, n).count;
    if (!(why = require_count(s, s.out(1), "Adam m", count)).empty()) return why;
    if (!(why = require_count(s, s.out(2), "Adam v", count)).empty()) return why;
    if (s.step.op == CLTRAIN_OP_UPDATE_ADAM_SQUARES && !(why = require_count(s, s.in(1), "Adam gsq", n)).empty())
      return why;
    const cltrain_op_params& p = s.step.params;
    if (!(p.beta1 >= 0.0f && p.beta1 < 1.0f) || !(p.beta2 >= 0.0f && p.beta2 < 1.0f))
      return "beta1 " + std::to_string(p.beta1) + " and beta2 " + std::to_string(p.beta2) + " must lie in [0, 1)";
    if (!(p.epsilon >= 0.0f) || !std::isfinite(p.epsilon)) return "epsilon must be finite and not negative";
  }
  return {};
}

StepRun prepare_sgd(const OpContext& c) {
  const StepView& s = c.s;
  const Range r = update_range(s.step.params, s.count(s.in(0)));
  const uint64_t count = r.count;
  const cl_uint first = static_cast<cl_uint>(r.first);
  Kernel k = c.kernel(kFamily, Defines{}, "sgd_update");
  set_args(k, c.pool(), c.offset(s.in(0)) + first, c.offset(s.out(0)) + first);
  const cl_uint n = static_cast<cl_uint>(count);
  set_arg(k, 4, sizeof n, &n);
  const cltrain_step_desc step = s.step;
  return [k, count, step](const Queue& q, const cltrain_run_args* args) {
    const float lr = learning_rate(step, args);
    set_arg(k, 3, sizeof lr, &lr);
    q.launch_1d(k, count);
  };
}

StepRun prepare_adam(const OpContext& c) {
  const StepView& s = c.s;
  const cltrain_op_params& p = s.step.params;
  const Range r = update_range(p, s.count(s.in(0)));
  const uint64_t count = r.count;
  const cl_uint first = static_cast<cl_uint>(r.first);
  Defines d;
  d.set_float("BETA1", p.beta1).set_float("BETA2", p.beta2).set_float("EPSILON", p.epsilon);
  const bool gsq = s.step.op == CLTRAIN_OP_UPDATE_ADAM_SQUARES;
  if (gsq) d.set("GSQ", 1);
  Kernel k = c.kernel(kFamily, d, "adam_update");
  set_args(k, c.pool(), c.offset(s.in(0)) + first, c.offset(s.out(0)) + first, c.offset(s.out(1)), c.offset(s.out(2)));
  const cl_uint q_off = gsq ? c.offset(s.in(1)) + first : cl_uint{0};
  set_arg(k, 6, sizeof q_off, &q_off);
  const cl_uint n = static_cast<cl_uint>(count);
  set_arg(k, 7, sizeof n, &n);
  const cltrain_step_desc step = s.step;
  const std::string what = s.what();
  return [k, count, step, what](const Queue& q, const cltrain_run_args* args) {
    if (!args || args->iteration < 1) fail(CLTRAIN_INVALID, what + " needs run_args.iteration >= 1 (Adam's t)");
    const double t = static_cast<double>(args->iteration);
    const double b1 = step.params.beta1, b2 = step.params.beta2;
    const float step_size =
        static_cast<float>(learning_rate(step, args) * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t)));
    set_arg(k, 5, sizeof step_size, &step_size);
    q.launch_1d(k, count);
  };
}

}  // namespace

const OpFamily kOp_UPDATE_SGD = {check_update, prepare_sgd};
const OpFamily kOp_UPDATE_ADAM = {check_update, prepare_adam};
const OpFamily kOp_UPDATE_ADAM_SQUARES = {check_update, prepare_adam};

}  // namespace cltrain::ocl
