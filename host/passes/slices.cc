// SLICE, STRIDED_SLICE, SPLIT and UNPACK as SLICE model operators (slices.h).
#include "passes/slices.h"
#include "passes/passes.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "circle_generated.h"
#include "graph/builtin_names.h"
#include "graph/labels.h"

namespace cltrain {
namespace {

constexpr int32_t kStridedSlice = 45, kSplit = 49, kUnpack = 88;

struct Loader {
  Model& m;
  const std::string& what;
  const std::string& label;

  [[noreturn]] void fail(const std::string& why) const { graph::fail(what, label + ": " + why); }

  const Tensor& tensor(int32_t t) const {
    if (t < 0 || static_cast<size_t>(t) >= m.tensors.size()) fail("operand tensor " + std::to_string(t) + " is absent");
    return m.tensors[static_cast<size_t>(t)];
  }
  // The values of a constant int32 operand.
  std::vector<int32_t> values(int32_t t, const char* name) const {
    const Tensor& c = tensor(t);
    if (c.dtype != CLTRAIN_INT32 || !c.is_constant())
      fail(std::string(name) + " " + graph::tensor_label(m, t) + " is not a constant int32 tensor");
    std::vector<int32_t> v(c.data.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), c.data.data(), v.size() * 4);
    return v;
  }
  int32_t axis(int32_t a, size_t rank) const {
    const int32_t r = static_cast<int32_t>(rank);
    if (a < -r || a >= r) fail("axis " + std::to_string(a) + " is outside rank " + std::to_string(r));
    return a < 0 ? a + r : a;
  }
  // One SLICE: x less `before` and `after` elements along each axis, written into `out`.
  // A cut of the batch axis (a SPLIT's or UNPACK's, exact at the file's batch) fixes the batch
  // (ops/slice.cc), unless fold_transposed_unpacks moves it off that axis.
  void add(int32_t x, int32_t out, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
           int32_t file_index) const {
    const Tensor& t = tensor(x);
    Operator op;
    op.op = CLTRAIN_OP_SLICE;
    op.inputs = {x};
    op.outputs = {out};
    op.file_index = file_index;
    op.part = true;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      op.params.pad_before[d] = static_cast<int32_t>(before[d]);
      op.params.pad_after[d] = static_cast<int32_t>(after[d]);
    }
    m.operators.push_back(op);
  }
};

}  // namespace

