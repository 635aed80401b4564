// Pass untie-constants (setup): constants a converter merged become one weight per layer.
#include "passes/model_edits.h"

#include <algorithm>
#include <map>
#include <set>

#include "ops/op_descriptor.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {

namespace {

// The kernels (weights of operators with a bias slot) whose products op's operands are, other than
// through t: an operator's own kernel where t is its bias; for an element-wise operator (an ADD of
// a bias after x W + h U), the kernels of the products its other operands sum, followed through
// ADDs, RESHAPEs and SLICEs. Operators sharing one are of one layer.
std::set<int32_t> layer_kernels(const Model& m, const std::vector<int32_t>& writer, const Operator& op, int32_t t) {
  std::set<int32_t> out;
  const OpDescriptor& d = *find_op(op.op);
  if (d.bias_slot >= 0) {
    if (op.inputs.size() > 1 && op.inputs[1] >= 0 && op.inputs[1] != t) out.insert(op.inputs[1]);
    return out;
  }
  if (!d.broadcasts) return out;
  std::vector<std::pair<int32_t, int>> todo;  // (tensor, depth)
  for (int32_t x : op.inputs)
    if (x >= 0 && x != t) todo.push_back({x, 0});
  while (!todo.empty()) {
    const auto [x, depth] = todo.back();
    todo.pop_back();
    const int32_t w = writer[static_cast<size_t>(x)];
    if (w < 0 || depth > 8) continue;
    const Operator& src = m.operators[static_cast<size_t>(w)];
    if (find_op(src.op)->bias_slot >= 0) {
      if (src.inputs.size() > 1 && src.inputs[1] >= 0) out.insert(src.inputs[1]);
    } else if (src.op == CLTRAIN_OP_ADD || src.op == CLTRAIN_OP_RESHAPE || src.op == CLTRAIN_OP_SLICE) {
      for (size_t k = 0; k < (src.op == CLTRAIN_OP_ADD ? src.inputs.size() : 1); ++k)
        if (src.inputs[k] >= 0 && !is_float_constant(m.tensors[static_cast<size_t>(src.inputs[k])]))
          todo.push_back({src.inputs[k], depth + 1});
    }
  }
  return out;
}

}  // namespace

std::string untie_merged_constants(Model& m) {
  // Readers of each float32 constant: (operator, input slot).
  std::map<int32_t, std::vector<std::pair<size_t, size_t>>> readers;
  std::vector<int32_t> writer(m.tensors.size(), -1);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    for (size_t k = 0; k < m.operators[i].inputs.size(); ++k) {
      const int32_t t = m.operators[i].inputs[k];
      if (t >= 0 && is_float_constant(m.tensors[static_cast<size_t>(t)])) readers[t].push_back({i, k});
    }
    for (int32_t t : m.operators[i].outputs)
      if (t >= 0) writer[static_cast<size_t>(t)] = static_cast<int32_t>(i);
  }
  int32_t untied = 0, copies = 0;
  for (const auto& [t, uses] : readers) {
    std::set<size_t> ops;
    for (const auto& u : uses) ops.insert(u.first);
    if (ops.size() < 2) continue;
    std::vector<size_t> list(ops.begin(), ops.end());
    // What ties each reader to its layer: the varied constants it reads besides t, and the
    // kernels of the products it is the bias of.
    std::vector<std::set<int32_t>> keys(list.size()), kernels(list.size());
    for (size_t a = 0; a < list.size(); ++a) {
      kernels[a] = layer_kernels(m, writer, m.operators[list[a]], t);
      keys[a] = kernels[a];
      for (int32_t x : m.operators[list[a]].inputs)
        if (x >= 0 && x != t && is_float_constant(m.tensors[static_cast<size_t>(x)]) &&
            !uniform(m.tensors[static_cast<size_t>(x)]))
          keys[a].insert(x);
    }
    // Uniform values (zeros, ones) are merged by any converter; other values are untied only where
    // every reader is the bias of products of kernels (equal initial biases, as Keras's LSTM
    // unit_forget_bias gives every LSTM of a stack: the converter keeps one copy). A kernel read by
    // many operators (an unrolled RNN's steps) is one weight and stays one.
    const bool biases_of_layers = std::all_of(kernels.begin(), kernels.end(), [](const auto& k) { return !k.empty(); });
    if (!uniform(m.tensors[static_cast<size_t>(t)]) && !biases_of_layers) continue;
    // A constant no reader trains (a scalar of element-wise operators, a fixed constant such as
    // FILL's value: the training graph's rule) is not a weight: nothing to untie.
    const bool single = m.tensors[static_cast<size_t>(t)].elements() == 1;
    const bool fixed = std::all_of(ops.begin(), ops.end(), [&](size_t op) {
      const OpDescriptor& d = *find_op(m.operators[op].op);
      return (d.broadcasts && single) || d.fixed_constants;
    });
    if (fixed) continue;
    // Group the readers: operators of one layer share t too.
    std::vector<size_t> group(list.size());
    for (size_t a = 0; a < list.size(); ++a) {
      group[a] = a;
      for (size_t b = 0; b < a && group[a] == a; ++b)
        for (int32_t x : keys[a])
          if (keys[b].count(x)) {
            group[a] = group[b];
            break;
          }
    }
    std::map<size_t, int32_t> tensor_of_group;  // the first group keeps t
    for (size_t a = 0; a < list.size(); ++a) {
      const size_t g = group[a];
      if (tensor_of_group.empty()) tensor_of_group[g] = t;
      if (!tensor_of_group.count(g)) {
        Tensor copy = m.tensors[static_cast<size_t>(t)];
        copy.name += "/untied" + std::to_string(tensor_of_group.size());
        tensor_of_group[g] = append_tensor(m, std::move(copy));
        ++copies;
      }
      for (int32_t& x : m.operators[list[a]].inputs)
        if (x == t) x = tensor_of_group[g];
    }
    if (tensor_of_group.size() > 1) ++untied;
  }
  if (untied == 0) return "";
  return std::to_string(untied) + " constant" + (untied == 1 ? "" : "s") +
         " that the converter merged (equal values read by layers that do not share weights) now train as " +
         std::to_string(untied + copies) + " separate weights, one per layer";
}

std::string untie_constants_pass(PassInput& in) {
  std::string line = untie_merged_constants(*in.m);
  if (!line.empty()) in.results->warnings.push_back(line);
  return line;
}

}  // namespace cltrain
