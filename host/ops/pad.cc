// PAD: zeros around x, per axis as the constant int32 [rank, 2] paddings operand says. PADV2: the
// same with its constant float value (any, -inf included: PyTorch's padded max-pool) around x.
#include <cstring>

#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) {
  return {fb::BuiltinOptions::PadOptions, fb::CreatePadOptions(fbb).Union()};
}

WrittenOptions write_v2_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) {
  return {fb::BuiltinOptions::PadV2Options, fb::CreatePadV2Options(fbb).Union()};
}

// Completes params.pad_before and pad_after from the paddings operand.
void check(OperandCheck& c) {
  c.require_float(0);
  const Tensor& x = c.in(0);
  const Tensor& p = c.in(1);
  const int32_t rank = static_cast<int32_t>(x.shape.size());
  if (p.shape != std::vector<int32_t>{rank, 2})
    c.bad("paddings shape " + graph::shape_str(p.shape) + " is not [" + std::to_string(rank) + ",2] for input " +
          graph::shape_str(x.shape));
  const std::vector<int32_t> v = c.int32_values(1);
  if (v.size() != 2 * static_cast<size_t>(rank)) c.bad("paddings operand has " + std::to_string(v.size()) + " values");
  std::vector<int64_t> y;
  cltrain_op_params& params = c.op.params;
  for (int32_t d = 0; d < CLTRAIN_MAX_RANK; ++d) {
    params.pad_before[d] = params.pad_after[d] = 0;
    if (d >= rank) continue;
    const int32_t before = v[2 * static_cast<size_t>(d)], after = v[2 * static_cast<size_t>(d) + 1];
    if (before < 0 || after < 0)
      c.bad("paddings of axis " + std::to_string(d) + " (" + std::to_string(before) + "," + std::to_string(after) +
            ") are negative");
    params.pad_before[d] = before;
    params.pad_after[d] = after;
    y.push_back(int64_t{x.shape[static_cast<size_t>(d)]} + before + after);
  }
  c.expect_output(y);
}

void check_v2(OperandCheck& c) {
  const Tensor& v = c.in(2);
  if (v.dtype != CLTRAIN_FLOAT32 || !v.is_constant() || v.elements() != 1 || v.data.size() != 4)
    c.bad("constant_values " + c.label(c.op.inputs[2]) + " is not one constant float32");
  std::memcpy(&c.op.params.pad_value, v.data.data(), 4);
  check(c);
}

// The step reads x alone: the value is params.pad_value.
void forward_v2(StepBuilder& s) { s.in = {s.input(0)}; }

const char* fixed_batch(const Operator& op) {
  return op.params.pad_before[0] != 0 || op.params.pad_after[0] != 0 ? "pads the batch axis" : nullptr;
}

void backward(StepBuilder& s) {
  s.in = {s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

}  // namespace

const OpDescriptor kOpDesc_PAD = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_PAD);
  d.min_inputs = d.max_inputs = d.optional_from = 2;  // x, paddings
  d.constant = {1, "paddings", false};
  d.options = fb::BuiltinOptions::PadOptions;
  d.write_options = write_options;
  d.check = check;
  d.fixed_batch = fixed_batch;
  d.backward = backward;
  return d;
}();

const OpDescriptor kOpDesc_PADV2 = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_PADV2);
  d.min_inputs = d.max_inputs = d.optional_from = 3;  // x, paddings, constant_values
  d.constant = {1, "paddings", false};
  d.fixed_constants = true;  // the value is the layer's, never trained
  d.options = fb::BuiltinOptions::PadV2Options;
  d.write_options = write_v2_options;
  d.check = check_v2;
  d.fixed_batch = fixed_batch;
  d.forward = forward_v2;
  d.backward = backward;
  return d;
}();

}  // namespace cltrain
