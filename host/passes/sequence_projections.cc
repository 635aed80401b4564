// Pass sequence-projections (training): the input projections of an unrolled recurrent layer run
// as one FullyConnected over the whole sequence, as PyTorch's and cuDNN's RNNs compute them. The
// converters write one projection per step,
//
//   x_t = SLICE(X, step t of axis a)       (an UNPACK of the sequence, a SPLIT, a loop's read)
//   p_t = FULLY_CONNECTED(x_t, W, b)       (the same W and b at every step)
//
// which becomes P = FULLY_CONNECTED(X, W, b), X's shape with its last axis W's rows, and
// p_t = SLICE(P, step t of axis a): T forward GEMMs become one, and the backward's T input
// gradients, T weight gradients and T - 1 accumulations of dW become one of each (the slices'
// gradients are written into their boxes of dP). Where each p_t is added to the state's
// projection and then to a bias vector c shared by every step (a Keras LSTM's z = x W + h U + c),
// c becomes P's bias: z = (p_t + c) + h U, one ADD a step fewer, and c's gradient one reduction.
//
// What it costs: P and its gradient hold every step at once (X's rows times W's rows, each), where
// the unrolled graph held one step's projection at a time. The numbers change by rounding only
// (dW is summed over the steps in one GEMM, the bias added first); tests/passes holds training
// to the unrolled graph's within 1e-5. Only the training graph's copy changes: export writes the
// file's operators. Last in the list: the tensor it adds is read by no later pass.
#include <algorithm>
#include <map>
#include <vector>

#include "passes/passes.h"

namespace cltrain {
namespace {

class Projections {
 public:
  explicit Projections(TrainingOps& t) : t_(t), m_(t.model) {
    readers_.assign(m_.tensors.size(), {});
    for (size_t i = 0; i < t_.ops.size(); ++i) {
      if (t_.fused[i]) continue;
      for (int32_t x : t_.ops[i].inputs)
        if (x >= 0 && static_cast<size_t>(x) < readers_.size()) readers_[static_cast<size_t>(x)].push_back(i);
    }
    position_.assign(t_.ops.size(), t_.ops.size());
    for (size_t k = 0; k < t_.order->size(); ++k) position_[(*t_.order)[k]] = k;
  }

  // The steps of the layers that read one sequence: the slices of X along one axis, each read
  // by a FullyConnected alone; per layer (the FullyConnecteds that share weight, bias and
  // activation: the two directions of a Bidirectional layer are two) one slice per index.
  struct Step {
    size_t slice = 0, fc = 0;
  };
  bool layers_of(int32_t x, std::vector<std::vector<Step>>* layers) const {
    const Tensor& xt = m_.tensors[static_cast<size_t>(x)];
    const std::vector<int32_t>& xs = xt.shape;
    if (xt.dtype != CLTRAIN_FLOAT32 || xt.is_constant() || xs.size() < 2 || x == t_.prediction) return false;
    const size_t last = xs.size() - 1;
    int32_t axis = -1;
    std::vector<std::vector<bool>> seen;
    for (size_t s : readers_[static_cast<size_t>(x)]) {
      const Operator& sl = t_.ops[s];
      if (sl.op != CLTRAIN_OP_SLICE || sl.inputs[0] != x || sl.outputs.size() != 1) return false;
      int32_t a = -1;
      for (size_t d = 0; d < xs.size(); ++d) {
        const int32_t cut = sl.params.pad_before[d] + sl.params.pad_after[d];
        if (cut == 0) continue;
        if (a >= 0 || cut != xs[d] - 1) return false;
        a = static_cast<int32_t>(d);
      }
      if (a < 0 || static_cast<size_t>(a) == last || (axis >= 0 && a != axis)) return false;
      axis = a;
      const int32_t y = sl.outputs[0];
      if (y < 0 || y == t_.prediction || readers_[static_cast<size_t>(y)].size() != 1) return false;
      const size_t f = readers_[static_cast<size_t>(y)][0];
      const Operator& fc = t_.ops[f];
      if (fc.op != CLTRAIN_OP_FULLY_CONNECTED || fc.inputs.size() < 2 || fc.inputs[0] != y || fc.outputs.size() != 1)
        return false;
      const Tensor& w = m_.tensors[static_cast<size_t>(fc.inputs[1])];
      if (w.shape.size() != 2 || w.shape[1] != xs[last] || m_.tensors[static_cast<size_t>(y)].shape.back() != xs[last])
        return false;
      size_t g = 0;
      while (g < layers->size() && !same_layer(t_.ops[(*layers)[g][0].fc], fc)) ++g;
      if (g == layers->size()) {
        layers->emplace_back();
        seen.emplace_back(static_cast<size_t>(xs[static_cast<size_t>(a)]), false);
      }
      const size_t k = static_cast<size_t>(sl.params.pad_before[static_cast<size_t>(a)]);
      if (seen[g][k]) return false;
      seen[g][k] = true;
      (*layers)[g].push_back({s, f});
    }
    for (const std::vector<Step>& l : *layers)
      if (l.size() < 2 || l.size() != seen[0].size()) return false;
    return !layers->empty();
  }

