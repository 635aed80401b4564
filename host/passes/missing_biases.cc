// Pass missing-biases (setup): a trained zero bias where the converter dropped one.
#include "passes/model_edits.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "ops/op_descriptor.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {

namespace {

bool lacks_bias(const Operator& op) {
  const OpDescriptor& d = *find_op(op.op);
  const size_t slot = static_cast<size_t>(d.bias_slot);
  return d.bias_slot >= 0 && (op.inputs.size() <= slot || op.inputs[slot] < 0);
}

// The operators without a bias of their own that are missing one. Not those whose output alone
// an ADD reads with a float constant (the bias is that ADD's: how converters write a layer's bias
// after a sum or a reshape). Two such operators summed by one ADD are one layer with one bias (an unrolled RNN
// step's x_t W + h U): where the other has a bias (x_t W + b), or an ADD of a float constant
// follows, neither misses one; else the first gets it (shared over the steps, as the layer's is).
// The sum may be of parts (SLICEs of the gates' product, as a GRU with reset_after=False writes
// x_t W split into z, r, h and h U_zr sliced into z, r): an operator whose every part is the
// second operand of such a sum misses none; the partner is found through the slices.
std::vector<bool> missing_bias(const Model& m) {
  const size_t nt = m.tensors.size();
  std::vector<std::vector<size_t>> readers(nt);
  std::vector<int32_t> writer(nt, -1);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    for (int32_t t : m.operators[i].inputs)
      if (t >= 0) readers[static_cast<size_t>(t)].push_back(i);
    for (int32_t t : m.operators[i].outputs)
      if (t >= 0) writer[static_cast<size_t>(t)] = static_cast<int32_t>(i);
  }
  for (int32_t t : m.outputs) readers[static_cast<size_t>(t)].push_back(SIZE_MAX);
  const auto float_constant = [&](int32_t t) { return t >= 0 && is_float_constant(m.tensors[static_cast<size_t>(t)]); };
  // The ADD that alone reads t (through RESHAPEs that alone read it: EinsumDense adds its bias
  // after splitting the heads), with its other operand; nullptr where there is none.
  const auto sole_add = [&](int32_t t, int32_t* other, size_t* slot) -> const Operator* {
    for (;;) {
      const std::vector<size_t>& r = readers[static_cast<size_t>(t)];
      if (r.size() != 1 || r[0] == SIZE_MAX) return nullptr;
      const Operator& next = m.operators[r[0]];
      if (next.op != CLTRAIN_OP_RESHAPE || next.outputs.size() != 1 || next.outputs[0] < 0) break;
      t = next.outputs[0];
    }
    const Operator& add = m.operators[readers[static_cast<size_t>(t)][0]];
    if (add.op != CLTRAIN_OP_ADD || add.inputs.size() != 2 || add.outputs.size() != 1) return nullptr;
    if (add.inputs[0] != t && add.inputs[1] != t) return nullptr;
    *slot = add.inputs[0] == t ? 0 : 1;
    *other = add.inputs[1 - *slot];
    return &add;
  };
  // The operator whose output t is, or is a part of (through SLICEs and RESHAPEs); nullptr where
  // another operator is in the way.
  const auto source = [&](int32_t t) -> const Operator* {
    for (int guard = 0; t >= 0 && guard < 64; ++guard) {
      const int32_t w = writer[static_cast<size_t>(t)];
      if (w < 0) return nullptr;
      const Operator& op = m.operators[static_cast<size_t>(w)];
      if (op.op != CLTRAIN_OP_SLICE && op.op != CLTRAIN_OP_RESHAPE) return &op;
      t = op.inputs.empty() ? -1 : op.inputs[0];
    }
    return nullptr;
  };
  // Whether the value t (an operator's output, or a part of it) needs no bias of its own: it is
  // summed with a float constant, or with a partner's product that has the bias or gets it.
  const auto has_its_bias = [&](int32_t t) {
    int32_t other = -1, next_other = -1;
    size_t slot = 0, next_slot = 0;
    const Operator* add = sole_add(t, &other, &slot);
    if (!add) return false;
    if (float_constant(other)) return true;  // its bias is the ADD's constant
    const Operator* partner = other >= 0 ? source(other) : nullptr;
    if (!partner || find_op(partner->op)->bias_slot < 0) return false;
    if (!lacks_bias(*partner)) return true;  // the layer's bias is the partner's (x_t W + b, then + h U)
    const Operator* bias_add = sole_add(add->outputs[0], &next_other, &next_slot);
    if (bias_add && float_constant(next_other)) return true;  // the pair's bias follows
    return slot == 1;                                         // the first of the pair gets it
  };
  std::vector<bool> out(m.operators.size(), false);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    const Operator& op = m.operators[i];
    if (!lacks_bias(op) || op.outputs.empty() || op.outputs[0] < 0) continue;
    const int32_t y = op.outputs[0];
    if (has_its_bias(y)) continue;
    // Read by SLICEs alone, each part summed as above: the parts' sums hold the layer's bias.
    const std::vector<size_t>& r = readers[static_cast<size_t>(y)];
    const bool by_parts = !r.empty() && std::all_of(r.begin(), r.end(), [&](size_t k) {
      if (k == SIZE_MAX) return false;
      const Operator& part = m.operators[k];
      return part.op == CLTRAIN_OP_SLICE && part.outputs.size() == 1 && part.outputs[0] >= 0 &&
             has_its_bias(part.outputs[0]);
    });
    out[i] = !by_parts;
  }
  return out;
}

}  // namespace

