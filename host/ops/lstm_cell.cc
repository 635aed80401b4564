// LSTM_CELL_STATE and LSTM_CELL_OUTPUT: one LSTM step's element-wise gate math, made by the
// training pass lstm-cells (passes/lstm_cells.cc) from the ops a converter writes; never loaded
// from or written to a file (no builtin code).
//   LSTM_CELL_STATE   fwd in [z, c_prev] out [c]; bwd in [z, c_prev, dc, dz_in] out [dz, dc_prev]
//   LSTM_CELL_OUTPUT  fwd in [z, c] out [h];      bwd in [z, c, dh, dc_in] out [dz, dc]
// z holds the four gates' pre-activations along its last axis, params.perm[0..3] the part of the
// input, forget, cell and output gate.
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

void check(OperandCheck& c) {
  c.require_float(0);
  c.require_float(1);
  const Tensor& z = c.in(0);
  const Tensor& state = c.in(1);
  if (z.shape.empty() || z.shape.back() % 4 != 0)
    c.bad("gates " + shape_str(z.shape) + " do not hold four equal parts along the last axis");
  std::vector<int64_t> part(z.shape.begin(), z.shape.end());
  part.back() /= 4;
  if (std::vector<int64_t>(state.shape.begin(), state.shape.end()) != part)
    c.bad("state " + shape_str(state.shape) + " is not one gate part of " + shape_str(z.shape));
  int seen = 0;
  for (int k = 0; k < 4; ++k) {
    const int32_t p = c.op.params.perm[k];
    if (p < 0 || p > 3 || (seen & (1 << p))) c.bad("the gate parts are not a permutation of 0..3");
    seen |= 1 << p;
  }
  c.expect_output(part);
}

// c's gradient so far (the next step's dc_prev) is dc_in and dc both: the step adds into it.
void backward_output(StepBuilder& s) {
  const int32_t z = s.input(0), c = s.input(1);
  const int32_t prior = s.grad_so_far(c);
  s.in = {z, c, s.dy(), prior};
  const int32_t dz = s.grad_of(z);
  s.out = {dz, prior >= 0 ? prior : s.grad_of(c)};
}

// z's gradient, whose output part LSTM_CELL_OUTPUT's backward wrote, is dz_in and dz both.
void backward_state(StepBuilder& s) {
  const int32_t z = s.input(0), c_prev = s.input(1);
  const int32_t prior = s.grad_so_far(z);
  s.in = {z, c_prev, s.dy(), prior};
  const int32_t dz = prior >= 0 ? prior : s.grad_of(z);
  s.out = {dz, s.grad_of(c_prev)};
}

// Per state element: forward 3 activations (LOGISTIC 3, TANH 5) and 3 arithmetic for the state,
// 1 activation (3) + TANH (5) + 1 product for the output; backward about twice that.
template <uint64_t kForward, uint64_t kBackward>
uint64_t flops(const StepTensors& s) {
  return s.elements(s.in(1)) * (s.forward() ? kForward : kBackward);
}

OpDescriptor cell(int32_t op, void (*backward)(StepBuilder&), uint64_t (*cost)(const StepTensors&)) {
  OpDescriptor d = descriptor_of(op);
  d.min_inputs = d.max_inputs = d.optional_from = 2;
  d.check = check;
  d.backward = backward;
  d.flops = cost;
  return d;
}

}  // namespace

const OpDescriptor kOpDesc_LSTM_CELL_STATE = cell(CLTRAIN_OP_LSTM_CELL_STATE, backward_state, flops<14, 26>);
const OpDescriptor kOpDesc_LSTM_CELL_OUTPUT = cell(CLTRAIN_OP_LSTM_CELL_OUTPUT, backward_output, flops<9, 18>);

}  // namespace cltrain
