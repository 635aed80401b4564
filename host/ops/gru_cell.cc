// GRU_CELL: one GRU step's element-wise math (Keras's reset_after=True, PyTorch's nn.GRU), made
// by the training pass gru-cells (passes/gru_cells.cc) from the ops a converter writes; never
// loaded from or written to a file (no builtin code).
//   fwd in [xp, hp, h_prev] out [h]; bwd in [xp, hp, h_prev, dh] out [dxp, dhp, dh_prev]
// xp and hp hold the input's and the state's projections, three gate parts along the last axis;
// params.perm[0..2] the update, reset and candidate parts of xp, perm[3..5] those of hp.
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

void check(OperandCheck& c) {
  for (size_t k = 0; k < 3; ++k) c.require_float(k);
  const Tensor& xp = c.in(0);
  if (xp.shape.empty() || xp.shape.back() % 3 != 0)
    c.bad("input projection " + shape_str(xp.shape) + " does not hold three equal parts along the last axis");
  if (c.in(1).shape != xp.shape)
    c.bad("state projection " + shape_str(c.in(1).shape) + " differs from the input's " + shape_str(xp.shape));
  std::vector<int64_t> part(xp.shape.begin(), xp.shape.end());
  part.back() /= 3;
  if (std::vector<int64_t>(c.in(2).shape.begin(), c.in(2).shape.end()) != part)
    c.bad("state " + shape_str(c.in(2).shape) + " is not one gate part of " + shape_str(xp.shape));
  for (int half = 0; half < 2; ++half) {
    int seen = 0;
    for (int k = 0; k < 3; ++k) {
      const int32_t p = c.op.params.perm[half * 3 + k];
      if (p < 0 || p > 2 || (seen & (1 << p))) c.bad("the gate parts are not a permutation of 0..2");
      seen |= 1 << p;
    }
  }
  c.expect_output(part);
}

void backward(StepBuilder& s) {
  const int32_t xp = s.input(0), hp = s.input(1), h_prev = s.input(2);
  s.in = {xp, hp, h_prev, s.dy()};
  const int32_t dxp = s.grad_of(xp);
  const int32_t dhp = s.grad_of(hp);
  s.out = {dxp, dhp, s.grad_of(h_prev)};
}

// Per state element: 2 LOGISTIC (3 each), TANH (5) and 9 arithmetic forward; about twice that back.
uint64_t flops(const StepTensors& s) { return s.elements(s.in(2)) * (s.forward() ? 20 : 40); }

}  // namespace

const OpDescriptor kOpDesc_GRU_CELL = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_GRU_CELL);
  d.min_inputs = d.max_inputs = d.optional_from = 3;
  d.check = check;
  d.backward = backward;
  d.flops = flops;
  return d;
}();

}  // namespace cltrain
