// ReLU as a standalone op: relu_forward, relu_backward (kernels/activation.cl).
#include "launch.h"
#include "ops/ops.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "activation.cl";

std::string check_relu(const StepView& s) {
  std::string why;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    if (!(why = require_tensor(s, s.in(0), "input")).empty()) return why;
    return require_count(s, s.out(0), "output", s.count(s.in(0)));
  }
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    if (!(why = require_tensor(s, s.in(0), "output")).empty()) return why;
    const uint64_t n = s.count(s.in(0));
    if (!(why = require_count(s, s.in(1), "output gradient", n)).empty()) return why;
    return require_count(s, s.out(0), "input gradient", n);
  }
  return "has no " + phase_name(s.step.phase) + " step";
}

StepRun prepare_relu(Backend& b, const StepView& s) {
  const uint64_t count = s.count(s.in(0));
  Defines d;
  d.set("COUNT", count);
  Kernel k;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    k = make_kernel(b, kFamily, d, "relu_forward");
    set_args(k, b.pool, elem_offset(b, s.in(0)), elem_offset(b, s.out(0)));
  } else {
    k = make_kernel(b, kFamily, d, "relu_backward");
    set_args(k, b.pool, elem_offset(b, s.in(0)), elem_offset(b, s.in(1)), elem_offset(b, s.out(0)));
  }
  return [&b, k, count](const cltrain_run_args*) { launch_1d(b, k, count); };
}

}  // namespace

const OpFamily kOp_RELU = {check_relu, prepare_relu};

}  // namespace cltrain::ocl
