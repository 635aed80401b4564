// MEAN, SUM, REDUCE_MAX and REDUCE_MIN of x over the axes of a constant int32 operand, keep_dims or not.
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

void read_options(const fb::Operator& fo, OptionReader&, cltrain_op_params& p) {
  if (const auto* o = fo.builtin_options_as_ReducerOptions()) p.keep_dims = o->keep_dims() ? 1 : 0;
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  return {fb::BuiltinOptions::ReducerOptions, fb::CreateReducerOptions(fbb, op.params.keep_dims != 0).Union()};
}

// Completes params.axes_mask (bit i: axis i is reduced) from the axes operand.
void check(OperandCheck& c) {
  c.require_float(0);
  const Tensor& x = c.in(0);
  const Tensor& a = c.in(1);
  if (a.shape.size() > 1) c.bad("axes operand shape " + graph::shape_str(a.shape) + " is not a vector");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int32_t mask = 0;
  for (int32_t v : c.int32_values(1)) {
    if (v < -rank || v >= rank)
      c.bad("axis " + std::to_string(v) + " is out of range for input " + graph::shape_str(x.shape));
    mask |= 1 << (v < 0 ? v + rank : v);
  }
  c.op.params.axes_mask = mask;
  c.op.params.keep_dims = c.op.params.keep_dims != 0;
  std::vector<int64_t> y;
  for (int64_t d = 0; d < rank; ++d) {
    if (!(mask & (1 << d)))
      y.push_back(x.shape[static_cast<size_t>(d)]);
    else if (c.op.params.keep_dims)
      y.push_back(1);
  }
  c.expect_output(y);
}

void backward(StepBuilder& s) {
  s.in = {s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

// One add per input element and one divide per output element; backward one divide per element.
uint64_t flops(const StepTensors& s) {
  return s.forward() ? s.elements(s.in(0)) + s.elements(s.out(0)) : s.elements(s.out(0));
}

// REDUCE_MAX/MIN: the backward reads x and y to find the elements that were the extreme.
void extreme_backward(StepBuilder& s) {
  s.in = {s.input(0), s.y(), s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

// A compare per input element forward; backward two compares, a divide and a multiply per element.
uint64_t extreme_flops(const StepTensors& s) { return s.forward() ? s.elements(s.in(0)) : 4 * s.elements(s.out(0)); }

const char* fixed_batch(const Operator& op) {
  return op.params.axes_mask & 1 ? "reduces over the batch axis" : nullptr;
}

OpDescriptor reduction(int32_t op) {
  OpDescriptor d = descriptor_of(op);
  d.min_inputs = d.max_inputs = d.optional_from = 2;  // x, axes
  d.constant = {1, "axes", false};
  d.options = fb::BuiltinOptions::ReducerOptions;
  d.read_options = read_options;
  d.write_options = write_options;
  d.check = check;
  d.fixed_batch = fixed_batch;
  return d;
}

}  // namespace

const OpDescriptor kOpDesc_REDUCE_MAX = [] {
  OpDescriptor d = reduction(CLTRAIN_OP_REDUCE_MAX);
  d.backward = extreme_backward;
  d.flops = extreme_flops;
  return d;
}();

const OpDescriptor kOpDesc_REDUCE_MIN = [] {
  OpDescriptor d = reduction(CLTRAIN_OP_REDUCE_MIN);
  d.backward = extreme_backward;
  d.flops = extreme_flops;
  return d;
}();

const OpDescriptor kOpDesc_MEAN = [] {
  OpDescriptor d = reduction(CLTRAIN_OP_MEAN);
  d.half_storage = true;
  d.fixed_batch = [](const Operator& op) -> const char* {
    return op.params.axes_mask & 1 ? "averages over the batch axis" : nullptr;
  };
  d.backward = backward;
  d.flops = flops;
  return d;
}();

const OpDescriptor kOpDesc_SUM = [] {
  OpDescriptor d = reduction(CLTRAIN_OP_SUM);
  d.half_storage = true;
  d.fixed_batch = [](const Operator& op) -> const char* {
    return op.params.axes_mask & 1 ? "sums over the batch axis" : nullptr;
  };
  d.backward = backward;
  d.flops = flops;
  return d;
}();

}  // namespace cltrain
