// SLICE: a box of x, params.pad_before / pad_after the elements cut at either end of each axis
// (PAD's inverse); the output may drop size-1 axes of the box (UNPACK, STRIDED_SLICE's
// shrink_axis_mask). The format's SLICE loads as it is (its constant begin and size give the
// cuts); STRIDED_SLICE, SPLIT and UNPACK load as one SLICE per output with the cuts in params and
// x its only input (model/slices.cc), which the writer writes as SLICE with a begin and size.
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

// The box's dims (x's less the cuts), or empty where a cut is negative or too large.
std::vector<int64_t> box(const Tensor& x, const cltrain_op_params& p) {
  std::vector<int64_t> b;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t n = int64_t{x.shape[d]} - p.pad_before[d] - p.pad_after[d];
    if (p.pad_before[d] < 0 || p.pad_after[d] < 0 || n < 1) return {};
    b.push_back(n);
  }
  return b;
}

std::vector<int64_t> without_ones(const std::vector<int64_t>& v) {
  std::vector<int64_t> r;
  for (int64_t n : v)
    if (n != 1) r.push_back(n);
  return r;
}

void check(OperandCheck& c) {
  c.require_float(0);
  const Tensor& x = c.in(0);
  cltrain_op_params& p = c.op.params;
  // The format's SLICE: constant begin and size (-1: to the end) give the cuts.
  if (c.has_input(1) || c.has_input(2)) {
    if (!c.has_input(1) || !c.has_input(2) || !c.in(2).is_constant() || c.in(2).dtype != CLTRAIN_INT32)
      c.bad("begin and size must both be constant int32 operands");
    const std::vector<int32_t> begin = c.int32_values(1), size = c.int32_values(2);
    if (begin.size() != x.shape.size() || size.size() != x.shape.size())
      c.bad("begin and size do not have one value per axis of input " + shape_str(x.shape));
    for (size_t d = 0; d < CLTRAIN_MAX_RANK; ++d) p.pad_before[d] = p.pad_after[d] = 0;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      const int64_t n = size[d] == -1 ? int64_t{x.shape[d]} - begin[d] : size[d];
      if (begin[d] < 0 || n < 1 || begin[d] + n > x.shape[d])
        c.bad("slice of axis " + std::to_string(d) + " (begin " + std::to_string(begin[d]) + ", size " +
              std::to_string(size[d]) + ") is outside its " + std::to_string(x.shape[d]) + " elements");
      p.pad_before[d] = begin[d];
      p.pad_after[d] = static_cast<int32_t>(x.shape[d] - begin[d] - n);
    }
  }
  for (size_t d = x.shape.size(); d < CLTRAIN_MAX_RANK; ++d)
    if (p.pad_before[d] != 0 || p.pad_after[d] != 0) c.bad("cuts axis " + std::to_string(d) + " of a lower rank input");
  const std::vector<int64_t> b = box(x, p);
  if (b.empty() && !x.shape.empty()) c.bad("cuts more than input " + shape_str(x.shape) + " holds");
  if (c.inferring()) return c.expect_output(b);
  const Tensor& y = c.out(0);
  if (without_ones(b) != without_ones(std::vector<int64_t>(y.shape.begin(), y.shape.end())))
    c.bad("output shape " + shape_str(y.shape) + " is not the slice " +
          shape_str(std::vector<int32_t>(b.begin(), b.end())) + " of input " + shape_str(x.shape));
}

// A SLICE without them (a part of a SPLIT, ...): begin and size, as the format's SLICE reads them.
std::vector<std::vector<int32_t>> written_operands(const Model& m, const Operator& op) {
  if (op.inputs.size() > 1) return {};
  const Tensor& x = m.tensors[static_cast<size_t>(op.inputs[0])];
  std::vector<int32_t> begin, size;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    begin.push_back(op.params.pad_before[d]);
    size.push_back(x.shape[d] - op.params.pad_before[d] - op.params.pad_after[d]);
  }
  // All of the batch axis as -1 (to the end), which follows a batch change.
  if (!size.empty() && op.params.pad_before[0] == 0 && op.params.pad_after[0] == 0) size[0] = -1;
  return {begin, size};
}

// The step reads x only (the cuts are params).
void forward(StepBuilder& s) { s.in = {s.input(0)}; }

void backward(StepBuilder& s) {
  s.in = {s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

}  // namespace

const OpDescriptor kOpDesc_SLICE = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_SLICE);
  // Loads from SLICE (x, begin, size); STRIDED_SLICE, SPLIT and UNPACK load as its parts (x only).
  d.builtin_codes = {65, 45, 49, 88};
  d.min_inputs = 1, d.max_inputs = 3, d.optional_from = 1;
  d.constant = {1, "begin", false};
  d.written_operands = written_operands;
  d.check = check;
  d.forward = forward;
  d.fixed_batch = [](const Operator& op) -> const char* {
    return op.params.pad_before[0] != 0 || op.params.pad_after[0] != 0 ? "slices the batch axis" : nullptr;
  };
  d.backward = backward;
  return d;
}();

}  // namespace cltrain
