// FullyConnected: y = act(x W^T + b), activation NONE, RELU, RELU_N1_TO_1, RELU6 or TANH.
//   forward:  GEMM y = x W^T (CLBlast), then bias_act (bias and activation, in place).
//   backward: act_grad (dz = act'(y) applied to dy, in place on dy), bias_grad (db = column sums
//             of dz), GEMMs dW = dz^T x and dx = dz W.
// kernels/bias_act.cl; CLBlast's scratch is one private tensor of the step. ACCUMULATE_FC_GRADS
// (below): the backward's dW and db added into gradients that have a value.
#include <algorithm>

#include "memory_plan.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "bias_act.cl";

struct FcShape {
  uint64_t n = 0, m = 0, k = 0;  // x [N, K], W [M, K], y [N, M]
};

// Empty when the step fits; fills shape.
std::string check_shape(const StepView& s, FcShape& shape) {
  const int act = s.step.params.activation;
  if (!activation_supported(act)) return "fused activation " + std::to_string(act) + " is not supported";
  const int32_t w = s.in(1);
  if (w < 0) return "needs the weight tensor";
  const cltrain_tensor_desc& wt = s.tensor(w);
  if (wt.rank != 2 || wt.dims[0] <= 0 || wt.dims[1] <= 0) return "weight tensor must be [M, K]";
  shape.m = static_cast<uint64_t>(wt.dims[0]);
  shape.k = static_cast<uint64_t>(wt.dims[1]);
  std::string why;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    const int32_t x = s.in(0), y = s.out(0);
    if (!(why = require_tensor(s, x, "input")).empty()) return why;
    if (s.count(x) % shape.k != 0)
      return "input has " + std::to_string(s.count(x)) + " elements, not a multiple of K=" + std::to_string(shape.k);
    shape.n = s.count(x) / shape.k;
    if (!(why = require_count(s, y, "output", shape.n * shape.m)).empty()) return why;
    if (s.in(2) >= 0 && !(why = require_count(s, s.in(2), "bias", shape.m)).empty()) return why;
  } else if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    const int32_t x = s.in(0), y = s.in(2), dy = s.in(3);
    const int32_t dx = s.out(0), dw = s.out(1), db = s.out(2);
    if (!(why = require_tensor(s, dy, "output gradient")).empty()) return why;
    if (s.count(dy) % shape.m != 0)
      return "output gradient has " + std::to_string(s.count(dy)) +
             " elements, not a multiple of M=" + std::to_string(shape.m);
    shape.n = s.count(dy) / shape.m;
    if (act != CLTRAIN_ACT_NONE && !(why = require_count(s, y, "output", shape.n * shape.m)).empty()) return why;
    if (dx >= 0 && !(why = require_count(s, dx, "input gradient", shape.n * shape.k)).empty()) return why;
    if (dw >= 0 && !(why = require_count(s, dw, "weight gradient", shape.m * shape.k)).empty()) return why;
    if (dw >= 0 && !(why = require_count(s, x, "input", shape.n * shape.k)).empty()) return why;
    if (db >= 0 && !(why = require_count(s, db, "bias gradient", shape.m)).empty()) return why;
  } else {
    return "has no " + phase_name(s.step.phase) + " step";
  }
  if (shape.n * shape.m > UINT32_MAX || shape.n * shape.k > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

std::string check(const StepView& s) {
  FcShape shape;
  return check_shape(s, shape);
}

// dW [M, K] = dz^T [M, N] x [N, K] + beta dW (beta 0: written; 1: added, ACCUMULATE_FC_GRADS).
Gemm weight_grad_gemm(const StepView& s, const FcShape& sh, int32_t dz, int32_t x, int32_t dw, float beta) {
  Gemm g;
  g.ta = clblast::Transpose::kYes;
  g.m = sh.m, g.n = sh.k, g.k = sh.n;
  g.a = dz, g.lda = sh.m;
  g.b = x, g.ldb = sh.k;
  g.c = dw, g.ldc = sh.k;
  g.beta = beta;
  g.what = s.what() + (beta == 0.0f ? " dW = dz^T x" : " dW += dz^T x");
  return g;
}

// The GEMMs of the step, in the order they run.
std::vector<Gemm> gemms(const StepView& s, const FcShape& sh) {
  std::vector<Gemm> out;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {  // y [N, M] = x [N, K] W^T
    Gemm g;
    g.tb = clblast::Transpose::kYes;
    g.m = sh.n, g.n = sh.m, g.k = sh.k;
    g.a = s.in(0), g.lda = sh.k;
    g.b = s.in(1), g.ldb = sh.k;
    g.c = s.out(0), g.ldc = sh.m;
    g.what = s.what() + " y = x W^T";
    out.push_back(g);
    return out;
  }
  const int32_t dy = s.in(3), dx = s.out(0), dw = s.out(1);
  if (dw >= 0) out.push_back(weight_grad_gemm(s, sh, dy, s.in(0), dw, 0.0f));
  if (dx >= 0) {  // dx [N, K] = dz [N, M] W [M, K]
    Gemm g;
    g.m = sh.n, g.n = sh.k, g.k = sh.m;
    g.a = dy, g.lda = sh.m;
    g.b = s.in(1), g.ldb = sh.k;
    g.c = dx, g.ldc = sh.k;
    g.what = s.what() + " dx = dz W";
    out.push_back(g);
  }
  return out;
}

// A float16 y: the bias and activation are the forward GEMM's epilogue (gemm.cl's EPI), which
// rounds each element into y once.
bool half_output(const OpContext& c) { return c.s.step.phase == CLTRAIN_PHASE_FORWARD && c.half(c.s.out(0)); }

// One private tensor: CLBlast's scratch, the largest any GEMM of the step needs (none if 0). The
// GEMMs themselves depend on the shapes alone: prepare() makes them again.
StepPlan plan(const OpContext& c) {
  const StepView& s = c.s;
  FcShape sh;
  check_shape(s, sh);
  uint64_t bytes = 0;
  for (const Gemm& g : gemms(s, sh)) bytes = std::max(bytes, c.gemm_temp_bytes(g));
  StepPlan out;
  if (bytes > 0) out.scratch.push_back(bytes);
  return out;
}

std::vector<PreparedGemm> prepare_gemms(const OpContext& c, const StepView& s, const FcShape& sh) {
  const int32_t temp = c.num_scratch() == 0 ? -1 : c.scratch(0);
  std::vector<PreparedGemm> out;
  for (Gemm g : gemms(s, sh)) {
    if (half_output(c)) g.bias = s.in(2), g.act = s.step.params.activation;
    out.push_back(c.prepare_gemm(g, temp));
  }
  return out;
}

StepRun prepare_forward(const OpContext& c, const FcShape& sh) {
  const StepView& s = c.s;
  const int32_t bias = s.in(2), y = s.out(0);
  const std::vector<PreparedGemm> g = prepare_gemms(c, s, sh);
  const int act = s.step.params.activation;
  Kernel bias_act;
  const uint64_t count = sh.n * sh.m;
  if ((bias >= 0 || act != CLTRAIN_ACT_NONE) && !half_output(c)) {
    Defines d;
    d.set("COLS", sh.m).set("HAS_BIAS", bias >= 0).set("ACT", act).set("VEC", channel_lanes(sh.m));
    bias_act = c.kernel(kFamily, d, "bias_act");
    set_args(bias_act, c.pool(), c.offset(y), bias >= 0 ? c.offset(bias) : cl_uint{0}, static_cast<cl_uint>(sh.n));
  }
  return [g, bias_act, count](const Queue& q, const cltrain_run_args*) {
    run_gemm(q, g[0]);
    if (bias_act) q.launch_1d(bias_act, count);
  };
}

StepRun prepare_backward(const OpContext& c, const FcShape& sh) {
  const StepView& s = c.s;
  const int32_t y = s.in(2), dy = s.in(3), db = s.out(2);
  const int act = s.step.params.activation;
  Defines d;
  d.set("COLS", sh.m).set("HAS_BIAS", 0).set("ACT", act).set("VEC", channel_lanes(sh.m));
  c.storage(c.storage(d, "Y_H", y), "DY_H", dy);
  const cl_uint rows = static_cast<cl_uint>(sh.n);
  Kernel act_grad, bias_grad;
  if (act != CLTRAIN_ACT_NONE) {
    act_grad = c.kernel(kFamily, d, "act_grad");
    set_args(act_grad, c.pool(), c.offset(y), c.offset(dy), rows);
  }
  if (db >= 0) {
    bias_grad = c.kernel(kFamily, d, "bias_grad");
    set_args(bias_grad, c.pool(), c.offset(dy), c.offset(db), rows);
  }
  const std::vector<PreparedGemm> gs = prepare_gemms(c, s, sh);
  const uint64_t count = sh.n * sh.m, cols = sh.m / channel_lanes(sh.m);
  return [act_grad, bias_grad, gs, count, cols](const Queue& q, const cltrain_run_args*) {
    if (act_grad) q.launch_1d(act_grad, count);
    if (bias_grad) q.launch_1d(bias_grad, cols);
    for (const PreparedGemm& g : gs) run_gemm(q, g);
  };
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  FcShape sh;
  check_shape(s, sh);
  return s.step.phase == CLTRAIN_PHASE_FORWARD ? prepare_forward(c, sh) : prepare_backward(c, sh);
}

// ACCUMULATE_FC_GRADS: in [x, dz] out [dW, db], dW += dz^T x (the GEMM with beta 1: acc + sum,
// one rounding, as an ACCUMULATE of the disposable gave) and db += the column sums of dz
// (bias_grad with ACC).
// Its shape as FullyConnected's: dz [N, M], x [N, K], dW [M, K], db [M].
std::string check_acc_shape(const StepView& s, FcShape& sh) {
  if (s.step.phase != CLTRAIN_PHASE_BACKWARD) return "has no " + phase_name(s.step.phase) + " step";
  const int32_t x = s.in(0), dz = s.in(1), dw = s.out(0), db = s.out(1);
  std::string why;
  if (!(why = require_tensor(s, dz, "dz")).empty()) return why;
  if (dw < 0 && db < 0) return "neither dW nor db is given";
  if (dw >= 0) {
    const cltrain_tensor_desc& wt = s.tensor(dw);
    if (wt.rank != 2 || wt.dims[0] <= 0 || wt.dims[1] <= 0) return "dW must be [M, K]";
    sh.m = static_cast<uint64_t>(wt.dims[0]);
    sh.k = static_cast<uint64_t>(wt.dims[1]);
    if (!(why = require_tensor(s, x, "x")).empty()) return why;
    if (s.count(dz) % sh.m != 0 || s.count(x) % sh.k != 0 || s.count(dz) / sh.m != s.count(x) / sh.k)
      return "dz and x do not fit dW";
  } else {
    sh.m = s.count(db);
    if (sh.m == 0 || s.count(dz) % sh.m != 0) return "dz does not fit db";
  }
  sh.n = s.count(dz) / sh.m;
  if (db >= 0 && !(why = require_count(s, db, "db", sh.m)).empty()) return why;
  if (sh.n * sh.m > UINT32_MAX || sh.n * sh.k > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

std::string check_acc(const StepView& s) {
  FcShape sh;
  return check_acc_shape(s, sh);
}

Gemm acc_gemm(const StepView& s, const FcShape& sh) {
  return weight_grad_gemm(s, sh, s.in(1), s.in(0), s.out(0), 1.0f);
}

StepPlan plan_acc(const OpContext& c) {
  FcShape sh;
  check_acc_shape(c.s, sh);
  StepPlan out;
  if (c.s.out(0) >= 0)
    if (const uint64_t bytes = c.gemm_temp_bytes(acc_gemm(c.s, sh)); bytes > 0) out.scratch.push_back(bytes);
  return out;
}

StepRun prepare_acc(const OpContext& c) {
  const StepView& s = c.s;
  FcShape sh;
  check_acc_shape(s, sh);
  const int32_t dz = s.in(1), dw = s.out(0), db = s.out(1);
  Kernel bias_grad;
  if (db >= 0) {
    Defines d;
    d.set("COLS", sh.m).set("HAS_BIAS", 0).set("ACT", CLTRAIN_ACT_NONE).set("VEC", channel_lanes(sh.m)).set("ACC", 1);
    c.storage(d, "DY_H", dz);
    bias_grad = c.kernel(kFamily, d, "bias_grad");
    set_args(bias_grad, c.pool(), c.offset(dz), c.offset(db), static_cast<cl_uint>(sh.n));
  }
  std::vector<PreparedGemm> gs;
  if (dw >= 0) gs.push_back(c.prepare_gemm(acc_gemm(s, sh), c.num_scratch() == 0 ? -1 : c.scratch(0)));
  const uint64_t cols = sh.m / channel_lanes(sh.m);
  return [bias_grad, gs, cols](const Queue& q, const cltrain_run_args*) {
    if (bias_grad) q.launch_1d(bias_grad, cols);
    for (const PreparedGemm& g : gs) run_gemm(q, g);
  };
}

}  // namespace

const OpFamily kOp_FULLY_CONNECTED = {check, prepare, plan, true};
const OpFamily kOp_ACCUMULATE_FC_GRADS = {check_acc, prepare_acc, plan_acc, true};

}  // namespace cltrain::ocl
