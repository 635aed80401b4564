// Pass while-loops (import): a WHILE loop that steps a number of times the host can compute at load
// — how TensorFlow's converter writes every Keras recurrent layer (LSTM, GRU, SimpleRNN,
// Bidirectional), a loop over the sequence with a step counter in its condition — is unrolled into
// the main graph: the body's operators once per step, the loop-carried tensors threaded from one
// step to the next, the body's weights one tensor for all steps (read from the body's buffers, so
// export writes the trained values back into the loop as it was). What the body computes on the
// step counter (the index of the step's input, the box a step writes into the output list) is
// computed on the host into int32 constants, so that:
//   - GATHER of a float tensor at the step's index becomes a SLICE of that step (of the tensor a
//     REVERSE_V2 reversed, where the loop reads one: the other end, without the copy);
//   - the converter's TensorList write (a SLICE before the step, the step's value, a SLICE after
//     it, concatenated) is followed on the host: a list is a row of parts, and only what another
//     operator reads is ever concatenated (the steps' outputs, once, after the loop).
// All operators made are parts of the WHILE (FileOperator::part). A loop whose condition reads a
// value computed from the data is refused in one line.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "circle_generated.h"
#include "cltrain/cltrain_backend.h"
#include "cltrain/cltrain_ops.h"
#include "graph/labels.h"
#include "passes/lowering.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"
#include "passes/shape_ops.h"

