// FullyConnected: y = act(x W^T + b) with activation NONE or RELU.
//   forward:  GEMM y = x W^T (CLBlast), then fc_bias_act (bias and activation, in place).
//   backward: fc_act_grad (dz = dy * act'(y), in place on dy), fc_bias_grad (db = column sums
//             of dz), GEMMs dW = dz^T x and dx = dz W.
#include "launch.h"
#include "memory_plan.h"
#include "ops/ops.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "fully_connected.cl";

struct FcShape {
  uint64_t n = 0, m = 0, k = 0;  // x [N, K], W [M, K], y [N, M]
};

// Empty when the step fits; fills shape.
std::string check_shape(const StepView& s, FcShape& shape) {
  const int act = s.step.params.activation;
  if (act != CLTRAIN_ACT_NONE && act != CLTRAIN_ACT_RELU)
    return "fused activation " + std::to_string(act) + " is not supported (NONE and RELU are)";
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
      return "output gradient has " + std::to_string(s.count(dy)) + " elements, not a multiple of M=" +
             std::to_string(shape.m);
    shape.n = s.count(dy) / shape.m;
    if (act == CLTRAIN_ACT_RELU && !(why = require_count(s, y, "output", shape.n * shape.m)).empty()) return why;
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

StepRun prepare_forward(Backend& b, const StepView& s, const FcShape& sh) {
  const int32_t x = s.in(0), w = s.in(1), bias = s.in(2), y = s.out(0);
  Gemm g;
  g.ta = clblast::Transpose::kNo;
  g.tb = clblast::Transpose::kYes;
  g.m = sh.n, g.n = sh.m, g.k = sh.k;
  g.a_off = elem_offset(b, x), g.lda = sh.k;
  g.b_off = elem_offset(b, w), g.ldb = sh.k;
  g.c_off = elem_offset(b, y), g.ldc = sh.m;
  g.what = s.what() + " y = x W^T";
  plan_gemm(b, g);

  const bool relu = s.step.params.activation == CLTRAIN_ACT_RELU;
  Kernel bias_act;
  if (bias >= 0 || relu) {
    Defines d;
    d.set("N", sh.n).set("M", sh.m).set("HAS_BIAS", bias >= 0).set("ACT_RELU", relu);
    bias_act = make_kernel(b, kFamily, d, "fc_bias_act");
    set_args(bias_act, b.pool, elem_offset(b, y), bias >= 0 ? elem_offset(b, bias) : cl_uint{0});
  }
  const uint64_t count = sh.n * sh.m;
  return [&b, g, bias_act, count](const cltrain_run_args*) {
    run_gemm(b, g);
    if (bias_act) launch_1d(b, bias_act, count);
  };
}

StepRun prepare_backward(Backend& b, const StepView& s, const FcShape& sh) {
  const int32_t x = s.in(0), w = s.in(1), y = s.in(2), dy = s.in(3);
  const int32_t dx = s.out(0), dw = s.out(1), db = s.out(2);
  Defines d;
  d.set("N", sh.n).set("M", sh.m);

  Kernel act_grad, bias_grad;
  if (s.step.params.activation == CLTRAIN_ACT_RELU) {
    act_grad = make_kernel(b, kFamily, d, "fc_act_grad");
    set_args(act_grad, b.pool, elem_offset(b, y), elem_offset(b, dy));
  }
  if (db >= 0) {
    bias_grad = make_kernel(b, kFamily, d, "fc_bias_grad");
    set_args(bias_grad, b.pool, elem_offset(b, dy), elem_offset(b, db));
  }
  std::vector<Gemm> gemms;
  if (dw >= 0) {  // dW [M, K] = dz^T [M, N] x [N, K]
    Gemm g;
    g.ta = clblast::Transpose::kYes;
    g.m = sh.m, g.n = sh.k, g.k = sh.n;
    g.a_off = elem_offset(b, dy), g.lda = sh.m;
    g.b_off = elem_offset(b, x), g.ldb = sh.k;
    g.c_off = elem_offset(b, dw), g.ldc = sh.k;
    g.what = s.what() + " dW = dz^T x";
    gemms.push_back(g);
  }
  if (dx >= 0) {  // dx [N, K] = dz [N, M] W [M, K]
    Gemm g;
    g.m = sh.n, g.n = sh.k, g.k = sh.m;
    g.a_off = elem_offset(b, dy), g.lda = sh.m;
    g.b_off = elem_offset(b, w), g.ldb = sh.k;
    g.c_off = elem_offset(b, dx), g.ldc = sh.k;
    g.what = s.what() + " dx = dz W";
    gemms.push_back(g);
  }
  for (const Gemm& g : gemms) plan_gemm(b, g);
  const uint64_t count = sh.n * sh.m, cols = sh.m;
  return [&b, act_grad, bias_grad, gemms, count, cols](const cltrain_run_args*) {
    if (act_grad) launch_1d(b, act_grad, count);
    if (bias_grad) launch_1d(b, bias_grad, cols);
    for (const Gemm& g : gemms) run_gemm(b, g);
  };
}

StepRun prepare(Backend& b, const StepView& s) {
  FcShape sh;
  check_shape(s, sh);
  return s.step.phase == CLTRAIN_PHASE_FORWARD ? prepare_forward(b, s, sh) : prepare_backward(b, s, sh);
}

}  // namespace

const OpFamily kOp_FULLY_CONNECTED = {check, prepare};

}  // namespace cltrain::ocl
