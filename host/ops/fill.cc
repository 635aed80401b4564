// FILL: a tensor of the shape its dims operand gives (computed by shape operators from the batch,
// an RNN's zero state), every element its constant value.
#include <cstring>

#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

void check(OperandCheck& c) {
  const Tensor& v = c.in(1);
  if (v.dtype != CLTRAIN_FLOAT32 || !v.is_constant() || v.elements() != 1 || v.data.size() != 4)
    c.bad("value " + c.label(c.op.inputs[1]) + " is not one constant float32");
  std::memcpy(&c.op.params.fill_value, v.data.data(), 4);
  const std::vector<int32_t> dims = c.int32_values(0);
  if (dims.empty() || dims.size() > CLTRAIN_MAX_RANK)
    c.bad("dims operand has " + std::to_string(dims.size()) + " values");
  std::vector<int64_t> y;
  for (int32_t n : dims) {
    if (n < 1) c.bad("dims " + graph::shape_str(dims) + " are not all positive");
    y.push_back(n);
  }
  c.expect_output(y);
}

// The step reads nothing: the value is params.fill_value.
void forward(StepBuilder& s) { s.in.clear(); }

}  // namespace

const OpDescriptor kOpDesc_FILL = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_FILL);
  d.min_inputs = d.max_inputs = d.optional_from = 2;  // dims, value
  d.constant = {0, "dims", true};
  d.fixed_constants = true;
  d.check = check;
  d.forward = forward;
  return d;
}();

}  // namespace cltrain
