// Pass row-reshapes (load).
#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "ops/op_descriptor.h"
#include "passes/passes.h"

namespace cltrain {
namespace {

// Keras's Dense on an input of rank 3 or more without a static shape (Tensordot) converts as
// RESHAPE(x [B, S.., K] -> [B*S.., K]) -> FULLY_CONNECTED -> RESHAPE(-> [B, S.., N]), with both
// targets computed by shape operators. The first product mixes the batch into the rows, which a
// batch change cannot follow; FULLY_CONNECTED keeps x's leading dimensions itself (keep_num_dims),
// so the two reshapes are folded: the FULLY_CONNECTED reads x and writes the second reshape's
// output (the file keeps them; export writes the first reshape's output back as its input).
int32_t fold_row_reshapes(Model& m) {
  int32_t folded = 0;
  const size_t nt = m.tensors.size();
  std::vector<int> readers(nt, 0);
  auto read = [&](int32_t t) {
    if (t >= 0 && static_cast<size_t>(t) < nt) ++readers[static_cast<size_t>(t)];
  };
  for (const Operator& op : m.operators)
    for (int32_t t : op.inputs) read(t);
  for (const ShapeOperator& op : m.shape_ops)
    for (int32_t t : op.inputs) read(t);
  for (int32_t t : m.outputs) read(t);
  std::vector<int32_t> producer(nt, -1), reader(nt, -1);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    for (int32_t t : m.operators[i].outputs)
      if (t >= 0) producer[static_cast<size_t>(t)] = static_cast<int32_t>(i);
    for (int32_t t : m.operators[i].inputs)
      if (t >= 0) reader[static_cast<size_t>(t)] = static_cast<int32_t>(i);
  }
  auto target = [&](const Operator& r) {
    std::vector<int32_t> v;
    if (r.inputs.size() < 2 || r.inputs[1] < 0) return v;
    const Tensor& s = m.tensors[static_cast<size_t>(r.inputs[1])];
    if (s.dtype != CLTRAIN_INT32 || s.shape.size() != 1) return v;
    v.resize(s.data.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), s.data.data(), v.size() * 4);
    return v;
  };
  // Each entry the expected dimension, or -1 (inferred) once.
  auto matches = [](const std::vector<int32_t>& t, const std::vector<int64_t>& want) {
    if (t.size() != want.size() || std::count(t.begin(), t.end(), -1) > 1) return false;
    for (size_t d = 0; d < t.size(); ++d)
      if (t[d] != -1 && t[d] != want[d]) return false;
    return true;
  };
  std::vector<bool> drop(m.operators.size(), false);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    Operator& fc = m.operators[i];
    if (fc.op != CLTRAIN_OP_FULLY_CONNECTED || fc.inputs.size() < 2 || fc.outputs.size() != 1) continue;
    const int32_t y1 = fc.inputs[0], y2 = fc.outputs[0];
    if (y1 < 0 || y2 < 0 || fc.inputs[1] < 0 || readers[static_cast<size_t>(y1)] != 1 ||
        readers[static_cast<size_t>(y2)] != 1)
      continue;
    const int32_t p = producer[static_cast<size_t>(y1)], q = reader[static_cast<size_t>(y2)];
    if (p < 0 || q < 0 || drop[static_cast<size_t>(p)] || drop[static_cast<size_t>(q)]) continue;
    const Operator& r1 = m.operators[static_cast<size_t>(p)];
    const Operator& r2 = m.operators[static_cast<size_t>(q)];
    if (r1.op != CLTRAIN_OP_RESHAPE || r2.op != CLTRAIN_OP_RESHAPE || r2.inputs[0] != y2 || r1.inputs.empty() ||
        r1.inputs[0] < 0 || r2.outputs.size() != 1)
      continue;
    const int32_t x = r1.inputs[0];
    const std::vector<int32_t>& xs = m.tensors[static_cast<size_t>(x)].shape;
    const std::vector<int32_t>& ws = m.tensors[static_cast<size_t>(fc.inputs[1])].shape;
    if (xs.size() < 3 || ws.size() != 2 || xs.back() != ws[1]) continue;
    int64_t rows = 1;
    std::vector<int64_t> kept;
    for (size_t d = 0; d + 1 < xs.size(); ++d) rows *= xs[d], kept.push_back(xs[d]);
    kept.push_back(ws[0]);
    if (!matches(target(r1), {rows, xs.back()}) || !matches(target(r2), kept)) continue;
    m.reads_instead[y1] = x;
    fc.inputs[0] = x;
    fc.outputs[0] = r2.outputs[0];
    drop[static_cast<size_t>(p)] = drop[static_cast<size_t>(q)] = true;
    ++folded;
  }
  fold_operators(m, drop);
  return folded;
}

}  // namespace

std::string row_reshapes_pass(PassInput& in) {
  const int32_t n = fold_row_reshapes(*in.m);
  return n ? "folded the RESHAPEs around " + std::to_string(n) + " FULLY_CONNECTED operator" + (n == 1 ? "" : "s") +
                 " (a Dense on rank 3 or more)"
           : "";
}

}  // namespace cltrain
