// Passes lstm-cells and gru-cells (training): the element-wise math of one recurrent step as
// converters write it, unrolled (TensorFlow's converter from a Keras layer's WHILE loop or
// unroll=True, litert-torch's nn.LSTM/nn.GRU, the sequence-lstms expansion of
// UNIDIRECTIONAL_SEQUENCE_LSTM), becomes the fused cell steps of cltrain_ops.h. An LSTM step
//
//   i, f, g, o = the four equal parts of z's last axis (SLICE each: a SPLIT's outputs)
//   c = f * c_prev + i * g      (LOGISTIC, LOGISTIC, TANH, MUL, MUL, ADD)
//   h = o * tanh(c)             (LOGISTIC, TANH, MUL)
//
// becomes LSTM_CELL_STATE [z, c_prev] -> c and LSTM_CELL_OUTPUT [z, c] -> h: 13 forward launches
// become 2, and the backward's 13 (with the slices' box accumulations) 2. A GRU step (Keras's
// reset_after=True, the default)
//
//   xz, xr, xn and hz, hr, hn = the three equal parts of the input's and the state's projections
//   z = sigmoid(xz + hz); r = sigmoid(xr + hr); n = tanh(xn + r * hn)
//   h = z * h_prev + (1 - z) * n
//
// becomes one GRU_CELL [xp, hp, h_prev] -> h (16 operators with the slices). A match needs every
// intermediate read by the pattern alone. The cells restate the unfused ops' roundings, so the
// losses stay bitwise as they were (tests/passes: with and without the passes). Only the training
// graph's copy of the operators changes: export writes the file's operators.
#include <array>
#include <cstring>
#include <optional>
#include <vector>

#include "passes/passes.h"

namespace cltrain {
namespace {

class Matcher {
 public:
  explicit Matcher(TrainingOps& t) : t_(t), m_(t.model) {
    consumers_.assign(m_.tensors.size(), {});
    producer_.assign(m_.tensors.size(), -1);
    for (size_t i = 0; i < t_.ops.size(); ++i) {
      if (t_.fused[i]) continue;
      for (int32_t x : t_.ops[i].inputs)
        if (x >= 0) consumers_[static_cast<size_t>(x)].push_back(i);
      for (int32_t x : t_.ops[i].outputs)
        if (x >= 0) producer_[static_cast<size_t>(x)] = static_cast<int32_t>(i);
    }
  }

  // One part of a tensor split into `parts` equal parts along its last axis: t = SLICE(src), read
  // once.
  struct Part {
    int32_t src = -1, part = -1;
    size_t slice = 0;
  };
  bool part(int32_t t, int32_t parts, Part* p) const {
    const Operator* slice = only_reader_of_producer(t, CLTRAIN_OP_SLICE);
    if (!slice) return false;
    p->slice = static_cast<size_t>(producer_[static_cast<size_t>(t)]);
    const int32_t src = slice->inputs[0];
    const std::vector<int32_t>& zs = shape(src);
    if (zs.empty() || zs.back() % parts != 0 || m_.tensors[static_cast<size_t>(src)].dtype != CLTRAIN_FLOAT32)
      return false;
    const int32_t width = zs.back() / parts;
    const size_t last = zs.size() - 1;
    for (size_t d = 0; d < last; ++d)
      if (slice->params.pad_before[d] || slice->params.pad_after[d]) return false;
    const int32_t before = slice->params.pad_before[last];
    if (before % width != 0 || before + width + slice->params.pad_after[last] != zs.back()) return false;
    std::vector<int32_t> box = zs;
    box.back() = width;
    if (shape(t) != box) return false;
    p->src = src;
    p->part = before / width;
    return true;
  }

  // One LSTM gate: t = act(SLICE(z)) with act LOGISTIC or TANH, t and the slice read once.
  struct Gate {
    int32_t z = -1, part = -1;
    size_t act = 0, slice = 0;
  };
  bool gate(int32_t t, int32_t act_op, Gate* g) const {
    const Operator* act = only_reader_of_producer(t, act_op);
    if (!act || act->inputs.size() != 1) return false;
    g->act = static_cast<size_t>(producer_[static_cast<size_t>(t)]);
    Part p;
    if (!part(act->inputs[0], 4, &p)) return false;
    g->z = p.src, g->part = p.part, g->slice = p.slice;
    return true;
  }

