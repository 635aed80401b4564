// GATHER: y[i, ...] = table[ids[i], ...] along the table's first axis (Keras' Embedding), the
// gradient scattered back into the table's rows.
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

void read_options(const fb::Operator& fo, OptionReader& r, cltrain_op_params&) {
  const auto* o = fo.builtin_options_as_GatherOptions();
  if (!o) return;
  if (o->axis() != 0) r.fail("axis " + std::to_string(o->axis()) + " is not supported (only 0, an embedding's)");
  if (o->batch_dims() != 0) r.fail("batch_dims " + std::to_string(o->batch_dims()) + " is not supported (only 0)");
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) {
  return {fb::BuiltinOptions::GatherOptions, fb::CreateGatherOptions(fbb, 0, 0).Union()};
}

void check(OperandCheck& c) {
  c.require_float(0);
  const Tensor& table = c.in(0);
  const Tensor& ids = c.in(1);
  if (ids.dtype != CLTRAIN_INT32) c.bad("ids " + c.label(c.op.inputs[1]) + " are not int32");
  if (ids.is_constant())
    c.bad("ids " + c.label(c.op.inputs[1]) + " are constant (only ids computed at run time are supported)");
  if (table.shape.empty()) c.bad("table " + c.label(c.op.inputs[0]) + " is a scalar");
  std::vector<int64_t> y(ids.shape.begin(), ids.shape.end());
  y.insert(y.end(), table.shape.begin() + 1, table.shape.end());
  if (y.size() > CLTRAIN_MAX_RANK)
    c.bad("output rank " + std::to_string(y.size()) + " (ids " + shape_str(ids.shape) + ", table " +
          shape_str(table.shape) + ") is more than " + std::to_string(CLTRAIN_MAX_RANK));
  c.expect_output(y);
}

void backward(StepBuilder& s) {
  s.in = {s.dy(), s.input(1)};
  s.out = {s.grad_of(s.input(0))};
  if (s.out[0] >= 0)
    if (const int32_t q = s.squares_of(s.input(0)); q >= 0) s.out.push_back(q);
}

uint64_t flops(const StepTensors& s) {
  // The backward compares every id with each table element's row and adds the matches.
  if (s.forward()) return 0;
  return s.elements(s.in(0));
}

}  // namespace

const OpDescriptor kOpDesc_GATHER = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_GATHER);
  d.min_inputs = d.max_inputs = d.optional_from = 2;  // table, ids
  d.int32_inputs = 1u << 1;
  d.options = fb::BuiltinOptions::GatherOptions;
  d.read_options = read_options;
  d.write_options = write_options;
  d.check = check;
  d.backward = backward;
  d.flops = flops;
  return d;
}();

}  // namespace cltrain
