// TILE: y's dim d is multiples[d] times x's, from the constant int32 [rank] multiples operand
// (Keras' UpSampling1D/2D write EXPAND_DIMS, TILE, RESHAPE). The backends take the multiples from
// the shapes; params.axes_mask marks the axes tiled more than once.
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) {
  return {fb::BuiltinOptions::TileOptions, fb::CreateTileOptions(fbb).Union()};
}

void check(OperandCheck& c) {
  c.require_float(0);
  const Tensor& x = c.in(0);
  const int32_t rank = static_cast<int32_t>(x.shape.size());
  if (rank < 1 || rank > CLTRAIN_MAX_RANK)
    c.bad("input " + shape_str(x.shape) + " has rank " + std::to_string(rank) + " (1 to " +
          std::to_string(CLTRAIN_MAX_RANK) + " are supported)");
  if (c.in(1).shape != std::vector<int32_t>{rank})
    c.bad("multiples shape " + shape_str(c.in(1).shape) + " is not [" + std::to_string(rank) + "] for input " +
          shape_str(x.shape));
  const std::vector<int32_t> m = c.int32_values(1);
  if (m.size() != static_cast<size_t>(rank)) c.bad("multiples operand has " + std::to_string(m.size()) + " values");
  int32_t mask = 0;
  std::vector<int64_t> y;
  for (int32_t d = 0; d < rank; ++d) {
    const int32_t k = m[static_cast<size_t>(d)];
    if (k < 1) c.bad("multiples " + shape_str(m) + " has a value below 1");
    if (k > 1) mask |= 1 << d;
    y.push_back(static_cast<int64_t>(x.shape[static_cast<size_t>(d)]) * k);
  }
  c.op.params.axes_mask = mask;
  c.expect_output(y);
}

void backward(StepBuilder& s) {
  s.in = {s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

// Forward a copy per element of y; backward an add per element of dy.
uint64_t flops(const StepTensors& s) { return s.forward() ? 0 : s.elements(s.in(0)); }

}  // namespace

const OpDescriptor kOpDesc_TILE = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_TILE);
  d.min_inputs = d.max_inputs = d.optional_from = 2;  // x, multiples
  d.constant = {1, "multiples", false};
  d.options = fb::BuiltinOptions::TileOptions;
  d.write_options = write_options;
  d.check = check;
  d.fixed_batch = [](const Operator& op) -> const char* {
    return op.params.axes_mask & 1 ? "tiles the batch axis" : nullptr;
  };
  d.backward = backward;
  d.flops = flops;
  return d;
}();

}  // namespace cltrain