  static bool same_layer(const Operator& a, const Operator& b) {
    return a.inputs[1] == b.inputs[1] && bias(a) == bias(b) && a.params.activation == b.params.activation;
  }
  static int32_t bias(const Operator& fc) { return fc.inputs.size() > 2 ? fc.inputs[2] : -1; }

  // Where no step has a bias and each p_t is read by ADD(p_t, q) alone, whose sum is read by
  // ADD(sum, c) alone with c a constant of `units` values along the last axis (broadcast-ranks may
  // have given it leading 1s), the same at every step: c (else -1).
  int32_t shared_bias(const std::vector<Step>& steps, int32_t units,
                      std::vector<std::pair<size_t, size_t>>* adds) const {
    int32_t c = -1;
    for (const Step& st : steps) {
      const Operator& fc = t_.ops[st.fc];
      if (bias(fc) >= 0 || fc.params.activation != CLTRAIN_ACT_NONE) return -1;
      const size_t a1 = only_reader(fc.outputs[0]);
      if (a1 == kNone || !plain_add(t_.ops[a1])) return -1;
      const Operator& add1 = t_.ops[a1];
      const int32_t other = add1.inputs[0] == fc.outputs[0] ? add1.inputs[1] : add1.inputs[0];
      if (shape(other) != shape(fc.outputs[0]) || shape(add1.outputs[0]) != shape(other)) return -1;
      const size_t a2 = only_reader(add1.outputs[0]);
      if (a2 == kNone || t_.ops[a2].op != CLTRAIN_OP_ADD || t_.ops[a2].inputs.size() != 2) return -1;
      const Operator& add2 = t_.ops[a2];
      const int32_t v = add2.inputs[0] == add1.outputs[0] ? add2.inputs[1] : add2.inputs[0];
      const Tensor* vt = v >= 0 ? &m_.tensors[static_cast<size_t>(v)] : nullptr;
      if (!vt || !vt->is_constant() || vt->dtype != CLTRAIN_FLOAT32 || vt->shape.empty() || vt->shape.back() != units ||
          vt->elements() != static_cast<uint64_t>(units) || (c >= 0 && v != c) ||
          shape(add2.outputs[0]) != shape(add1.outputs[0]))
        return -1;
      c = v;
      adds->emplace_back(a1, a2);
    }
    return c;
  }

  size_t position(size_t op) const { return position_[op]; }
  const std::vector<int32_t>& shape(int32_t t) const { return m_.tensors[static_cast<size_t>(t)].shape; }
  const std::vector<size_t>& readers(int32_t t) const { return readers_[static_cast<size_t>(t)]; }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  size_t only_reader(int32_t t) const {
    if (t < 0 || t == t_.prediction || readers_[static_cast<size_t>(t)].size() != 1) return kNone;
    return readers_[static_cast<size_t>(t)][0];
  }
  static bool plain_add(const Operator& op) {
    return op.op == CLTRAIN_OP_ADD && op.inputs.size() == 2 && op.params.activation == CLTRAIN_ACT_NONE;
  }

