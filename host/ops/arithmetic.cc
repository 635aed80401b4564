// ADD, SUB, MUL, DIV: y = act(a op b) with numpy broadcasting between equal ranks;
// SQUARED_DIFFERENCE: y = (a - b)^2, MAXIMUM and MINIMUM, broadcasting the same way, without a
// fused activation; the comparisons (GREATER ... NOT_EQUAL): y = a > b (...) as a 0/1 float mask,
// broadcasting the same way, without a backward (passes/compares.cc gives them float outputs).
#include <algorithm>

#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

template <class Options>
void read_activation(const Options* o, OptionReader& r, cltrain_op_params& p) {
  if (o) p.activation = r.activation(o->fused_activation_function());
}

fb::ActivationFunctionType act(const Operator& op) {
  return static_cast<fb::ActivationFunctionType>(op.params.activation);
}

void check(OperandCheck& c) {
  c.require_float(0);
  c.require_float(1);
  const std::vector<int32_t>& a = c.in(0).shape;
  const std::vector<int32_t>& b = c.in(1).shape;
  if (a.size() != b.size())
    c.bad("operand shapes " + shape_str(a) + " and " + shape_str(b) +
          " differ in rank (broadcasting needs equal ranks)");
  std::vector<int64_t> y;
  for (size_t d = 0; d < a.size(); ++d) {
    if (a[d] != b[d] && a[d] != 1 && b[d] != 1)
      c.bad("cannot broadcast " + shape_str(a) + " with " + shape_str(b) + " (dimension " + std::to_string(d) + ": " +
            std::to_string(a[d]) + " vs " + std::to_string(b[d]) + "; each must be equal or 1)");
    y.push_back(std::max(a[d], b[d]));
  }
  c.expect_output(y);
}

// What each backward reads (cltrain_ops.h): ADD and SUB neither operand, MUL both, DIV b and
// (for db) a, SQUARED_DIFFERENCE, MAXIMUM and MINIMUM both.
void backward(StepBuilder& s) {
  const int32_t a = s.input(0), b = s.input(1);
  const int32_t da = s.grad_of(a), db = s.grad_of(b);
  const bool mul = s.op.op == CLTRAIN_OP_MUL, div = s.op.op == CLTRAIN_OP_DIV;
  const bool sqdiff =
      s.op.op == CLTRAIN_OP_SQUARED_DIFFERENCE || s.op.op == CLTRAIN_OP_MAXIMUM || s.op.op == CLTRAIN_OP_MINIMUM;
  const int32_t read_a = ((mul || div) && db >= 0) || sqdiff ? a : -1;
  const int32_t read_b = (mul && da >= 0) || div || sqdiff ? b : -1;
  s.in = {read_a, read_b, s.y_if_activation(), s.dy()};
  s.out = {da, db};
}

// Forward one op per element of y; backward per element of y and gradient asked for: Add, Sub 1,
// Mul 2, Div 2 (da) and 4 (db).
uint64_t flops(const StepTensors& s, uint64_t da_cost, uint64_t db_cost) {
  const int32_t activation = s.step.params.activation;
  if (s.forward()) {
    const uint64_t ys = s.elements(s.out(0));
    return ys + activation_forward_flops(activation) * ys;
  }
  const uint64_t ys = s.elements(s.in(3));
  uint64_t f = s.in(2) >= 0 ? activation_backward_flops(activation) * ys : 0;
  if (s.out(0) >= 0) f += da_cost * ys;
  if (s.out(1) >= 0) f += db_cost * ys;
  return f;
}

OpDescriptor binary(int32_t op, fb::BuiltinOptions options) {
  OpDescriptor d = descriptor_of(op);
  d.half_storage = true;
  d.min_inputs = d.max_inputs = d.optional_from = 2;
  d.fused_activation = FusedActivation::kAny;
  d.broadcasts = true;
  d.options = options;
  d.check = check;
  d.backward = backward;
  return d;
}

}  // namespace

const OpDescriptor kOpDesc_ADD = [] {
  OpDescriptor d = binary(CLTRAIN_OP_ADD, fb::BuiltinOptions::AddOptions);
  d.read_options = [](const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
    read_activation(fo.builtin_options_as_AddOptions(), r, p);
  };
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) -> WrittenOptions {
    return {fb::BuiltinOptions::AddOptions, fb::CreateAddOptions(fbb, act(op)).Union()};
  };
  d.flops = [](const StepTensors& s) { return flops(s, 1, 1); };
  return d;
}();

