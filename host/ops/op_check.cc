// OperandCheck, and the checks of one operator that every op shares: its slots, its constant
// operand and its fused activation, before the descriptor's own check().
#include <algorithm>
#include <cstring>

#include "graph/activations.h"
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {

using graph::shape_str;

OperandCheck::OperandCheck(Model& m, size_t index, const std::string& what, bool infer)
    : op(m.operators[index]), m_(m), what_(what), label_(graph::operator_label(m, index)), infer_(infer) {}

const Tensor& OperandCheck::in(size_t k) const { return m_.tensors[static_cast<size_t>(op.inputs[k])]; }
const Tensor& OperandCheck::out(size_t k) const { return m_.tensors[static_cast<size_t>(op.outputs[k])]; }

void OperandCheck::bad(const std::string& msg) const { graph::fail(what_, label_ + ": " + msg); }

std::string OperandCheck::label(int32_t tensor) const { return graph::tensor_label(m_, tensor); }

void OperandCheck::require_float(size_t k) const {
  if (in(k).dtype != CLTRAIN_FLOAT32) bad("input " + std::to_string(k) + " " + label(op.inputs[k]) + " is not float32");
}

void OperandCheck::require_rank4(const Tensor& x, const char* what, const char* layout) const {
  if (x.shape.size() != 4) bad(std::string(what) + " shape " + shape_str(x.shape) + " is not " + layout);
}

void OperandCheck::same_shape() {
  if (infer_) {
    m_.tensors[static_cast<size_t>(op.outputs[0])].shape = in(0).shape;
    return;
  }
  if (in(0).shape != out(0).shape)
    bad("output shape " + shape_str(out(0).shape) + " differs from input shape " + shape_str(in(0).shape));
}

void OperandCheck::expect_output(const std::vector<int64_t>& computed) {
  std::vector<int32_t> c;
  bool fits = true;
  for (int64_t d : computed) {
    fits = fits && d >= 1 && d <= INT32_MAX;
    c.push_back(static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(d, 0), INT32_MAX)));
  }
  if (!fits) bad("computed output shape is out of range");
  if (infer_) {
    m_.tensors[static_cast<size_t>(op.outputs[0])].shape = c;
    return;
  }
  if (out(0).shape != c) bad("output shape " + shape_str(out(0).shape) + " differs from the computed " + shape_str(c));
}

int64_t OperandCheck::window(int axis, int64_t filter, int64_t stride, int64_t dilation) const {
  const cltrain_op_params& p = op.params;
  if (p.padding != CLTRAIN_PADDING_SAME && p.padding != CLTRAIN_PADDING_VALID)
    bad("padding " + std::to_string(p.padding) + " is not SAME (0) or VALID (1)");
  const char* hw = axis == 1 ? "height" : "width";
  if (stride < 1) bad(std::string("stride ") + hw + " " + std::to_string(stride) + " is less than 1");
  if (dilation < 1) bad(std::string("dilation ") + hw + " " + std::to_string(dilation) + " is less than 1");
  if (filter < 1) bad(std::string("filter ") + hw + " " + std::to_string(filter) + " is less than 1");
  const int64_t in_size = in(0).shape[static_cast<size_t>(axis)];
  const int64_t n = graph::window_out_size(in_size, filter, stride, dilation, p.padding);
  if (n < 1)
    bad(std::string("filter ") + hw + " " + std::to_string(filter) +
        (dilation > 1 ? " (dilation " + std::to_string(dilation) + ")" : "") + " does not fit input " + hw + " " +
        std::to_string(in_size) + " with VALID padding");
  return n;
}

std::vector<int32_t> OperandCheck::int32_values(size_t k) const {
  const Tensor& t = in(k);
  std::vector<int32_t> v(t.data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

void check_slots(const Model& m, size_t index, const std::string& what) {
  const Operator& op = m.operators[index];
  const OpDescriptor* d = find_op(op.op);
  const std::string label = graph::operator_label(m, index);
  auto bad = [&](const std::string& msg) { graph::fail(what, label + ": " + msg); };
  if (!d || d->kind != CLTRAIN_KIND_MODEL || !d->check) bad("is not an operator of a model");
  const size_t min_in = static_cast<size_t>(d->min_inputs), max_in = static_cast<size_t>(d->max_inputs);
  if (op.inputs.size() < min_in || op.inputs.size() > max_in)
    bad("has " + std::to_string(op.inputs.size()) + " inputs, expected " + std::to_string(min_in) +
        (max_in > min_in ? " to " + std::to_string(max_in) : ""));
  if (op.outputs.size() != static_cast<size_t>(d->outputs))
    bad("has " + std::to_string(op.outputs.size()) + " outputs, expected " + std::to_string(d->outputs));
  for (size_t k = 0; k < std::min(op.inputs.size(), static_cast<size_t>(d->optional_from)); ++k)
    if (op.inputs[k] < 0) bad("input " + std::to_string(k) + " is required");
  const ConstantOperand& c = d->constant;
  const size_t slot = static_cast<size_t>(c.slot);
  if (c.slot >= 0 && op.inputs.size() > slot && op.inputs[slot] >= 0) {
    const Tensor& s = m.tensors[static_cast<size_t>(op.inputs[slot])];
    if (!s.is_constant() || s.dtype != CLTRAIN_INT32)
      bad(std::string(c.name) + " operand " + graph::tensor_label(m, op.inputs[slot]) +
          " is not a constant int32 tensor" +
          (s.is_constant() ? "" : std::string(" (computed ") + c.name + " are not supported)"));
  }
}

void check_operands(Model& m, size_t index, const std::string& what, bool infer) {
  OperandCheck c(m, index, what, infer);
  const OpDescriptor& d = *find_op(c.op.op);
  const int32_t a = c.op.params.activation;
  if (!activation_supported(a)) c.bad("fused activation " + graph::activation_str(a) + " is not supported");
  if (d.fused_activation != FusedActivation::kAny && a != CLTRAIN_ACT_NONE)
    c.bad("fused activation " + graph::activation_str(a) + " is not supported (only NONE)");
  d.check(c);
}

void infer_output_shape(Model& m, size_t index, const std::string& what) {
  check_slots(m, index, what);
  check_operands(m, index, what, true);
}

}  // namespace cltrain
