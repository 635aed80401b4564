// LSTM_CELL_STATE and LSTM_CELL_OUTPUT (kernels/lstm_cell.cl), one work-item per state element
// (rows x H, launched as rows of H):
//   LSTM_CELL_STATE   fwd in [z, c_prev] out [c]     bwd in [z, c_prev, dc, dz_in] out [dz, dc_prev]
//   LSTM_CELL_OUTPUT  fwd in [z, c] out [h]          bwd in [z, c, dh, dc_in] out [dz, dc]
// One program for both ops and phases: sizes and gate parts are arguments.
#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "lstm_cell.cl";

std::string check(const StepView& s) {
  std::string why;
  if (s.step.phase != CLTRAIN_PHASE_FORWARD && s.step.phase != CLTRAIN_PHASE_BACKWARD)
    return "has no " + phase_name(s.step.phase) + " step";
  if (!(why = require_tensor(s, s.in(0), "gates")).empty()) return why;
  if (!(why = require_tensor(s, s.in(1), "state")).empty()) return why;
  const cltrain_tensor_desc& state = s.tensor(s.in(1));
  const uint64_t n = s.count(s.in(1));
  if (state.rank < 1 || n == 0) return "state has no elements";
  if (!(why = require_count(s, s.in(0), "gates", 4 * n)).empty()) return why;
  int seen = 0;
  for (int k = 0; k < 4; ++k) {
    const int32_t p = s.step.params.perm[k];
    if (p < 0 || p > 3 || (seen & (1 << p))) return "the gate parts are not a permutation of 0..3";
    seen |= 1 << p;
  }
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) return require_count(s, s.out(0), "output", n);
  if (!(why = require_count(s, s.in(2), "output gradient", n)).empty()) return why;
  // The prior gradient is dz's (LSTM_CELL_STATE) or the state's (LSTM_CELL_OUTPUT).
  const uint64_t prior = s.step.op == CLTRAIN_OP_LSTM_CELL_STATE ? 4 * n : n;
  if (s.in(3) >= 0 && !(why = require_count(s, s.in(3), "prior gradient", prior)).empty()) return why;
  if (s.out(0) >= 0 && !(why = require_count(s, s.out(0), "gates gradient", 4 * n)).empty()) return why;
  if (s.out(1) >= 0 && !(why = require_count(s, s.out(1), "state gradient", n)).empty()) return why;
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const cltrain_tensor_desc& state = s.tensor(s.in(1));
  const uint64_t count = s.count(s.in(1));
  const cl_uint width = static_cast<cl_uint>(state.dims[state.rank - 1]);
  cl_uint4 parts{};
  for (int k = 0; k < 4; ++k) parts.s[k] = static_cast<cl_uint>(s.step.params.perm[k]) * width;
  const bool state_op = s.step.op == CLTRAIN_OP_LSTM_CELL_STATE;
  Kernel k;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    k = c.kernel(kFamily, Defines(), state_op ? "lstm_state_forward" : "lstm_output_forward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.out(0)), width, parts);
  } else {
    const cl_uint flags = (s.out(0) >= 0 ? 1u : 0u) | (s.out(1) >= 0 ? 2u : 0u) | (s.in(3) >= 0 ? 4u : 0u);
    k = c.kernel(kFamily, Defines(), state_op ? "lstm_state_backward" : "lstm_output_backward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.in(2)), c.offset_or_zero(s.in(3)),
             c.offset_or_zero(s.out(0)), c.offset_or_zero(s.out(1)), width, parts, flags);
  }
  return row_launch(c, k, View6{1, 1, 1, 1, count / width, width});
}

}  // namespace

const OpFamily kOp_LSTM_CELL_STATE = {check, prepare};
const OpFamily kOp_LSTM_CELL_OUTPUT = {check, prepare};

}  // namespace cltrain::ocl
