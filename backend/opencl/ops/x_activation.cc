// The activations whose backward reads x: HARD_SWISH (kernels/hard_swish.cl), GELU
// (kernels/gelu.cl, its form a definition) and the pointwise ops LEAKY_RELU, ELU, ABS, SQUARE,
// EXP, SQRT, LOG (kernels/pointwise.cl, numerics.h's clt_pointwise: the op and LEAKY_RELU's alpha
// are definitions), one work-item per element: forward in [x] out [y], backward in [x, dy] out
// [dx].
#include <cstring>

#include "numerics.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

std::string check(const StepView& s) {
  std::string why;
  if (!(why = require_tensor(s, s.in(0), "input")).empty()) return why;
  const uint64_t n = s.count(s.in(0));
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return require_count(s, s.out(0), "output", n);
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    if (!(why = require_count(s, s.in(1), "output gradient", n)).empty()) return why;
    return require_count(s, s.out(0), "input gradient", n);
  }
  return "has no " + phase_name(s.step.phase) + " step";
}

// The CLT_PW_* value of a pointwise op, -1 for HARD_SWISH and GELU.
int pointwise_fn(int32_t op) {
  switch (op) {
    case CLTRAIN_OP_LEAKY_RELU: return CLT_PW_LEAKY_RELU;
    case CLTRAIN_OP_ELU: return CLT_PW_ELU;
    case CLTRAIN_OP_ABS: return CLT_PW_ABS;
    case CLTRAIN_OP_SQUARE: return CLT_PW_SQUARE;
    case CLTRAIN_OP_EXP: return CLT_PW_EXP;
    case CLTRAIN_OP_SQRT: return CLT_PW_SQRT;
    case CLTRAIN_OP_LOG: return CLT_PW_LOG;
    default: return -1;
  }
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const uint64_t count = s.count(s.in(0));
  const bool gelu = s.step.op == CLTRAIN_OP_GELU;
  const int fn = pointwise_fn(s.step.op);
  const std::string name = gelu ? "gelu" : fn >= 0 ? "pointwise" : "hard_swish";
  Defines d;
  d.set("COUNT", count);
  if (gelu) d.set("APPROXIMATE", s.step.params.approximate ? 1 : 0);
  if (fn >= 0) {
    uint32_t alpha_bits = 0;
    if (s.step.op == CLTRAIN_OP_LEAKY_RELU) std::memcpy(&alpha_bits, &s.step.params.alpha, 4);
    d.set("FN", fn);
    d.set("ALPHA_BITS", static_cast<long long>(alpha_bits));
  }
  Kernel k;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    k = c.kernel(name + ".cl", d, (name + "_forward").c_str());
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)));
  } else {
    k = c.kernel(name + ".cl", d, (name + "_backward").c_str());
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.out(0)));
  }
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_HARD_SWISH = {check, prepare};
const OpFamily kOp_GELU = {check, prepare};
const OpFamily kOp_LEAKY_RELU = {check, prepare};
const OpFamily kOp_ELU = {check, prepare};
const OpFamily kOp_ABS = {check, prepare};
const OpFamily kOp_SQUARE = {check, prepare};
const OpFamily kOp_EXP = {check, prepare};
const OpFamily kOp_SQRT = {check, prepare};
const OpFamily kOp_LOG = {check, prepare};

}  // namespace cltrain::ocl
