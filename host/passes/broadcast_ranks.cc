// Pass broadcast-ranks (load).
#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "ops/op_descriptor.h"
#include "passes/passes.h"

namespace cltrain {
namespace {

// Converters write the scalar and per-channel constants of element-wise operators with their own
// rank ([], [C]); numpy broadcasting aligns them to the other operand's rank from the right. Give
// such a constant that rank (leading 1s; its values are laid out the same) where every operator
// reading it broadcasts; the graph check then sees equal ranks.
int32_t align_broadcast_ranks(Model& m) {
  int32_t n = 0;
  std::vector<int> non_broadcast_readers(m.tensors.size(), 0);
  for (const Operator& op : m.operators)
    if (!find_op(op.op)->broadcasts)
      for (int32_t t : op.inputs)
        if (t >= 0) ++non_broadcast_readers[static_cast<size_t>(t)];
  for (const Operator& op : m.operators) {
    if (!find_op(op.op)->broadcasts || op.inputs.size() != 2 || op.inputs[0] < 0 || op.inputs[1] < 0) continue;
    Tensor& a = m.tensors[static_cast<size_t>(op.inputs[0])];
    Tensor& b = m.tensors[static_cast<size_t>(op.inputs[1])];
    for (auto [lo, hi, t] : {std::make_tuple(&a, &b, op.inputs[0]), std::make_tuple(&b, &a, op.inputs[1])})
      if (lo->is_constant() && lo->shape.size() < hi->shape.size() &&
          non_broadcast_readers[static_cast<size_t>(t)] == 0)
        lo->shape.insert(lo->shape.begin(), hi->shape.size() - lo->shape.size(), 1), ++n;
  }
  return n;
}

}  // namespace

std::string broadcast_ranks_pass(PassInput& in) {
  const int32_t n = align_broadcast_ranks(*in.m);
  return n ? "gave " + std::to_string(n) + " broadcast constant" + (n == 1 ? "" : "s") + " the rank of " +
                 (n == 1 ? "its" : "their") + " other operand"
           : "";
}

}  // namespace cltrain