namespace cltrain {
namespace {

constexpr int32_t kAdd = 0, kConcatenation = 2, kMul = 18, kGather = 36, kSub = 41, kStridedSlice = 45, kMaximum = 55,
                  kMinimum = 57, kLess = 58, kGreater = 61, kGreaterEqual = 62, kLessEqual = 63, kSlice = 65,
                  kEqual = 71, kNotEqual = 72, kLogicalOr = 84, kLogicalAnd = 86, kLogicalNot = 87, kReverseV2 = 105,
                  kReshape = 22, kTranspose = 39, kWhile = 119;
constexpr int kMaxSteps = 100000;
constexpr size_t kMaxOperators = 200000;  // all loops' steps together (loops in loops multiply)

using Ints = std::vector<int64_t>;

std::vector<int32_t> int32_values(const Tensor& t) {
  std::vector<int32_t> v(t.data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

bool known_int(const Model& m, int32_t t) {
  return t >= 0 && m.tensors[static_cast<size_t>(t)].dtype == CLTRAIN_INT32 &&
         m.tensors[static_cast<size_t>(t)].is_constant();
}

// The value of the loop's condition given the loop-carried values the host knows (nullopt: not
// known, computed from the data); nullopt where the condition depends on one it does not know.
std::optional<bool> condition(const FileSubgraph& cond, const std::vector<std::optional<Ints>>& args) {
  std::vector<std::optional<Ints>> v(cond.tensors.size());
  for (size_t t = 0; t < cond.tensors.size(); ++t) {
    const Tensor& c = cond.tensors[t];
    if (!c.is_constant()) continue;
    Ints x;
    if (c.dtype == CLTRAIN_INT32)
      for (int32_t e : int32_values(c)) x.push_back(e);
    else if (c.dtype == CLTRAIN_UINT8)
      for (uint8_t e : c.data) x.push_back(e != 0);
    else
      continue;
    v[t] = std::move(x);
  }
  for (size_t j = 0; j < cond.inputs.size() && j < args.size(); ++j) v[static_cast<size_t>(cond.inputs[j])] = args[j];
  for (const FileOperator& op : cond.ops) {
    std::vector<const Ints*> in;
    bool known = op.outputs.size() == 1;
    for (int32_t t : op.inputs) {
      known = known && t >= 0 && v[static_cast<size_t>(t)].has_value();
      if (known) in.push_back(&*v[static_cast<size_t>(t)]);
    }
    if (!known || in.empty()) continue;
    Ints out;
    if (op.code == kLogicalNot) {
      for (int64_t a : *in[0]) out.push_back(a == 0);
    } else if (in.size() == 2 && (in[0]->size() == 1 || in[1]->size() == 1 || in[0]->size() == in[1]->size())) {
      const size_t n = std::max(in[0]->size(), in[1]->size());
      bool supported = true;
      for (size_t i = 0; i < n && supported; ++i) {
        const int64_t a = (*in[0])[in[0]->size() == 1 ? 0 : i], b = (*in[1])[in[1]->size() == 1 ? 0 : i];
        switch (op.code) {
          case kLess: out.push_back(a < b); break;
          case kLessEqual: out.push_back(a <= b); break;
          case kGreater: out.push_back(a > b); break;
          case kGreaterEqual: out.push_back(a >= b); break;
          case kEqual: out.push_back(a == b); break;
          case kNotEqual: out.push_back(a != b); break;
          case kLogicalAnd: out.push_back(a && b); break;
          case kLogicalOr: out.push_back(a || b); break;
          case kAdd: out.push_back(a + b); break;
          case kSub: out.push_back(a - b); break;
          case kMul: out.push_back(a * b); break;
          case kMaximum: out.push_back(std::max(a, b)); break;
          case kMinimum: out.push_back(std::min(a, b)); break;
          default: supported = false;
        }
      }
      if (!supported) continue;
    } else {
      continue;
    }
    v[static_cast<size_t>(op.outputs[0])] = std::move(out);
  }
  if (cond.outputs.size() != 1) return std::nullopt;
  const std::optional<Ints>& r = v[static_cast<size_t>(cond.outputs[0])];
  if (!r || r->size() != 1) return std::nullopt;
  return (*r)[0] != 0;
}

// A float tensor the unrolling keeps as a row of parts along one axis (a TensorList as the
// converter writes it): each part a real tensor of shape's extents but at axis. Concatenated into
// its own tensor only when an operator other than a SLICE or CONCATENATION reads it.
struct Row {
  int32_t axis = 0;
  std::vector<int32_t> shape;
  std::vector<std::pair<int32_t, int32_t>> parts;  // (tensor, extent at axis)
};

class Unroller {
 public:
  Unroller(Model& m, std::vector<FileOperator>& file, const SubgraphReader& subgraphs, const std::string& what)
      : m_(m), file_(file), subgraphs_(subgraphs), what_(what) {}

  std::string run();

 private:
  std::vector<FileOperator> expand(const FileOperator& w, std::map<int32_t, int32_t>& remap);
  void step(const FileOperator& w, const FileSubgraph& body, int32_t body_index, int step,
            std::vector<int32_t>& carried, std::vector<FileOperator>& out);
  int32_t constant_of(int32_t subgraph, const FileSubgraph& g, int32_t t);
  const Tensor& tensor(int32_t t) const { return m_.tensors[static_cast<size_t>(t)]; }
  int32_t new_tensor(const std::string& name, std::vector<int32_t> shape) {
    Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    return append_tensor(m_, std::move(t));
  }
  // The row that t is (a real tensor: one part), or nullopt where it has no known shape.
  std::optional<Row> row_of(int32_t t, int32_t axis) const;
  // A real tensor holding t: its row's parts concatenated (once) into t, or the one part itself.
  int32_t materialize(int32_t t, const FileOperator& w, std::vector<FileOperator>& out);
  // Lowered operators of w (its parts) as one file operator.
  FileOperator parts_of(const FileOperator& w, std::vector<Operator> ops) const {
    FileOperator f;
    f.index = w.index;
    f.label = w.label;
    f.fate = FileOperator::Fate::kLowered;
    f.part = true;
    f.lowered = std::move(ops);
    return f;
  }
  // The box [from, to) at axis of row r as a row of real parts (a part cut where the box ends
  // inside it: a SLICE, or a constant's values).
  Row cut(const Row& r, int32_t from, int32_t to, const FileOperator& w, std::vector<FileOperator>& out);
  // y = the box [from, to) at r's axis: a row (no operator), or where shrink (one element, the
  // axis dropped) a RESHAPE or SLICE of the part holding it.
  void box(const Row& r, int32_t from, int32_t to, bool shrink, int32_t y, const FileOperator& w,
           std::vector<FileOperator>& out);
  // c (a float GATHER at a known index, SLICE, STRIDED_SLICE or CONCATENATION) taken as rows and
  // boxes; false where it is none of those.
  bool take(FileOperator& c, const FileOperator& w, std::vector<FileOperator>& out);
  [[noreturn]] void fail(const FileOperator& w, const std::string& why) const {
    graph::fail(what_, w.label + " (WHILE): " + why);
  }

  Model& m_;
  std::vector<FileOperator>& file_;
  const SubgraphReader& subgraphs_;
  const std::string& what_;
  std::map<int32_t, Row> rows_;                               // tensor -> its row (no operator writes it yet)
  std::map<int32_t, int32_t> materialized_;                   // row tensor -> the real tensor holding it
  std::map<std::pair<int32_t, int32_t>, int32_t> constants_;  // (subgraph, tensor) -> model tensor
  std::map<int32_t, std::pair<int32_t, int32_t>> reversed_;   // REVERSE_V2 output -> (input, axis)
  std::set<int32_t> results_;                                 // what the loops returned
  int steps_ = 0;
  size_t operators_ = 0;    // made by all loops so far
  FileOperator last_loop_;  // the last WHILE unrolled (the operator the outputs' concatenations are parts of)
};

int32_t Unroller::constant_of(int32_t subgraph, const FileSubgraph& g, int32_t t) {
  auto it = constants_.find({subgraph, t});
  if (it != constants_.end()) return it->second;
  Tensor c = g.tensors[static_cast<size_t>(t)];  // keeps its buffer and file offset: export writes it there
  m_.tensors.push_back(std::move(c));
  const int32_t id = static_cast<int32_t>(m_.tensors.size() - 1);
  constants_[{subgraph, t}] = id;
  return id;
}

std::optional<Row> Unroller::row_of(int32_t t, int32_t axis) const {
  if (auto it = rows_.find(t); it != rows_.end()) return it->second;
  const Tensor& x = tensor(t);
  if (x.shape.empty() || axis < 0 || static_cast<size_t>(axis) >= x.shape.size()) return std::nullopt;
  Row r;
  r.axis = axis;
  r.shape = x.shape;
  r.parts = {{t, x.shape[static_cast<size_t>(axis)]}};
  return r;
}

int32_t Unroller::materialize(int32_t t, const FileOperator& w, std::vector<FileOperator>& out) {
  auto it = rows_.find(t);
  if (it == rows_.end()) return t;
  if (auto done = materialized_.find(t); done != materialized_.end()) return done->second;
  const Row& r = it->second;
  if (r.parts.empty()) fail(w, "an operator reads " + graph::tensor_label(m_, t) + ", which is empty");
  int32_t real = t;
  if (r.parts.size() == 1 && r.parts[0].second == r.shape[static_cast<size_t>(r.axis)]) {
    real = r.parts[0].first;
  } else {
    m_.tensors[static_cast<size_t>(t)].shape = r.shape;
    std::vector<int32_t> parts;
    for (const auto& p : r.parts) parts.push_back(p.first);
    Lowering l{m_, w, {}};
    l.concatenate(std::move(parts), r.axis, t, r.shape);
    out.push_back(parts_of(w, std::move(l.ops)));
  }
  materialized_[t] = real;
  return real;
}

Row Unroller::cut(const Row& r, int32_t from, int32_t to, const FileOperator& w, std::vector<FileOperator>& out) {
  Row c;
  c.axis = r.axis;
  c.shape = r.shape;
  c.shape[static_cast<size_t>(r.axis)] = to - from;
  const size_t a = static_cast<size_t>(r.axis);
  int32_t at = 0;
  for (const auto& [t, n] : r.parts) {
    const int32_t b = std::max(from, at), e = std::min(to, at + n);
    if (b < e) {
      if (b == at && e == at + n) {
        c.parts.push_back({t, n});
      } else {
        const Tensor x = tensor(t);  // a copy: tensors are appended below
        std::vector<int32_t> shape = x.shape;
        shape[a] = e - b;
        const int32_t piece = new_tensor(x.name + "/" + std::to_string(b - at) + ":" + std::to_string(e - at), shape);
        if (x.is_constant()) {
          // The constant's values in the box: outer x [n] x inner.
          size_t outer = 1, inner = 1;
          for (size_t d = 0; d < a; ++d) outer *= static_cast<size_t>(x.shape[d]);
          for (size_t d = a + 1; d < x.shape.size(); ++d) inner *= static_cast<size_t>(x.shape[d]);
          const size_t es = x.data.size() / std::max<uint64_t>(x.elements(), 1);
          Tensor& p = m_.tensors[static_cast<size_t>(piece)];
          p.dtype = x.dtype;
          for (size_t o = 0; o < outer; ++o) {
            const uint8_t* src =
                x.data.data() + ((o * static_cast<size_t>(n) + static_cast<size_t>(b - at)) * inner) * es;
            p.data.insert(p.data.end(), src, src + static_cast<size_t>(e - b) * inner * es);
          }
        } else {
          Operator s = part_of(w, CLTRAIN_OP_SLICE, {t}, piece);
          s.params.pad_before[a] = b - at;
          s.params.pad_after[a] = at + n - e;
          out.push_back(parts_of(w, {s}));
        }
        c.parts.push_back({piece, e - b});
      }
    }
    at += n;
  }
  return c;
}

void Unroller::box(const Row& r, int32_t from, int32_t to, bool shrink, int32_t y, const FileOperator& w,
                   std::vector<FileOperator>& out) {
  if (!shrink) {
    rows_[y] = cut(r, from, to, w, out);
    return;
  }
  // One element of the axis, the axis dropped: the part that holds it, reshaped, or sliced.
  const size_t a = static_cast<size_t>(r.axis);
  std::vector<int32_t> shape = r.shape;
  shape.erase(shape.begin() + r.axis);
  m_.tensors[static_cast<size_t>(y)].shape = shape;
  int32_t at = 0;
  for (const auto& [t, n] : r.parts) {
    if (from < at + n) {
      if (n == 1) {
        out.push_back(parts_of(w, {part_of(w, CLTRAIN_OP_RESHAPE, {t}, y)}));
      } else {
        Operator sl = part_of(w, CLTRAIN_OP_SLICE, {t}, y);
        sl.params.pad_before[a] = from - at;
        sl.params.pad_after[a] = n - 1 - (from - at);
        out.push_back(parts_of(w, {sl}));
      }
      return;
    }
    at += n;
  }
}

bool Unroller::take(FileOperator& c, const FileOperator& w, std::vector<FileOperator>& out) {
  if (c.outputs.size() != 1 || c.outputs[0] < 0 || tensor(c.outputs[0]).dtype != CLTRAIN_FLOAT32 || c.inputs.empty() ||
      c.inputs[0] < 0)
    return false;
  const int32_t y = c.outputs[0];
  const int32_t x = c.inputs[0];
  const std::vector<int32_t> shape = rows_.count(x) ? rows_.at(x).shape : tensor(x).shape;
  const int32_t rank = static_cast<int32_t>(shape.size());
  if (rank == 0) return false;
  // GATHER of one index of a float tensor: that element of the axis.
  if (c.code == kGather && c.inputs.size() == 2 && known_int(m_, c.inputs[1]) && tensor(c.inputs[1]).data.size() == 4) {
    const auto* o = c.op->builtin_options_as_GatherOptions();
    int32_t axis = o ? o->axis() : 0;
    if (axis < 0) axis += rank;
    if ((o && o->batch_dims() != 0) || axis < 0 || axis >= rank) return false;
    int32_t k = int32_values(tensor(c.inputs[1]))[0];
    int32_t from = x;
    // Of a REVERSE_V2 along the same axis (a backward layer's input): the other end of its input.
    if (auto r = reversed_.find(x); r != reversed_.end() && r->second.second == axis && !rows_.count(x)) {
      const int32_t n = shape[static_cast<size_t>(axis)];
      from = r->second.first, k = n - 1 - (k < 0 ? k + n : k);
    }
    const std::optional<Row> row = row_of(from, axis);
    if (!row) return false;
    const int32_t n = row->shape[static_cast<size_t>(axis)];
    if (k < 0) k += n;
    if (k < 0 || k >= n) graph::fail(what_, c.label + ": index " + std::to_string(k) + " is outside the axis");
    box(*row, k, k + 1, tensor(c.inputs[1]).shape.empty(), y, w, out);
    return true;
  }
  // SLICE and STRIDED_SLICE (unit strides) that cut one axis: a row's box.
  if ((c.code == kSlice && c.inputs.size() == 3) || (c.code == kStridedSlice && c.inputs.size() == 4)) {
    for (size_t k = 1; k < c.inputs.size(); ++k)
      if (!known_int(m_, c.inputs[k])) return false;
    const std::vector<int32_t> begin = int32_values(tensor(c.inputs[1]));
    const std::vector<int32_t> second = int32_values(tensor(c.inputs[2]));
    std::vector<int32_t> from(shape.size()), to(shape.size());
    int32_t shrink = 0;
    if (c.code == kSlice) {
      if (begin.size() != shape.size() || second.size() != shape.size()) return false;
      for (size_t d = 0; d < shape.size(); ++d)
        from[d] = begin[d], to[d] = second[d] < 0 ? shape[d] : begin[d] + second[d];
    } else {
      const auto* o = c.op->builtin_options_as_StridedSliceOptions();
      const std::vector<int32_t> strides = int32_values(tensor(c.inputs[3]));
      if (!o || o->ellipsis_mask() || o->new_axis_mask() || o->offset() || begin.size() != shape.size() ||
          second.size() != shape.size() || strides.size() != shape.size())
        return false;
      shrink = o->shrink_axis_mask();
      for (size_t d = 0; d < shape.size(); ++d) {
        if (strides[d] != 1) return false;
        const int32_t n = shape[d];
        auto at = [&](int32_t v) { return std::min(std::max(v < 0 ? v + n : v, 0), n); };
        from[d] = o->begin_mask() >> d & 1 ? 0 : at(begin[d]);
        to[d] = o->end_mask() >> d & 1 ? n : at(second[d]);
        if (shrink >> d & 1) from[d] = begin[d] < 0 ? begin[d] + n : begin[d], to[d] = from[d] + 1;
      }
    }
    int32_t axis = rows_.count(x) ? rows_.at(x).axis : -1, others = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (from[d] < 0 || from[d] > to[d] || to[d] > shape[d])
        graph::fail(what_, c.label + ": the slice lies outside its input " + graph::shape_str(shape));
      const bool cut_here = from[d] != 0 || to[d] != shape[d] || (shrink >> d & 1);
      if (!cut_here) continue;
      if (axis < 0) axis = static_cast<int32_t>(d);
      others += axis != static_cast<int32_t>(d);
    }
    if (axis < 0) axis = 0;
    if (others > 0 || (shrink & ~(1 << axis)) != 0) return false;
    const std::optional<Row> row = row_of(x, axis);
    if (!row) return false;
    box(*row, from[static_cast<size_t>(axis)], to[static_cast<size_t>(axis)], shrink != 0, y, w, out);
    return true;
  }
  // CONCATENATION (no activation) of rows along their axis: a row of all their parts.
  if (c.code == kConcatenation) {
    const auto* o = c.op->builtin_options_as_ConcatenationOptions();
    if (!o || o->fused_activation_function() != fb::ActivationFunctionType::NONE) return false;
    const int32_t a = o->axis() < 0 ? o->axis() + rank : o->axis();
    Row r;
    r.axis = a;
    for (int32_t t : c.inputs) {
      if (t < 0) return false;
      const std::optional<Row> tr = row_of(t, a);
      if (!tr || tr->axis != a || tr->shape.size() != shape.size()) return false;
      if (r.shape.empty()) r.shape = tr->shape, r.shape[static_cast<size_t>(a)] = 0;
      for (size_t d = 0; d < shape.size(); ++d)
        if (static_cast<int32_t>(d) != a && tr->shape[d] != r.shape[d]) return false;
      r.shape[static_cast<size_t>(a)] += tr->shape[static_cast<size_t>(a)];
      r.parts.insert(r.parts.end(), tr->parts.begin(), tr->parts.end());
    }
    rows_[y] = std::move(r);
    return true;
  }
  return false;
}

void Unroller::step(const FileOperator& w, const FileSubgraph& body, int32_t body_index, int step,
                    std::vector<int32_t>& carried, std::vector<FileOperator>& out) {
  std::vector<int32_t> at(body.tensors.size(), -1);  // body tensor -> model tensor this step
  for (size_t j = 0; j < body.inputs.size(); ++j) at[static_cast<size_t>(body.inputs[j])] = carried[j];
  const std::string suffix = "/step" + std::to_string(step);
  for (const FileOperator& bo : body.ops) {
    FileOperator c = bo;
    c.index = w.index;
    c.part = true;
    c.label = w.label + " (WHILE) step " + std::to_string(step) + ": " + bo.label;
    c.body_subgraph = body_index, c.body_op = bo.index;
    for (int32_t& t : c.inputs) {
      if (t < 0) continue;
      const size_t b = static_cast<size_t>(t);
      if (at[b] >= 0)
        t = at[b];
      else if (body.tensors[b].is_constant())
        t = constant_of(body_index, body, t);
      else
        graph::fail(what_, c.label + ": reads tensor " + std::to_string(t) + " before an operator writes it");
    }
    for (int32_t& t : c.outputs) {
      const size_t b = static_cast<size_t>(t);
      std::vector<int32_t> shape = body.tensors[b].shape;
      for (int32_t d : body.signatures[b])
        if (d < 0) shape.clear();  // computed from its operator (the check), or by the host below
      const int32_t id = new_tensor(body.tensors[b].name + suffix, shape);
      m_.tensors[static_cast<size_t>(id)].dtype = body.tensors[b].dtype;
      // A bool the main graph made a float (a mask, passes/masks.cc): what moves it stays float.
      const bool moves = c.code == kGather || c.code == kSlice || c.code == kStridedSlice || c.code == kConcatenation ||
                         c.code == kReshape || c.code == kTranspose;
      if (moves && body.tensors[b].dtype == CLTRAIN_UINT8 && !c.inputs.empty() && c.inputs[0] >= 0 &&
          tensor(c.inputs[0]).dtype == CLTRAIN_FLOAT32)
        m_.tensors[static_cast<size_t>(id)].dtype = CLTRAIN_FLOAT32;
      at[b] = t = id;
    }
    bool ints = !c.outputs.empty();
    for (int32_t t : c.outputs) ints = ints && tensor(t).dtype == CLTRAIN_INT32;
    bool inputs_known = true;
    for (int32_t t : c.inputs) inputs_known = inputs_known && (t < 0 || known_int(m_, t));
    // Integers on the step counter: computed now (what the SLICEs below read).
    if (ints && inputs_known && is_shape_op_code(c.code)) {
      ShapeOperator so;
      so.code = c.code;
      so.inputs = c.inputs;
      so.outputs = c.outputs;
      so.options = read_shape_op_options(c.code, *c.op);
      so.file_index = w.index;
      fold_shape_op(m_, so, what_);
      continue;
    }
    if (take(c, w, out)) continue;
    for (int32_t& t : c.inputs)
      if (t >= 0) t = materialize(t, w, out);
    out.push_back(std::move(c));
  }
  for (size_t j = 0; j < body.outputs.size(); ++j) {
    const size_t b = static_cast<size_t>(body.outputs[j]);
    carried[j] = at[b] >= 0 ? at[b] : constant_of(body_index, body, body.outputs[j]);
  }
}

std::vector<FileOperator> Unroller::expand(const FileOperator& w, std::map<int32_t, int32_t>& remap) {
  const auto* o = w.op->builtin_options_as_WhileOptions();
  if (!o) fail(w, "has no WhileOptions (its condition and body subgraphs)");
  const int32_t cond_index = o->cond_subgraph_index(), body_index = o->body_subgraph_index();
  const FileSubgraph& cond = subgraphs_(cond_index);
  const FileSubgraph& body = subgraphs_(body_index);
  const size_t n = w.inputs.size();
  if (w.outputs.size() != n || cond.inputs.size() != n || body.inputs.size() != n || body.outputs.size() != n)
    fail(w, "its " + std::to_string(n) + " loop values do not match its condition's and body's inputs and outputs");
  std::vector<int32_t> carried = w.inputs;
  for (int32_t t : carried)
    if (t < 0) fail(w, "an input is missing (-1)");
  std::vector<FileOperator> out;
  // A uniform float constant the loop starts from (a stateless RNN's zero state): a FILL, so that
  // each batch starts from it as the framework's layer does, and it is not a weight to train.
  std::map<int32_t, int32_t> filled;
  for (int32_t& t : carried) {
    const Tensor c = tensor(t);  // a copy: tensors are appended below
    if (c.dtype != CLTRAIN_FLOAT32 || !c.is_constant() || !uniform(c) || c.shape.empty()) continue;
    if (auto it = filled.find(t); it != filled.end()) {
      t = it->second;
      continue;
    }
    const int32_t dims = new_tensor(c.name + "/dims", {static_cast<int32_t>(c.shape.size())});
    Tensor& d = m_.tensors[static_cast<size_t>(dims)];
    d.dtype = CLTRAIN_INT32;
    d.data.resize(c.shape.size() * 4);
    std::memcpy(d.data.data(), c.shape.data(), d.data.size());
    const int32_t value = new_tensor(c.name + "/value", {});
    m_.tensors[static_cast<size_t>(value)].data.assign(c.data.begin(), c.data.begin() + 4);
    const int32_t y = new_tensor(c.name + "/initial", c.shape);
    out.push_back(parts_of(w, {part_of(w, CLTRAIN_OP_FILL, {dims, value}, y)}));
    t = filled[t] = y;
  }
  int step = 0;
  for (;; ++step) {
    std::vector<std::optional<Ints>> args;
    for (int32_t t : carried) {
      if (!known_int(m_, t)) {
        args.push_back(std::nullopt);
        continue;
      }
      Ints v;
      for (int32_t e : int32_values(tensor(t))) v.push_back(e);
      args.push_back(std::move(v));
    }
    const std::optional<bool> go = condition(cond, args);
    if (!go)
      fail(w, "its number of steps is not known at load: its condition (subgraph " + std::to_string(cond_index) +
                  ") reads values computed from the data; only loops that step a fixed number of times "
                  "(a fixed sequence length) can be unrolled");
    if (!*go) break;
    if (step >= kMaxSteps) fail(w, "steps more than " + std::to_string(kMaxSteps) + " times");
    const size_t before = out.size();
    this->step(w, body, body_index, step, carried, out);
    operators_ += out.size() - before;
    if (operators_ > kMaxOperators)
      fail(w, "unrolls to more than " + std::to_string(kMaxOperators) + " operators (loops in loops multiply)");
  }
  steps_ += step;
  for (size_t j = 0; j < n; ++j) {
    remap[w.outputs[j]] = carried[j];
    results_.insert(carried[j]);
  }
  return out;
}

std::string Unroller::run() {
  for (size_t i = 0; i < file_.size(); ++i) {
    const FileOperator& r = file_[i];
    if (r.fate != FileOperator::Fate::kPending || r.code != kReverseV2 || r.inputs.size() != 2 ||
        r.outputs.size() != 1 || r.inputs[0] < 0 || !known_int(m_, r.inputs[1]) || tensor(r.inputs[1]).data.size() != 4)
      continue;
    int32_t axis = int32_values(tensor(r.inputs[1]))[0];
    if (axis < 0) axis += static_cast<int32_t>(tensor(r.inputs[0]).shape.size());
    reversed_[r.outputs[0]] = {r.inputs[0], axis};
  }
  int loops = 0;
  std::map<int32_t, int32_t> remap;  // a loop's output -> the tensor its last step wrote
  std::vector<FileOperator> done;
  std::vector<FileOperator> todo(file_.rbegin(), file_.rend());  // a stack: the next operator last
  while (!todo.empty()) {
    FileOperator f = std::move(todo.back());
    todo.pop_back();
    for (int32_t& t : f.inputs)
      if (auto it = remap.find(t); it != remap.end()) t = it->second;
    if (f.fate == FileOperator::Fate::kPending && f.code == kWhile) {
      std::vector<FileOperator> body = expand(f, remap);
      ++loops;
      for (size_t k = body.size(); k-- > 0;) todo.push_back(std::move(body[k]));
      last_loop_ = f;
      continue;
    }
    if (f.fate == FileOperator::Fate::kPending && !f.part) {
      bool reads_loop = false;
      for (int32_t t : f.inputs) reads_loop = reads_loop || results_.count(t) || rows_.count(t);
      // A GATHER at a constant index after the loop (onnx2tf's out[:, -1] of the loop's list, through
      // its layout TRANSPOSEs): that element's SLICE, as in the steps.
      reads_loop = reads_loop || (f.code == kGather && f.inputs.size() == 2 && known_int(m_, f.inputs[1]));
      std::vector<FileOperator> made;
      // The model's own slices of what a loop returned (the last step of its list): as the steps'.
      if (reads_loop && take(f, f, made)) {
        if (made.empty()) m_.folded_ops.push_back(f.index);
        for (FileOperator& p : made) done.push_back(std::move(p));
        continue;
      }
      // What the model's own operators read of a row: concatenated before the first of them.
      for (int32_t& t : f.inputs)
        if (t >= 0) t = materialize(t, last_loop_, made);
      for (FileOperator& p : made) done.push_back(std::move(p));
    }
    done.push_back(std::move(f));
  }
  if (!loops) return "";
  for (int32_t& t : m_.outputs) {
    if (auto it = remap.find(t); it != remap.end()) t = it->second;
    t = materialize(t, last_loop_, done);
  }
  // Operators no one reads (a step's list write the next step overwrites, a REVERSE_V2 whose
  // reversal the loop read by index): left out, back to front.
  std::vector<size_t> readers(m_.tensors.size(), 0);
  auto count = [&](const FileOperator& f, int sign) {
    auto add = [&](const std::vector<int32_t>& in) {
      for (int32_t t : in)
        if (t >= 0) readers[static_cast<size_t>(t)] += static_cast<size_t>(sign);
    };
    if (f.fate == FileOperator::Fate::kLowered)
      for (const Operator& op : f.lowered) add(op.inputs);
    else if (f.fate == FileOperator::Fate::kPending)
      add(f.inputs);
  };
  for (const FileOperator& f : done) count(f, 1);
  for (int32_t t : m_.outputs) ++readers[static_cast<size_t>(t)];
  for (size_t k = done.size(); k-- > 0;) {
    FileOperator& f = done[k];
    const bool reverse = f.code == kReverseV2 && !f.part && f.outputs.size() == 1 && reversed_.count(f.outputs[0]);
    if (!f.part && !reverse) continue;
    if (f.fate != FileOperator::Fate::kPending && f.fate != FileOperator::Fate::kLowered) continue;
    std::vector<int32_t> outs = f.outputs;
    if (f.fate == FileOperator::Fate::kLowered) {
      outs.clear();
      for (const Operator& op : f.lowered) outs.insert(outs.end(), op.outputs.begin(), op.outputs.end());
    }
    bool read = false;
    for (int32_t t : outs) read = read || (t >= 0 && readers[static_cast<size_t>(t)] > 0);
    if (read) continue;
    count(f, -1);
    f.fate = FileOperator::Fate::kFolded;
    f.lowered.clear();
    if (reverse) m_.folded_ops.push_back(f.index);
  }
  std::sort(m_.folded_ops.begin(), m_.folded_ops.end());
  file_ = std::move(done);
  if (!m_.inputs.empty() && !tensor(m_.inputs[0]).shape.empty())
    m_.fixed_batch = "the model's WHILE loops were unrolled for the file's batch of " +
                     std::to_string(tensor(m_.inputs[0]).shape[0]) +
                     " (TensorFlow's converter writes a recurrent layer's loop for a fixed batch); convert the model "
                     "with the batch to train with";
  return "unrolled " + std::to_string(loops) + " WHILE loop" + (loops == 1 ? "" : "s") + " (" + std::to_string(steps_) +
         " steps) into the main graph";
}

}  // namespace

// Pass while-loops (import).
std::string while_loops_pass(PassInput& in) {
  bool any = false;
  for (const FileOperator& f : *in.file) any = any || (f.fate == FileOperator::Fate::kPending && f.code == kWhile);
  if (!any || !in.subgraphs) return "";
  Unroller u(*in.m, *in.file, *in.subgraphs, in.what);
  return u.run();
}

}  // namespace cltrain