const OpDescriptor kOpDesc_SUB = [] {
  OpDescriptor d = binary(CLTRAIN_OP_SUB, fb::BuiltinOptions::SubOptions);
  d.read_options = [](const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
    read_activation(fo.builtin_options_as_SubOptions(), r, p);
  };
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) -> WrittenOptions {
    return {fb::BuiltinOptions::SubOptions, fb::CreateSubOptions(fbb, act(op)).Union()};
  };
  d.flops = [](const StepTensors& s) { return flops(s, 1, 1); };
  return d;
}();

const OpDescriptor kOpDesc_MUL = [] {
  OpDescriptor d = binary(CLTRAIN_OP_MUL, fb::BuiltinOptions::MulOptions);
  d.read_options = [](const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
    read_activation(fo.builtin_options_as_MulOptions(), r, p);
  };
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) -> WrittenOptions {
    return {fb::BuiltinOptions::MulOptions, fb::CreateMulOptions(fbb, act(op)).Union()};
  };
  d.flops = [](const StepTensors& s) { return flops(s, 2, 2); };
  return d;
}();

const OpDescriptor kOpDesc_DIV = [] {
  OpDescriptor d = binary(CLTRAIN_OP_DIV, fb::BuiltinOptions::DivOptions);
  d.read_options = [](const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
    read_activation(fo.builtin_options_as_DivOptions(), r, p);
  };
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) -> WrittenOptions {
    return {fb::BuiltinOptions::DivOptions, fb::CreateDivOptions(fbb, act(op)).Union()};
  };
  d.flops = [](const StepTensors& s) { return flops(s, 2, 4); };
  return d;
}();

// Forward a subtract and a multiply; backward per gradient a subtract and two multiplies.
const OpDescriptor kOpDesc_SQUARED_DIFFERENCE = [] {
  OpDescriptor d = binary(CLTRAIN_OP_SQUARED_DIFFERENCE, fb::BuiltinOptions::SquaredDifferenceOptions);
  d.fused_activation = FusedActivation::kNone;
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) -> WrittenOptions {
    return {fb::BuiltinOptions::SquaredDifferenceOptions, fb::CreateSquaredDifferenceOptions(fbb).Union()};
  };
  d.flops = [](const StepTensors& s) { return s.forward() ? 2 * s.elements(s.out(0)) : flops(s, 3, 4); };
  return d;
}();

// Forward a compare per element of y; backward a compare per gradient element.
OpDescriptor extreme(int32_t op) {
  OpDescriptor d = binary(op, fb::BuiltinOptions::MaximumMinimumOptions);
  d.fused_activation = FusedActivation::kNone;
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) -> WrittenOptions {
    return {fb::BuiltinOptions::MaximumMinimumOptions, fb::CreateMaximumMinimumOptions(fbb).Union()};
  };
  d.flops = [](const StepTensors& s) { return s.forward() ? s.elements(s.out(0)) : flops(s, 1, 1); };
  return d;
}

const OpDescriptor kOpDesc_MAXIMUM = extreme(CLTRAIN_OP_MAXIMUM);
const OpDescriptor kOpDesc_MINIMUM = extreme(CLTRAIN_OP_MINIMUM);

// A compare per element of y; no backward step (piecewise constant: no gradient flows).
OpDescriptor comparison(int32_t op, fb::BuiltinOptions options) {
  OpDescriptor d = binary(op, options);
  d.fused_activation = FusedActivation::kNone;
  d.piecewise_constant = true;
  d.backward = nullptr;
  d.flops = [](const StepTensors& s) { return s.forward() ? s.elements(s.out(0)) : 0; };
  return d;
}

#define CLTRAIN_COMPARISON(e, Options)                                                                           \
  const OpDescriptor kOpDesc_##e = [] {                                                                          \
    OpDescriptor d = comparison(CLTRAIN_OP_##e, fb::BuiltinOptions::Options);                                    \
    d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) -> WrittenOptions { \
      return {fb::BuiltinOptions::Options, fb::Create##Options(fbb).Union()};                                    \
    };                                                                                                           \
    return d;                                                                                                    \
  }();
CLTRAIN_COMPARISON(GREATER, GreaterOptions)
CLTRAIN_COMPARISON(GREATER_EQUAL, GreaterEqualOptions)
CLTRAIN_COMPARISON(LESS, LessOptions)
CLTRAIN_COMPARISON(LESS_EQUAL, LessEqualOptions)
CLTRAIN_COMPARISON(EQUAL, EqualOptions)
CLTRAIN_COMPARISON(NOT_EQUAL, NotEqualOptions)
#undef CLTRAIN_COMPARISON

}  // namespace cltrain
