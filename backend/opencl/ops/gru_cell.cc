// GRU_CELL (kernels/gru_cell.cl), one work-item per state element (rows x H, launched as rows of H):
//   fwd in [xp, hp, h_prev] out [h]; bwd in [xp, hp, h_prev, dh] out [dxp, dhp, dh_prev]
// One program for both phases: sizes and gate parts are arguments.
#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "gru_cell.cl";

std::string check(const StepView& s) {
  std::string why;
  if (s.step.phase != CLTRAIN_PHASE_FORWARD && s.step.phase != CLTRAIN_PHASE_BACKWARD)
    return "has no " + phase_name(s.step.phase) + " step";
  if (!(why = require_tensor(s, s.in(2), "state")).empty()) return why;
  const uint64_t n = s.count(s.in(2));
  if (s.tensor(s.in(2)).rank < 1 || n == 0) return "state has no elements";
  if (!(why = require_count(s, s.in(0), "input projection", 3 * n)).empty()) return why;
  if (!(why = require_count(s, s.in(1), "state projection", 3 * n)).empty()) return why;
  for (int half = 0; half < 2; ++half) {
    int seen = 0;
    for (int k = 0; k < 3; ++k) {
      const int32_t p = s.step.params.perm[half * 3 + k];
      if (p < 0 || p > 2 || (seen & (1 << p))) return "the gate parts are not a permutation of 0..2";
      seen |= 1 << p;
    }
  }
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return require_count(s, s.out(0), "output", n);
  if (!(why = require_count(s, s.in(3), "output gradient", n)).empty()) return why;
  for (int k = 0; k < 3; ++k)
    if (s.out(k) >= 0 && !(why = require_count(s, s.out(k), "gradient", k < 2 ? 3 * n : n)).empty()) return why;
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const cltrain_tensor_desc& state = s.tensor(s.in(2));
  const uint64_t count = s.count(s.in(2));
  const cl_uint width = static_cast<cl_uint>(state.dims[state.rank - 1]);
  cl_uint4 xparts{}, hparts{};
  for (int k = 0; k < 3; ++k) {
    xparts.s[k] = static_cast<cl_uint>(s.step.params.perm[k]) * width;
    hparts.s[k] = static_cast<cl_uint>(s.step.params.perm[3 + k]) * width;
  }
  Kernel k;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    k = c.kernel(kFamily, Defines(), "gru_forward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.in(2)), c.offset(s.out(0)), width, xparts,
             hparts);
  } else {
    const cl_uint flags = (s.out(0) >= 0 ? 1u : 0u) | (s.out(1) >= 0 ? 2u : 0u) | (s.out(2) >= 0 ? 4u : 0u);
    k = c.kernel(kFamily, Defines(), "gru_backward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.in(2)), c.offset(s.in(3)),
             c.offset_or_zero(s.out(0)), c.offset_or_zero(s.out(1)), c.offset_or_zero(s.out(2)), width, xparts, hparts,
             flags);
  }
  return row_launch(c, k, View6{1, 1, 1, 1, count / width, width});
}

}  // namespace

const OpFamily kOp_GRU_CELL = {check, prepare};

}  // namespace cltrain::ocl
