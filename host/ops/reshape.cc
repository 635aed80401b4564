// RESHAPE: the same elements under another shape, from an optional constant int32 shape operand
// (one entry may be -1, inferred).
#include <algorithm>
#include <cstring>

#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

// ReshapeOptions.new_shape: the shape operand if there is one, else the output's shape.
std::vector<int32_t> target_shape(const Model& m, const Operator& op) {
  auto valid = [&](int32_t t) { return t >= 0 && static_cast<size_t>(t) < m.tensors.size(); };
  if (op.inputs.size() > 1 && valid(op.inputs[1])) {
    const Tensor& s = m.tensors[static_cast<size_t>(op.inputs[1])];
    if (s.dtype == CLTRAIN_INT32 && !s.data.empty()) {
      std::vector<int32_t> v(s.data.size() / 4);
      std::memcpy(v.data(), s.data.data(), v.size() * 4);
      return v;
    }
  }
  if (!op.outputs.empty() && valid(op.outputs[0])) return m.tensors[static_cast<size_t>(op.outputs[0])].shape;
  return {};
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model& m, const Operator& op) {
  return {fb::BuiltinOptions::ReshapeOptions,
          fb::CreateReshapeOptions(fbb, fbb.CreateVector(target_shape(m, op))).Union()};
}

// The output shape a target gives for x's element count (-1 inferred), or an empty one.
std::vector<int64_t> resolved(const std::vector<int32_t>& target, uint64_t total) {
  uint64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1 && infer < 0)
      infer = static_cast<int>(i);
    else if (target[i] < 1)
      return {};
    else
      known *= static_cast<uint64_t>(target[i]);
  }
  std::vector<int64_t> out(target.begin(), target.end());
  if (infer >= 0) out[static_cast<size_t>(infer)] = static_cast<int64_t>(total / known);
  if (total % known != 0 || (infer < 0 && known != total)) return {};
  return out;
}

void check(OperandCheck& c) {
  c.require_float(0);
  if (c.has_input(1) && c.in(1).shape.size() != 1)
    c.bad("shape operand " + c.label(c.op.inputs[1]) + " is not a constant int32 vector");
  if (c.inferring()) {
    if (!c.has_input(1)) c.bad("has no shape operand to infer its output from");
    const std::vector<int64_t> y = resolved(c.int32_values(1), c.in(0).elements());
    if (y.empty()) c.bad("cannot reshape " + shape_str(c.in(0).shape) + " to " + shape_str(c.int32_values(1)));
    c.expect_output(y);
  }
  if (c.in(0).elements() != c.out(0).elements())
    c.bad("cannot reshape " + shape_str(c.in(0).shape) + " to " + shape_str(c.out(0).shape));
  if (c.has_input(1)) {
    // Each entry is the output's dimension, or -1 (inferred) once.
    const std::vector<int32_t> target = c.int32_values(1);
    const std::vector<int32_t>& y = c.out(0).shape;
    bool ok = target.size() == y.size() && std::count(target.begin(), target.end(), -1) <= 1;
    for (size_t d = 0; ok && d < y.size(); ++d) ok = target[d] == -1 || target[d] == y[d];
    if (!ok) c.bad("shape operand " + shape_str(target) + " does not match output shape " + shape_str(y));
  }
}

void backward(StepBuilder& s) {
  s.in = {s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

// y shares x's bytes (both only read from then on), dx those of dy: the steps then copy nothing.
InPlacePair in_place(const cltrain_step_desc& step) {
  if (step.phase == CLTRAIN_PHASE_FORWARD) return {0, 0, false};
  if (step.phase == CLTRAIN_PHASE_BACKWARD) return {0, 0, true};
  return {};
}

}  // namespace

const OpDescriptor kOpDesc_RESHAPE = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_RESHAPE);
  d.min_inputs = 1, d.max_inputs = 2, d.optional_from = 1;  // x, optional shape operand
  d.constant = {1, "shape", true};
  d.options = fb::BuiltinOptions::ReshapeOptions;
  d.write_options = write_options;
  d.check = check;
  d.backward = backward;
  d.in_place = in_place;
  d.half_storage = true;
  return d;
}();

}  // namespace cltrain