bool load_slices(Model& m, const FileOperator& f, const std::string& what) {
  // The format's SLICE loads as it is (ops/slice.cc).
  const int32_t code = f.code, file_index = f.index;
  const fb::Operator& fo = *f.op;
  const std::string& label = f.label;
  if (code != kStridedSlice && code != kSplit && code != kUnpack) return false;
  const std::vector<int32_t>& in = f.inputs;
  const std::vector<int32_t>& out = f.outputs;
  const size_t data_slot = code == kSplit ? 1 : 0;
  if (in.size() <= data_slot || in[data_slot] < 0 || static_cast<size_t>(in[data_slot]) >= m.tensors.size() ||
      m.tensors[static_cast<size_t>(in[data_slot])].dtype != CLTRAIN_FLOAT32)
    return false;
  const std::string named = label + " (" + builtin_op_name(code) + ")";  // one of the three: named
  const Loader l{m, what, named};
  const int32_t x = in[data_slot];
  const std::vector<int32_t>& shape = m.tensors[static_cast<size_t>(x)].shape;
  const size_t rank = shape.size();
  if (rank == 0) l.fail("input is a scalar");
  for (int32_t t : out) l.tensor(t);
  std::vector<int64_t> before(rank, 0), after(rank, 0);
  auto need = [&](size_t inputs, size_t outputs) {
    if (in.size() != inputs || out.size() != outputs)
      l.fail("has " + std::to_string(in.size()) + " inputs and " + std::to_string(out.size()) + " outputs, not " +
             std::to_string(inputs) + " and " + std::to_string(outputs));
  };
  if (code == kStridedSlice) {
    need(4, 1);
    const auto* o = fo.builtin_options_as_StridedSliceOptions();
    const int32_t begin_mask = o ? o->begin_mask() : 0, end_mask = o ? o->end_mask() : 0;
    if (o && (o->ellipsis_mask() != 0 || o->new_axis_mask() != 0 || o->offset()))
      l.fail("ellipsis, new-axis masks and offset are not supported");
    const int32_t shrink = o ? o->shrink_axis_mask() : 0;
    const std::vector<int32_t> begin = l.values(in[1], "begin"), end = l.values(in[2], "end"),
                               strides = l.values(in[3], "strides");
    if (begin.size() > rank || end.size() != begin.size() || strides.size() != begin.size())
      l.fail("begin, end and strides do not have one value per sliced axis");
    for (size_t d = 0; d < begin.size(); ++d) {
      if (strides[d] != 1) l.fail("stride " + std::to_string(strides[d]) + " is not supported (only 1)");
      const int64_t n = shape[d];
      auto at = [&](int64_t v) { return std::min<int64_t>(std::max<int64_t>(v < 0 ? v + n : v, 0), n); };
      int64_t b = begin_mask >> d & 1 ? 0 : at(begin[d]);
      int64_t e = end_mask >> d & 1 ? n : at(end[d]);
      if (shrink >> d & 1) {
        b = begin[d] < 0 ? begin[d] + n : begin[d];
        if (b < 0 || b >= n)
          l.fail("index " + std::to_string(begin[d]) + " of axis " + std::to_string(d) + " is outside it");
        e = b + 1;
      }
      // The batch axis: only all of it, which a mask (or 0 to the end) says; a range over the
      // stored batch would not follow a batch change.
      if (d == 0 && (!((begin_mask & 1 || begin[0] == 0) && end_mask & 1) || shrink & 1))
        l.fail("slices the batch axis (only slices that keep every sample of the batch are supported)");
      if (e <= b) l.fail("slice of axis " + std::to_string(d) + " is empty");
      before[d] = b, after[d] = n - e;
    }
    l.add(x, out[0], before, after, file_index);
    return true;
  }
  int32_t a = 0;
  if (code == kSplit) {
    if (in.size() != 2) l.fail("has " + std::to_string(in.size()) + " inputs, not 2 (axis, input)");
    const std::vector<int32_t> v = l.values(in[0], "axis");
    if (v.size() != 1) l.fail("axis is not one value");
    a = l.axis(v[0], rank);
  } else {
    if (in.size() != 1) l.fail("has " + std::to_string(in.size()) + " inputs, not 1");
    const auto* o = fo.builtin_options_as_UnpackOptions();
    a = l.axis(o ? o->axis() : 0, rank);
  }
  const size_t d = static_cast<size_t>(a);
  const int64_t n = static_cast<int64_t>(out.size());
  if (n < 1 || shape[d] % n != 0 || (code == kUnpack && shape[d] != n))
    l.fail(std::to_string(n) + " outputs do not divide axis " + std::to_string(a) + " of " + graph::shape_str(shape) +
           " evenly");
  const int64_t w = shape[d] / n;
  for (int64_t k = 0; k < n; ++k) {
    before[d] = k * w, after[d] = shape[d] - (k + 1) * w;
    l.add(x, out[static_cast<size_t>(k)], before, after, file_index);
  }
  return true;
}

