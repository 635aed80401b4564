// BATCH_MATMUL: z = x y per leading index, x [..., M, K], y [..., K, N] (MultiHeadAttention's
// scores and weighted values, as TensorFlow's converter writes them).
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

void read_options(const fb::Operator& fo, OptionReader& r, cltrain_op_params&) {
  const auto* o = fo.builtin_options_as_BatchMatMulOptions();
  if (!o) return;
  if (o->adj_x() || o->adj_y()) r.fail("adj_x and adj_y are not supported (only products without adjoints)");
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) {
  return {fb::BuiltinOptions::BatchMatMulOptions, fb::CreateBatchMatMulOptions(fbb).Union()};
}

void check(OperandCheck& c) {
  c.require_float(0);
  c.require_float(1);
  const std::vector<int32_t>& x = c.in(0).shape;
  const std::vector<int32_t>& y = c.in(1).shape;
  if (x.size() < 2 || x.size() > CLTRAIN_MAX_RANK || y.size() != x.size())
    c.bad("operands " + shape_str(x) + " and " + shape_str(y) + " are not of one rank from 2 to " +
          std::to_string(CLTRAIN_MAX_RANK));
  const size_t r = x.size();
  if (!std::equal(x.begin(), x.end() - 2, y.begin()))
    c.bad("operands " + shape_str(x) + " and " + shape_str(y) + " differ in their leading dims (no broadcasting)");
  if (x[r - 1] != y[r - 2]) c.bad("operands " + shape_str(x) + " and " + shape_str(y) + " do not chain (K)");
  std::vector<int64_t> z(x.begin(), x.end() - 1);
  z.push_back(y[r - 1]);
  c.expect_output(z);
}

void backward(StepBuilder& s) {
  const int32_t x = s.input(0), y = s.input(1);
  const bool dx = s.needs_grad(x), dy = s.needs_grad(y);
  s.in = {dy ? x : -1, dx ? y : -1, s.dy()};
  s.out = {s.grad_of(x), s.grad_of(y)};
}

uint64_t flops(const StepTensors& s) {
  // 2 MNK per product: z (or dz) elements times K.
  const int32_t x = s.in(0) >= 0 ? s.in(0) : s.out(0), z = s.forward() ? s.out(0) : s.in(2);
  if (!s.valid(x) || !s.valid(z)) return 0;
  const uint64_t k = static_cast<uint64_t>(s.dim(x, s.tensors[static_cast<size_t>(x)].rank - 1));
  const uint64_t products = s.forward() ? 1 : (s.out(0) >= 0) + (s.out(1) >= 0);
  return 2 * s.elements(z) * k * products;
}

}  // namespace

const OpDescriptor kOpDesc_BATCH_MATMUL = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_BATCH_MATMUL);
  d.min_inputs = d.max_inputs = d.optional_from = 2;  // x, y
  d.options = fb::BuiltinOptions::BatchMatMulOptions;
  d.read_options = read_options;
  d.write_options = write_options;
  d.check = check;
  d.backward = backward;
  d.flops = flops;
  return d;
}();

}  // namespace cltrain
