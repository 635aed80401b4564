// Pass broadcast-ranks (load).
#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "ops/op_descriptor.h"
#include "passes/new_tensors.h"
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

// An activation operand of lower rank (litert-torch adds an LSTM step's [B, 4H] gate product to
// the [1, B, 4H] slice of the input projection): read through a RESHAPE to the other operand's
// rank (leading 1s, the same elements) inserted before the operator. Both are parts of the file's
// operator, which export writes back as it was.
int32_t reshape_broadcast_activations(Model& m) {
  int32_t n = 0;
  std::vector<Operator> out;
  out.reserve(m.operators.size());
  for (Operator& op : m.operators) {
    if (find_op(op.op)->broadcasts && op.inputs.size() == 2 && op.inputs[0] >= 0 && op.inputs[1] >= 0) {
      for (int k = 0; k < 2; ++k) {
        const Tensor& lo = m.tensors[static_cast<size_t>(op.inputs[static_cast<size_t>(k)])];
        const Tensor& hi = m.tensors[static_cast<size_t>(op.inputs[static_cast<size_t>(1 - k)])];
        if (lo.is_constant() || lo.dtype != CLTRAIN_FLOAT32 || lo.shape.size() >= hi.shape.size()) continue;
        Tensor t;
        t.name = lo.name + "/rank" + std::to_string(hi.shape.size());
        t.shape = lo.shape;
        t.shape.insert(t.shape.begin(), hi.shape.size() - lo.shape.size(), 1);
        Operator r;
        r.op = CLTRAIN_OP_RESHAPE;
        r.inputs = {op.inputs[static_cast<size_t>(k)]};
        r.outputs = {append_tensor(m, std::move(t))};
        r.file_index = op.file_index;
        r.part = true;
        op.inputs[static_cast<size_t>(k)] = r.outputs[0];
        op.part = true;
        out.push_back(std::move(r));
        ++n;
      }
    }
    out.push_back(std::move(op));
  }
  m.operators = std::move(out);
  return n;
}

}  // namespace

std::string broadcast_ranks_pass(PassInput& in) {
  const int32_t n = align_broadcast_ranks(*in.m);
  const int32_t r = reshape_broadcast_activations(*in.m);
  std::string line;
  if (n)
    line = "gave " + std::to_string(n) + " broadcast constant" + (n == 1 ? "" : "s") + " the rank of " +
           (n == 1 ? "its" : "their") + " other operand";
  if (r)
    line += std::string(line.empty() ? "" : "; ") + "reshaped " + std::to_string(r) + " activation operand" +
            (r == 1 ? "" : "s") + " to the rank of " + (r == 1 ? "its" : "their") +
            " other operand (numpy broadcasting)";
  return line;
}

}  // namespace cltrain
