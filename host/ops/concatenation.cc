// CONCATENATION of up to CLTRAIN_MAX_STEP_IO inputs along params.axis.
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

void read_options(const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
  const auto* o = fo.builtin_options_as_ConcatenationOptions();
  p.axis = o->axis();
  p.activation = r.activation(o->fused_activation_function());
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  return {
      fb::BuiltinOptions::ConcatenationOptions,
      fb::CreateConcatenationOptions(fbb, op.params.axis, static_cast<fb::ActivationFunctionType>(op.params.activation))
          .Union()};
}

// Makes params.axis non-negative and sets params.concat_extents.
void check(OperandCheck& c) {
  const size_t rank = c.in(0).shape.size();
  for (size_t k = 0; k < c.op.inputs.size(); ++k) {
    c.require_float(k);
    if (c.in(k).shape.size() != rank)
      c.bad("input " + std::to_string(k) + " shape " + shape_str(c.in(k).shape) + " differs in rank from input 0 " +
            shape_str(c.in(0).shape));
  }
  if (rank == 0) c.bad("inputs are scalars");
  const int64_t axis = c.op.params.axis;
  if (axis < -static_cast<int64_t>(rank) || axis >= static_cast<int64_t>(rank))
    c.bad("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  const size_t ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
  c.op.params.axis = static_cast<int32_t>(ax);
  std::vector<int64_t> y(c.in(0).shape.begin(), c.in(0).shape.end());
  y[ax] = 0;
  for (size_t k = 0; k < c.op.inputs.size(); ++k) {
    const std::vector<int32_t>& s = c.in(k).shape;
    for (size_t d = 0; d < rank; ++d)
      if (d != ax && s[d] != y[d])
        c.bad("input " + std::to_string(k) + " shape " + shape_str(s) + " does not fit input 0 " +
              shape_str(c.in(0).shape) + " (all dimensions but axis " + std::to_string(ax) + " must be equal)");
    y[ax] += s[ax];
    c.op.params.concat_extents[k] = s[ax];
  }
  c.expect_output(y);
}

void backward(StepBuilder& s) {
  s.in = {s.dy()};
  for (int32_t x : s.op.inputs) s.out.push_back(s.grad_of(x));
}

}  // namespace

const OpDescriptor kOpDesc_CONCATENATION = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_CONCATENATION);
  // Its backward writes one gradient per input, at most CLTRAIN_MAX_STEP_IO.
  d.min_inputs = 1, d.max_inputs = d.optional_from = CLTRAIN_MAX_STEP_IO;
  d.fused_activation = FusedActivation::kOnlyNone;
  d.options = fb::BuiltinOptions::ConcatenationOptions;
  d.options_required = true;  // the axis
  d.read_options = read_options;
  d.write_options = write_options;
  d.check = check;
  d.fixed_batch = [](const Operator& op) -> const char* {
    return op.params.axis == 0 ? "concatenates along the batch axis" : nullptr;
  };
  d.backward = backward;
  return d;
}();

}  // namespace cltrain