  // t = op(x) with op LOGISTIC or TANH, t read once: x, or -1.
  int32_t activation_input(int32_t t, int32_t op) const {
    const Operator* a = only_reader_of_producer(t, op);
    return a && a->inputs.size() == 1 ? a->inputs[0] : -1;
  }

  // A tensor of ones (a constant whose every element is 1.0f: SUB(1, z)'s 1).
  bool ones(int32_t t) const {
    if (t < 0) return false;
    const Tensor& x = m_.tensors[static_cast<size_t>(t)];
    if (!x.is_constant() || x.dtype != CLTRAIN_FLOAT32 || x.data.empty() || x.data.size() % 4 != 0) return false;
    for (size_t i = 0; i < x.data.size(); i += 4) {
      float v;
      std::memcpy(&v, x.data.data() + i, 4);
      if (v != 1.0f) return false;
    }
    return true;
  }

  // An element-wise op of two operands of y's shape, without activation, whose output is read once.
  const Operator* binary(int32_t t, int32_t op) const {
    const Operator* p = only_reader_of_producer(t, op);
    if (!p || p->inputs.size() != 2 || p->params.activation != CLTRAIN_ACT_NONE) return nullptr;
    if (shape(p->inputs[0]) != shape(t) || shape(p->inputs[1]) != shape(t)) return nullptr;
    return p;
  }

  const std::vector<int32_t>& shape(int32_t t) const { return m_.tensors[static_cast<size_t>(t)].shape; }
  int32_t producer(int32_t t) const { return t < 0 ? -1 : producer_[static_cast<size_t>(t)]; }
  const Operator& op_of(int32_t t) const { return t_.ops[static_cast<size_t>(producer_[static_cast<size_t>(t)])]; }
  const std::vector<size_t>& consumers(int32_t t) const { return consumers_[static_cast<size_t>(t)]; }
  int32_t prediction() const { return t_.prediction; }

  // The producer of t when it is an `op` and t is computed, read once and not the prediction.
  const Operator* only_reader_of_producer(int32_t t, int32_t op) const { return producer_if(t, op, 1); }
  // The same, t read by `readers` operators.
  const Operator* producer_if(int32_t t, int32_t op, size_t readers) const {
    if (t < 0 || t == t_.prediction || consumers_[static_cast<size_t>(t)].size() != readers) return nullptr;
    const int32_t p = producer_[static_cast<size_t>(t)];
    if (p < 0 || t_.ops[static_cast<size_t>(p)].op != op || t_.ops[static_cast<size_t>(p)].outputs.size() != 1)
      return nullptr;
    return &t_.ops[static_cast<size_t>(p)];
  }

