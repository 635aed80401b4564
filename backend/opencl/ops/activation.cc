// Standalone activations (kernels/activation.cl), one work-item per element:
//   RELU, RELU6, TANH, LOGISTIC   forward in [x] out [y]; backward in [y, dy] out [dx]
// Kernels <name>_forward and <name>_backward; forward and backward share a program.
#include "ops/op.h"

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

// The kernel name prefix in activation.cl.
const char* kernel_prefix(int op) {
  switch (op) {
    case CLTRAIN_OP_RELU6: return "relu6";
    case CLTRAIN_OP_TANH: return "tanh";
    case CLTRAIN_OP_LOGISTIC: return "logistic";
    default: return "relu";
  }
}

StepRun prepare_relu(const OpContext& c) {
  const StepView& s = c.s;
  const uint64_t count = s.count(s.in(0));
  Defines d;
  d.set("COUNT", count);
  Kernel k;
  const std::string prefix = kernel_prefix(s.step.op);
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    k = c.kernel(kFamily, d, (prefix + "_forward").c_str());
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)));
  } else {
    k = c.kernel(kFamily, d, (prefix + "_backward").c_str());
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.out(0)));
  }
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_RELU = {check_relu, prepare_relu};
const OpFamily kOp_RELU6 = {check_relu, prepare_relu};
const OpFamily kOp_TANH = {check_relu, prepare_relu};
const OpFamily kOp_LOGISTIC = {check_relu, prepare_relu};

}  // namespace cltrain::ocl