  TrainingOps& t_;
  const Model& m_;
  std::vector<std::vector<size_t>> readers_;
  std::vector<size_t> position_;
};

// Moves operator `op` to run right before `reader` (which runs after it).
void move_before(std::vector<size_t>& order, size_t op, size_t reader) {
  const auto from = std::find(order.begin(), order.end(), op);
  if (from == order.end() || std::find(from, order.end(), reader) == order.end()) return;
  order.erase(from);
  order.insert(std::find(order.begin(), order.end(), reader), op);
}

}  // namespace

std::string sequence_projections_pass(PassInput& in) {
  TrainingOps& t = *in.training;
  if (!t.order || !t.add_tensor) return "";
  const Model& m = t.model;
  Projections p(t);
  int32_t layers = 0, steps_done = 0, biases = 0;
  for (size_t x = 0; x < m.tensors.size(); ++x) {
    std::vector<std::vector<Projections::Step>> layers_here;
    if (p.readers(static_cast<int32_t>(x)).empty() || !p.layers_of(static_cast<int32_t>(x), &layers_here)) continue;
    for (size_t l = 0; l < layers_here.size(); ++l) {
      const std::vector<Projections::Step>& steps = layers_here[l];
      // The batched FullyConnected runs where the first slice ran (before every step's projection).
      const auto first = std::min_element(steps.begin(), steps.end(), [&](const auto& a, const auto& b) {
        return p.position(a.slice) < p.position(b.slice);
      });
      const size_t slot = first->slice;
      Operator batched = t.ops[steps[0].fc];
      const int32_t units = m.tensors[static_cast<size_t>(batched.inputs[1])].shape[0];
      std::vector<int32_t> ps = m.tensors[x].shape;
      ps.back() = units;
      std::vector<std::pair<size_t, size_t>> adds;
      const int32_t c = p.shared_bias(steps, units, &adds);
      const int32_t projected = t.add_tensor(
          std::string("projection/") + m.tensors[x].name + (l ? "/" + std::to_string(l) : std::string()), ps);
      batched.inputs[0] = static_cast<int32_t>(x);
      batched.outputs = {projected};
      if (c >= 0) batched.inputs.resize(3), batched.inputs[2] = c;
      for (const Projections::Step& st : steps) {
        Operator& fc = t.ops[st.fc];
        const Operator& slice = t.ops[st.slice];
        fc.op = CLTRAIN_OP_SLICE;
        fc.inputs = {projected};
        fc.params = slice.params;
        if (st.slice != slot) {
          t.fused[st.slice] = true;
          t.folded_into[static_cast<int32_t>(st.slice)] = static_cast<int32_t>(slot);
        }
      }
      t.ops[slot].op = batched.op;
      t.ops[slot].inputs = batched.inputs;
      t.ops[slot].outputs = batched.outputs;
      t.ops[slot].params = batched.params;
      // A step's slice that an ADD reads (an LSTM's p_t + h U) runs right before it, after the
      // state's projection: its backward, which adds dz into its box of dP, then runs before that
      // projection's, and the ADD's operands can both take dz (training_graph.cc). Others stay
      // where they are (a GRU cell keeps its p_t for its backward: run late, they would keep P
      // alive through the forward as well).
      for (const Projections::Step& st : steps) {
        const std::vector<size_t>& r = p.readers(t.ops[st.fc].outputs[0]);
        if (r.size() == 1 && t.ops[r[0]].op == CLTRAIN_OP_ADD) move_before(*t.order, st.fc, r[0]);
      }
      for (const auto& [a1, a2] : adds) {  // z = (p_t + c) + q: the first ADD writes the second's sum
        t.ops[a1].outputs = t.ops[a2].outputs;
        t.ops[a1].params.activation = t.ops[a2].params.activation;
        t.fused[a2] = true;
        t.folded_into[static_cast<int32_t>(a2)] = static_cast<int32_t>(a1);
      }
      ++layers, steps_done += static_cast<int32_t>(steps.size()), biases += c >= 0;
    }
  }
  if (!layers) return "";
  return "projected the inputs of " + std::to_string(steps_done) + " recurrent steps in " + std::to_string(layers) +
         " FullyConnected" + (layers == 1 ? "" : "s") + " over the sequence" +
         (biases ? " (with " + std::to_string(biases) + " shared bias" + (biases == 1 ? "" : "es") + ")" : "");
}

}  // namespace cltrain
