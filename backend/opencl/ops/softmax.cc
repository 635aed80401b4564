// Softmax over the last dimension with params.beta: softmax_forward, softmax_backward
// (kernels/softmax.cl), one work-item per row.
#include <cmath>

#include "launch.h"
#include "ops/ops.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "softmax.cl";

std::string check_softmax(const StepView& s) {
  std::string why;
  const int32_t first = s.in(0);  // x forward, y backward
  if (!(why = require_tensor(s, first, s.step.phase == CLTRAIN_PHASE_FORWARD ? "input" : "output")).empty())
    return why;
  const cltrain_tensor_desc& t = s.tensor(first);
  if (t.rank < 1 || t.dims[t.rank - 1] <= 0) return "needs a non-empty last dimension";
  if (!std::isfinite(s.step.params.beta)) return "beta is not finite";
  const uint64_t n = s.count(first);
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return require_count(s, s.out(0), "output", n);
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    if (!(why = require_count(s, s.in(1), "output gradient", n)).empty()) return why;
    return require_count(s, s.out(0), "input gradient", n);
  }
  return "has no " + phase_name(s.step.phase) + " step";
}

StepRun prepare_softmax(Backend& b, const StepView& s) {
  const cltrain_tensor_desc& t = s.tensor(s.in(0));
  const uint64_t cols = static_cast<uint64_t>(t.dims[t.rank - 1]);
  const uint64_t rows = s.count(s.in(0)) / cols;
  Defines d;
  d.set("ROWS", rows).set("COLS", cols).set_float("BETA", s.step.params.beta);
  Kernel k;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    k = make_kernel(b, kFamily, d, "softmax_forward");
    set_args(k, b.pool, elem_offset(b, s.in(0)), elem_offset(b, s.out(0)));
  } else {
    k = make_kernel(b, kFamily, d, "softmax_backward");
    set_args(k, b.pool, elem_offset(b, s.in(0)), elem_offset(b, s.in(1)), elem_offset(b, s.out(0)));
  }
  return [&b, k, rows](const cltrain_run_args*) { launch_1d(b, k, rows); };
}

}  // namespace

const OpFamily kOp_SOFTMAX = {check_softmax, prepare_softmax};

}  // namespace cltrain::ocl