int32_t count_missing_biases(const Model& m) {
  const std::vector<bool> missing = missing_bias(m);
  // A loop body's operator (passes/while_loops.cc) counts once, not once per step.
  std::set<std::pair<int32_t, int32_t>> body_ops;
  int32_t n = 0;
  for (size_t i = 0; i < missing.size(); ++i) {
    const Operator& op = m.operators[i];
    if (missing[i] && (op.body_subgraph < 0 || body_ops.insert({op.body_subgraph, op.body_op}).second)) ++n;
  }
  return n;
}

int32_t add_missing_biases(Model& m) {
  int32_t n = 0;
  const std::vector<bool> missing = missing_bias(m);
  std::map<int32_t, int32_t> bias_of_kernel;  // operators sharing a kernel share the new bias
  for (size_t i = 0; i < m.operators.size(); ++i) {
    if (!missing[i]) continue;
    Operator& op = m.operators[i];
    const size_t slot = static_cast<size_t>(find_op(op.op)->bias_slot);
    const int32_t kernel = op.inputs.at(1);
    auto it = bias_of_kernel.find(kernel);
    int32_t bias;
    if (it != bias_of_kernel.end()) {
      bias = it->second;
    } else {
      const Tensor& y = m.tensors[static_cast<size_t>(op.outputs.at(0))];
      Tensor b;
      b.name = m.tensors[static_cast<size_t>(kernel)].name + "/added_bias";
      b.shape = {y.shape.empty() ? 1 : y.shape.back()};
      b.dtype = CLTRAIN_FLOAT32;
      b.data.assign(static_cast<size_t>(b.shape[0]) * 4, 0);
      bias = append_tensor(m, std::move(b));
      bias_of_kernel[kernel] = bias;
    }
    if (op.inputs.size() <= slot) op.inputs.resize(slot + 1, -1);
    op.inputs[slot] = bias;
    ++n;
  }
  return n;
}

std::string missing_biases_pass(PassInput& in) {
  if (!in.choices->add_missing_biases) {
    if (const int32_t n = count_missing_biases(*in.m))
      in.results->warnings.push_back(
          std::to_string(n) + " FullyConnected/Conv2D/DepthwiseConv2D operator" + (n == 1 ? " has" : "s have") +
          " no bias (converters drop zero biases), so " + (n == 1 ? "it trains" : "they train") +
          " without one; add_missing_biases (--add_missing_biases) gives them a trained zero bias");
    return "";
  }
  const int32_t n = add_missing_biases(*in.m);
  return n ? "added " + std::to_string(n) + " zero bias" + (n == 1 ? "" : "es") : "";
}

}  // namespace cltrain
