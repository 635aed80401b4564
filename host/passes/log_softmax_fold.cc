// Pass log-softmax (import): litert-torch writes F.log_softmax(x, dim=-1) as the arithmetic of its
// stable form, m = REDUCE_MAX(x) (then MAXIMUM(m, -inf) and a RESHAPE to keep the reduced axis),
// s = SUB(x, m), y = SUB(s, LOG(SUM(EXP(s), keepDims))). Where a file holds exactly that over the
// last axis (every middle tensor read only inside the pattern, none a model output), it loads as
// one LOG_SOFTMAX(x) -> y, which computes the same (x - max - log sum exp(x - max)) and trains
// with its own backward; the other operators fold (export writes all of them back as they were).
// pytorch/examples' MNIST Net and every model trained with NLLLoss end this way.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "circle_generated.h"
#include "cltrain/cltrain_ops.h"
#include "passes/file_links.h"
#include "passes/passes.h"

namespace cltrain {

namespace {

constexpr int32_t kExp = 47, kLog = 73, kSub = 41, kSum = 74, kReduceMax = 82, kMaximum = 55, kReshape = 22;

struct Matcher {
  const Model& m;
  const std::vector<FileOperator>& ops;
  const FileLinks& links;

  int32_t at(const FileOperator* fo) const { return static_cast<int32_t>(fo - ops.data()); }
  const Tensor& tensor(int32_t t) const { return m.tensors[static_cast<size_t>(t)]; }
  // The pending operator of that code writing t, where t is read by exactly `readers` operators
  // and is no model output; else null.
  const FileOperator* writer(int32_t t, int32_t code, size_t readers = 1) const {
    const int32_t w = links.writer(t);
    if (w < 0 || links.reader_count(t) != readers) return nullptr;
    if (std::find(m.outputs.begin(), m.outputs.end(), t) != m.outputs.end()) return nullptr;
    const FileOperator& fo = ops[static_cast<size_t>(w)];
    if (fo.code != code || fo.fate != FileOperator::Fate::kPending || fo.outputs.size() != 1) return nullptr;
    return &fo;
  }
  // A reduction over x's last axis alone (a constant int32 axis of one element: rank-1 or -1).
  bool last_axis(const FileOperator& r, int32_t x) const {
    if (r.inputs.size() != 2 || r.inputs[0] != x || !links.valid(r.inputs[1])) return false;
    const Tensor& a = tensor(r.inputs[1]);
    if (a.dtype != CLTRAIN_INT32 || a.data.size() != 4) return false;
    int32_t axis;
    std::memcpy(&axis, a.data.data(), 4);
    const int32_t rank = static_cast<int32_t>(tensor(x).shape.size());
    return rank > 0 && (axis == rank - 1 || axis == -1);
  }
  static bool keeps_dims(const FileOperator& r) {
    const auto* o = r.op ? r.op->builtin_options_as_ReducerOptions() : nullptr;
    return o && o->keep_dims();
  }
  static bool plain_sub(const FileOperator& s) {
    if (s.inputs.size() != 2) return false;
    const auto* o = s.op ? s.op->builtin_options_as_SubOptions() : nullptr;
    return !o || o->fused_activation_function() == fb::ActivationFunctionType::NONE;
  }
  bool minus_infinity(int32_t t) const {
    if (!links.valid(t)) return false;
    const Tensor& c = tensor(t);
    float v;
    if (c.dtype != CLTRAIN_FLOAT32 || c.data.size() != 4) return false;
    std::memcpy(&v, c.data.data(), 4);
    return std::isinf(v) && v < 0;
  }
  // The row maxima the first SUB subtracts from x, as [.., 1]: REDUCE_MAX(x, keepDims), or
  // REDUCE_MAX(x) -> MAXIMUM(-inf) (optional) -> RESHAPE. Appends the operators to *parts.
  bool row_max(int32_t mb, int32_t x, std::vector<int32_t>* parts) const {
    const Tensor& xt = tensor(x);
    std::vector<int32_t> kept = xt.shape;
    kept.back() = 1;
    if (tensor(mb).shape != kept) return false;
    int32_t t = mb;
    if (const FileOperator* r = writer(t, kReshape)) {
      parts->push_back(at(r));
      t = r->inputs.empty() ? -1 : r->inputs[0];
    }
    if (const FileOperator* mx = writer(t, kMaximum)) {
      if (mx->inputs.size() != 2) return false;
      int32_t in;
      if (minus_infinity(mx->inputs[1]))
        in = mx->inputs[0];
      else if (minus_infinity(mx->inputs[0]))
        in = mx->inputs[1];
      else
        return false;
      parts->push_back(at(mx));
      t = in;
    }
    const FileOperator* r = writer(t, kReduceMax);
    if (!r || !last_axis(*r, x)) return false;
    // Without the RESHAPE the maxima keep the reduced axis themselves.
    if (t == mb && !keeps_dims(*r)) return false;
    parts->push_back(at(r));
    return true;
  }
  // Matches the pattern ending at the SUB `last`; its other operators (positions in ops) in *parts and the
  // input x in *x.
  bool match(const FileOperator& last, std::vector<int32_t>* parts, int32_t* x) const {
    if (last.code != kSub || last.fate != FileOperator::Fate::kPending || !plain_sub(last) || last.outputs.size() != 1)
      return false;
    const int32_t s = last.inputs[0], l = last.inputs[1];
    const FileOperator* log = writer(l, kLog);
    if (!log || log->inputs.size() != 1) return false;
    const FileOperator* sum = writer(log->inputs[0], kSum);
    if (!sum || !keeps_dims(*sum) || sum->inputs.empty()) return false;
    const FileOperator* exp = writer(sum->inputs[0], kExp);
    if (!exp || exp->inputs.size() != 1 || exp->inputs[0] != s || !last_axis(*sum, sum->inputs[0])) return false;
    const FileOperator* shift = writer(s, kSub, 2);  // read by the EXP and the last SUB
    if (!shift || !plain_sub(*shift)) return false;
    *x = shift->inputs[0];
    if (!links.valid(*x) || tensor(*x).dtype != CLTRAIN_FLOAT32 || tensor(*x).is_constant()) return false;
    if (tensor(s).shape != tensor(*x).shape || tensor(last.outputs[0]).shape != tensor(*x).shape) return false;
    parts->assign({at(log), at(sum), at(exp), at(shift)});
    return row_max(shift->inputs[1], *x, parts);
  }
};

}  // namespace

std::string log_softmax_pass(PassInput& in) {
  Model& m = *in.m;
  std::vector<FileOperator>& ops = *in.file;
  const FileLinks links(ops, m.tensors.size());
  const Matcher matcher{m, ops, links};
  int n = 0;
  for (FileOperator& last : ops) {
    std::vector<int32_t> parts;
    int32_t x = -1;
    if (!matcher.match(last, &parts, &x)) continue;
    for (int32_t k : parts) {
      ops[static_cast<size_t>(k)].fate = FileOperator::Fate::kFolded;
      m.folded_ops.push_back(ops[static_cast<size_t>(k)].index);
    }
    Operator op;
    op.op = CLTRAIN_OP_LOG_SOFTMAX;
    op.inputs = {x};
    op.outputs = {last.outputs[0]};
    op.file_index = last.index;
    op.part = true;
    last.lowered = {op};
    last.fate = FileOperator::Fate::kLowered;
    ++n;
  }
  std::sort(m.folded_ops.begin(), m.folded_ops.end());
  return n ? "loaded " + std::to_string(n) + " log_softmax" + (n == 1 ? "" : "s") +
                 " written as REDUCE_MAX, SUB, EXP, SUM, LOG, SUB as LOG_SOFTMAX (the same arithmetic, one operator)"
           : "";
}

}  // namespace cltrain