 private:
  TrainingOps& t_;
  const Model& m_;
  std::vector<std::vector<size_t>> consumers_;
  std::vector<int32_t> producer_;
};

// One matched step: the gates (input, forget, cell, output), the operators folded, the two kept.
struct Cell {
  std::array<Matcher::Gate, 4> gates;
  int32_t z = -1, c_prev = -1;
  size_t state_op = 0, output_op = 0;  // the ADD and the output's MUL, which become the cells
  std::vector<size_t> into_state, into_output;
};

// The cell whose state is ops[add]'s output, or false.
bool match(const Matcher& mt, const std::vector<Operator>& ops, size_t add, Cell* cell) {
  const Operator& a = ops[add];
  if (a.op != CLTRAIN_OP_ADD || a.inputs.size() != 2 || a.outputs.size() != 1 ||
      a.params.activation != CLTRAIN_ACT_NONE)
    return false;
  const int32_t c = a.outputs[0];
  for (int order = 0; order < 2; ++order) {
    const int32_t fc = a.inputs[static_cast<size_t>(order)], ig = a.inputs[static_cast<size_t>(1 - order)];
    const Operator* fc_mul = mt.binary(fc, CLTRAIN_OP_MUL);
    const Operator* ig_mul = mt.binary(ig, CLTRAIN_OP_MUL);
    if (!fc_mul || !ig_mul || mt.shape(fc) != mt.shape(c)) continue;
    Matcher::Gate i, f, g;
    bool ok = false;
    for (int k = 0; k < 2 && !ok; ++k)
      ok = mt.gate(ig_mul->inputs[static_cast<size_t>(k)], CLTRAIN_OP_LOGISTIC, &i) &&
           mt.gate(ig_mul->inputs[static_cast<size_t>(1 - k)], CLTRAIN_OP_TANH, &g) && i.z == g.z;
    if (!ok) continue;
    int32_t c_prev = -1;
    for (int k = 0; k < 2 && c_prev < 0; ++k)
      if (mt.gate(fc_mul->inputs[static_cast<size_t>(k)], CLTRAIN_OP_LOGISTIC, &f) && f.z == i.z)
        c_prev = fc_mul->inputs[static_cast<size_t>(1 - k)];
    if (c_prev < 0 || c_prev == c) continue;
    // h = o * tanh(c): a TANH of c read once by a MUL whose other operand is the output gate.
    for (size_t reader : mt.consumers(c)) {
      const Operator& t = ops[reader];
      if (t.op != CLTRAIN_OP_TANH || t.inputs.size() != 1 || t.outputs.size() != 1) continue;
      const int32_t tc = t.outputs[0];
      if (mt.consumers(tc).size() != 1 || tc == mt.prediction()) continue;
      const size_t hm = mt.consumers(tc)[0];
      const Operator& h_mul = ops[hm];
      if (h_mul.op != CLTRAIN_OP_MUL || h_mul.inputs.size() != 2 || h_mul.params.activation != CLTRAIN_ACT_NONE ||
          mt.shape(h_mul.outputs[0]) != mt.shape(c))
        continue;
      const int32_t o_t = h_mul.inputs[0] == tc ? h_mul.inputs[1] : h_mul.inputs[0];
      Matcher::Gate o;
      if (o_t == tc || !mt.gate(o_t, CLTRAIN_OP_LOGISTIC, &o) || o.z != i.z) continue;
      // Four different parts, and z read by their slices alone (its gradient is the cells').
      const int parts = (1 << i.part) | (1 << f.part) | (1 << g.part) | (1 << o.part);
      if (parts != 15 || mt.consumers(i.z).size() != 4) continue;
      cell->gates = {i, f, g, o};
      cell->z = i.z;
      cell->c_prev = c_prev;
      cell->state_op = add;
      cell->output_op = hm;
      cell->into_state = {i.slice,
                          i.act,
                          f.slice,
                          f.act,
                          g.slice,
                          g.act,
                          static_cast<size_t>(mt.producer(fc)),
                          static_cast<size_t>(mt.producer(ig))};
      cell->into_output = {o.slice, o.act, reader};
      return true;
    }
  }
  return false;
}

// One matched GRU step: the parts of xp and hp (update, reset, candidate), the operators folded.
struct GruStep {
  int32_t xp = -1, hp = -1, h_prev = -1;
  std::array<int32_t, 6> parts{};
  std::vector<size_t> folded;
};

// az = ADD(SLICE(xp), SLICE(hp)) in either order, read once: the two parts, false where it is not.
bool sum_of_parts(const Matcher& mt, int32_t az, Matcher::Part* x, Matcher::Part* h, std::vector<size_t>* folded) {
  const Operator* add = mt.binary(az, CLTRAIN_OP_ADD);
  if (!add || !mt.part(add->inputs[0], 3, x) || !mt.part(add->inputs[1], 3, h)) return false;
  folded->insert(folded->end(), {x->slice, h->slice, static_cast<size_t>(mt.producer(az))});
  return true;
}

// The GRU step whose output is ops[add]'s: h = ADD(MUL(z, h_prev), MUL(SUB(1, z), n)), either
// order of every commutative pair.
bool match_gru(const Matcher& mt, const std::vector<Operator>& ops, size_t add, GruStep* step) {
  const Operator& a = ops[add];
  if (a.op != CLTRAIN_OP_ADD || a.inputs.size() != 2 || a.outputs.size() != 1 ||
      a.params.activation != CLTRAIN_ACT_NONE || mt.shape(a.inputs[0]) != mt.shape(a.outputs[0]) ||
      mt.shape(a.inputs[1]) != mt.shape(a.outputs[0]))
    return false;
  for (int order = 0; order < 4; ++order) {
    const int32_t zh = a.inputs[static_cast<size_t>(order & 1)], nn = a.inputs[static_cast<size_t>(1 - (order & 1))];
    const Operator* zh_mul = mt.binary(zh, CLTRAIN_OP_MUL);
    const Operator* nn_mul = mt.binary(nn, CLTRAIN_OP_MUL);
    if (!zh_mul || !nn_mul) continue;
    const int k = order >> 1;  // which operand of zh_mul is z
    const int32_t z = zh_mul->inputs[static_cast<size_t>(k)], h_prev = zh_mul->inputs[static_cast<size_t>(1 - k)];
    const Operator* z_act = mt.producer_if(z, CLTRAIN_OP_LOGISTIC, 2);
    if (!z_act || z_act->inputs.size() != 1 || h_prev == z) continue;
    // nn = (1 - z) * n, n = TANH(an)
    for (int m = 0; m < 2; ++m) {
      const int32_t omz = nn_mul->inputs[static_cast<size_t>(m)], n = nn_mul->inputs[static_cast<size_t>(1 - m)];
      const Operator* sub = mt.only_reader_of_producer(omz, CLTRAIN_OP_SUB);
      if (!sub || sub->inputs.size() != 2 || sub->inputs[1] != z || !mt.ones(sub->inputs[0]) ||
          sub->params.activation != CLTRAIN_ACT_NONE)
        continue;
      const int32_t an = mt.activation_input(n, CLTRAIN_OP_TANH);
      const Operator* an_add = an >= 0 ? mt.binary(an, CLTRAIN_OP_ADD) : nullptr;
      if (!an_add) continue;
      // an = xn + r * hn
      for (int q = 0; q < 2; ++q) {
        std::vector<size_t> folded;
        Matcher::Part xn, hn, xz, hz, xr, hr;
        const int32_t rh = an_add->inputs[static_cast<size_t>(1 - q)];
        const Operator* rh_mul = mt.binary(rh, CLTRAIN_OP_MUL);
        if (!rh_mul || !mt.part(an_add->inputs[static_cast<size_t>(q)], 3, &xn)) continue;
        int32_t r = -1;
        for (int u = 0; u < 2 && r < 0; ++u)
          if (mt.part(rh_mul->inputs[static_cast<size_t>(1 - u)], 3, &hn) &&
              mt.activation_input(rh_mul->inputs[static_cast<size_t>(u)], CLTRAIN_OP_LOGISTIC) >= 0)
            r = rh_mul->inputs[static_cast<size_t>(u)];
        if (r < 0 || xn.src == hn.src) continue;
        const int32_t ar = mt.activation_input(r, CLTRAIN_OP_LOGISTIC);
        if (!sum_of_parts(mt, z_act->inputs[0], &xz, &hz, &folded) || !sum_of_parts(mt, ar, &xr, &hr, &folded))
          continue;
        if (xz.src != xn.src) std::swap(xz, hz);
        if (xr.src != xn.src) std::swap(xr, hr);
        if (xz.src != xn.src || hz.src != hn.src || xr.src != xn.src || hr.src != hn.src) continue;
        if ((1 << xz.part | 1 << xr.part | 1 << xn.part) != 7 || (1 << hz.part | 1 << hr.part | 1 << hn.part) != 7)
          continue;
        // The projections read by their slices alone (their gradients are the cell's).
        if (mt.consumers(xn.src).size() != 3 || mt.consumers(hn.src).size() != 3) continue;
        if (mt.shape(h_prev) != mt.shape(a.outputs[0])) continue;
        step->xp = xn.src, step->hp = hn.src, step->h_prev = h_prev;
        step->parts = {xz.part, xr.part, xn.part, hz.part, hr.part, hn.part};
        folded.insert(folded.end(), {xn.slice, hn.slice, static_cast<size_t>(mt.producer(z)),
                                     static_cast<size_t>(mt.producer(r)), static_cast<size_t>(mt.producer(rh)),
                                     static_cast<size_t>(mt.producer(n)), static_cast<size_t>(mt.producer(omz)),
                                     static_cast<size_t>(mt.producer(zh)), static_cast<size_t>(mt.producer(nn))});
        // an's ADD
        folded.push_back(static_cast<size_t>(mt.producer(an)));
        step->folded = std::move(folded);
        return true;
      }
    }
  }
  return false;
}

// Each ADD (in operator order) that ends a step `match` recognises becomes its cells (`fuse`
// rewrites the operators it keeps and returns the folded ones with the operator each went into);
// the readers are found again after each match. The number fused.
template <typename Step>
int32_t fuse_steps(TrainingOps& t, bool (*match)(const Matcher&, const std::vector<Operator>&, size_t, Step*),
                   std::vector<std::pair<size_t, size_t>> (*fuse)(std::vector<Operator>& ops, size_t add,
                                                                  const Step& step)) {
  int32_t n = 0;
  std::optional<Matcher> mt;
  for (size_t a = 0; a < t.ops.size(); ++a) {
    if (t.fused[a] || t.ops[a].op != CLTRAIN_OP_ADD) continue;
    if (!mt) mt.emplace(t);
    Step step;
    if (!match(*mt, t.ops, a, &step)) continue;
    mt.reset();
    for (const auto& [folded, into] : fuse(t.ops, a, step)) {
      t.fused[folded] = true;
      t.folded_into[static_cast<int32_t>(folded)] = static_cast<int32_t>(into);
    }
    ++n;
  }
  return n;
}

std::vector<std::pair<size_t, size_t>> fuse_lstm(std::vector<Operator>& ops, size_t, const Cell& cell) {
  cltrain_op_params p{};
  for (int k = 0; k < 4; ++k) p.perm[k] = cell.gates[static_cast<size_t>(k)].part;
  Operator& state = ops[cell.state_op];
  const int32_t c = state.outputs[0];
  state.op = CLTRAIN_OP_LSTM_CELL_STATE;
  state.inputs = {cell.z, cell.c_prev};
  state.params = p;
  Operator& output = ops[cell.output_op];
  output.op = CLTRAIN_OP_LSTM_CELL_OUTPUT;
  output.inputs = {cell.z, c};
  output.params = p;
  std::vector<std::pair<size_t, size_t>> folded;
  for (size_t f : cell.into_state) folded.emplace_back(f, cell.state_op);
  for (size_t f : cell.into_output) folded.emplace_back(f, cell.output_op);
  return folded;
}

std::vector<std::pair<size_t, size_t>> fuse_gru(std::vector<Operator>& ops, size_t add, const GruStep& step) {
  Operator& cell = ops[add];
  cell.op = CLTRAIN_OP_GRU_CELL;
  cell.inputs = {step.xp, step.hp, step.h_prev};
  cell.params = cltrain_op_params{};
  for (int k = 0; k < 6; ++k) cell.params.perm[k] = step.parts[static_cast<size_t>(k)];
  std::vector<std::pair<size_t, size_t>> folded;
  for (size_t f : step.folded) folded.emplace_back(f, add);
  return folded;
}

}  // namespace

std::string lstm_cells_pass(PassInput& in) {
  const int32_t n = fuse_steps<Cell>(*in.training, match, fuse_lstm);
  return n ? "fused " + std::to_string(n) + " LSTM step" + (n == 1 ? "" : "s") +
                 " into a cell-state and a cell-output step each"
           : "";
}

std::string gru_cells_pass(PassInput& in) {
  const int32_t n = fuse_steps<GruStep>(*in.training, match_gru, fuse_gru);
  return n ? "fused " + std::to_string(n) + " GRU step" + (n == 1 ? "" : "s") + " into one cell step each" : "";
}

}  // namespace cltrain