void fold_transposed_unpacks(Model& m) {
  const size_t nt = m.tensors.size();
  std::vector<std::vector<size_t>> readers(nt);
  std::vector<bool> other(nt, false);  // read by a shape operator or a model output
  for (size_t i = 0; i < m.operators.size(); ++i)
    for (int32_t t : m.operators[i].inputs)
      if (t >= 0) readers[static_cast<size_t>(t)].push_back(i);
  for (const ShapeOperator& op : m.shape_ops)
    for (int32_t t : op.inputs)
      if (t >= 0) other[static_cast<size_t>(t)] = true;
  for (int32_t t : m.outputs) other[static_cast<size_t>(t)] = true;
  std::vector<bool> drop(m.operators.size(), false);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    const Operator& tr = m.operators[i];
    if (tr.op != CLTRAIN_OP_TRANSPOSE || tr.inputs.size() != 2 || tr.inputs[1] < 0 || tr.outputs.size() != 1) continue;
    const int32_t x = tr.inputs[0], t = tr.outputs[0];
    const Tensor& p = m.tensors[static_cast<size_t>(tr.inputs[1])];
    const std::vector<int32_t>& ts = m.tensors[static_cast<size_t>(t)].shape;
    const size_t rank = ts.size();
    if (x < 0 || other[static_cast<size_t>(t)] || p.dtype != CLTRAIN_INT32 || !p.is_constant() ||
        p.data.size() != rank * 4 || readers[static_cast<size_t>(t)].empty())
      continue;
    std::vector<int32_t> perm(rank);
    std::memcpy(perm.data(), p.data.data(), rank * 4);
    // A permutation of x's axes (the graph check, later, names one that is not).
    std::vector<int32_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    bool permutation = m.tensors[static_cast<size_t>(x)].shape.size() == rank;
    for (size_t d = 0; permutation && d < rank; ++d) permutation = sorted[d] == static_cast<int32_t>(d);
    if (!permutation) continue;
    // Every reader a part of one UNPACK: each keeps one element of axis a, all of the others.
    const std::vector<size_t>& r = readers[static_cast<size_t>(t)];
    const int32_t file_op = m.operators[r[0]].file_index;
    int axis = -1;
    bool ok = rank > 0;
    for (size_t k = 0; ok && k < r.size(); ++k) {
      const Operator& s = m.operators[r[k]];
      ok = s.op == CLTRAIN_OP_SLICE && s.part && s.file_index == file_op && s.inputs.size() == 1;
      for (size_t d = 0; ok && d < rank; ++d) {
        const int32_t cut = s.params.pad_before[d] + s.params.pad_after[d];
        if (cut == 0) continue;
        ok = cut == ts[d] - 1 && (axis < 0 || axis == static_cast<int>(d));
        axis = static_cast<int>(d);
      }
    }
    if (!ok || axis < 0 || static_cast<int64_t>(r.size()) != ts[static_cast<size_t>(axis)]) continue;
    // The other axes must keep their order: then part k is x's axis perm[a] at k.
    const int32_t from = perm[static_cast<size_t>(axis)];
    int32_t last = -1;
    for (size_t d = 0; ok && d < rank; ++d)
      if (static_cast<int>(d) != axis) ok = perm[d] > last, last = perm[d];
    if (!ok) continue;
    for (size_t reader : r) {
      Operator& s = m.operators[reader];
      const int32_t k = s.params.pad_before[static_cast<size_t>(axis)];
      for (size_t d = 0; d < CLTRAIN_MAX_RANK; ++d) s.params.pad_before[d] = s.params.pad_after[d] = 0;
      s.params.pad_before[static_cast<size_t>(from)] = k;
      s.params.pad_after[static_cast<size_t>(from)] = ts[static_cast<size_t>(axis)] - 1 - k;
      s.inputs[0] = x;
    }
    drop[i] = true;
  }
  fold_operators(m, drop);
}

// Pass split-slices (import).
std::string split_slices_pass(PassInput& in) {
  size_t files = 0, slices = 0;
  for (FileOperator& fo : *in.file) {
    if (fo.fate != FileOperator::Fate::kPending) continue;
    const size_t before = in.m->operators.size();
    if (!load_slices(*in.m, fo, in.what)) continue;
    fo.lowered.assign(in.m->operators.begin() + static_cast<std::ptrdiff_t>(before), in.m->operators.end());
    in.m->operators.resize(before);
    fo.fate = FileOperator::Fate::kLowered;
    ++files, slices += fo.lowered.size();
  }
  return files ? "loaded " + std::to_string(files) + " STRIDED_SLICE/SPLIT/UNPACK operator" + (files == 1 ? "" : "s") +
                     " as " + std::to_string(slices) + " SLICE" + (slices == 1 ? "" : "s")
               : "";
}

// Pass transposed-unpacks (load).
std::string transposed_unpacks_pass(PassInput& in) {
  const size_t before = in.m->folded_ops.size();
  fold_transposed_unpacks(*in.m);
  const size_t n = in.m->folded_ops.size() - before;
  return n ? "folded " + std::to_string(n) + " TRANSPOSE" + (n == 1 ? "" : "s") +
                 " before UNPACK (its parts slice the TRANSPOSE's input)"
           : "";
}

}  // namespace cltrain
