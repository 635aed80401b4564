// TRANSPOSE: y's axis d is x's axis perm[d], from the constant int32 [rank] perm operand.
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) {
  return {fb::BuiltinOptions::TransposeOptions, fb::CreateTransposeOptions(fbb).Union()};
}

// Completes params.perm from the perm operand (negative entries count from the end, as
// TensorFlow takes them).
void check(OperandCheck& c) {
  c.require_float(0);
  const Tensor& x = c.in(0);
  const int32_t rank = static_cast<int32_t>(x.shape.size());
  if (rank < 1 || rank > CLTRAIN_MAX_RANK)
    c.bad("input " + shape_str(x.shape) + " has rank " + std::to_string(rank) + " (1 to " +
          std::to_string(CLTRAIN_MAX_RANK) + " are supported)");
  if (c.in(1).shape != std::vector<int32_t>{rank})
    c.bad("perm shape " + shape_str(c.in(1).shape) + " is not [" + std::to_string(rank) + "] for input " +
          shape_str(x.shape));
  const std::vector<int32_t> v = c.int32_values(1);
  if (v.size() != static_cast<size_t>(rank)) c.bad("perm operand has " + std::to_string(v.size()) + " values");
  cltrain_op_params& params = c.op.params;
  bool seen[CLTRAIN_MAX_RANK] = {};
  std::vector<int64_t> y;
  for (int32_t d = 0; d < CLTRAIN_MAX_RANK; ++d) {
    params.perm[d] = d;
    if (d >= rank) continue;
    const int32_t given = v[static_cast<size_t>(d)];
    const int32_t axis = given < 0 ? given + rank : given;
    if (axis < 0 || axis >= rank || seen[axis]) c.bad("perm " + shape_str(v) + " is not a permutation of the axes");
    seen[axis] = true;
    params.perm[d] = axis;
    y.push_back(x.shape[static_cast<size_t>(axis)]);
  }
  c.expect_output(y);
}

void backward(StepBuilder& s) {
  s.in = {s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

}  // namespace

const OpDescriptor kOpDesc_TRANSPOSE = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_TRANSPOSE);
  d.min_inputs = d.max_inputs = d.optional_from = 2;  // x, perm
  d.constant = {1, "perm", false};
  d.options = fb::BuiltinOptions::TransposeOptions;
  d.write_options = write_options;
  d.check = check;
  d.fixed_batch = [](const Operator& op) -> const char* {
    return op.params.perm[0] != 0 ? "moves the batch axis" : nullptr;
  };
  d.backward = backward;
  return d;
}();

}  // namespace cltrain
