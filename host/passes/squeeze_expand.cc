// Pass squeeze-expand (import): SQUEEZE and EXPAND_DIMS of a float tensor (what litert-torch writes
// for unsqueeze/squeeze, and Keras for a Conv1D's or GlobalMaxPooling1D's added axis) only give the
// same elements another shape: each loads as a RESHAPE model operator of its input to the output
// the file declares (a part of the file's operator: export writes the file's operator back as it
// was). Only where the first axis (the batch) stays the first axis of both, so that a batch change
// follows; an int32 one over shapes is the shape-operators pass's.
#include <cstring>
#include <vector>

#include "circle_generated.h"
#include "cltrain/cltrain_ops.h"
#include "passes/passes.h"

namespace cltrain {
namespace {

// The axes the operator adds (EXPAND_DIMS: its constant axis operand, counted in y's rank) or
// removes (SQUEEZE: its squeeze_dims, counted in x's rank; none listed: every axis of size 1), or
// {-1} where they cannot be read.
std::vector<int32_t> moved_axes(const Model& m, const FileOperator& fo, const Tensor& x, const Tensor& y) {
  std::vector<int32_t> axes;
  int32_t rank = static_cast<int32_t>(y.shape.size());
  if (fo.code == 70) {
    if (fo.inputs.size() != 2 || fo.inputs[1] < 0) return {-1};
    const Tensor& a = m.tensors[static_cast<size_t>(fo.inputs[1])];
    if (a.dtype != CLTRAIN_INT32 || a.data.size() != 4) return {-1};
    axes.resize(1);
    std::memcpy(axes.data(), a.data.data(), 4);
  } else {
    rank = static_cast<int32_t>(x.shape.size());
    if (const auto* o = fo.op->builtin_options_as_SqueezeOptions(); o && o->squeeze_dims())
      axes.assign(o->squeeze_dims()->begin(), o->squeeze_dims()->end());
    if (axes.empty())
      for (int32_t d = 0; d < rank; ++d)
        if (x.shape[static_cast<size_t>(d)] == 1) axes.push_back(d);
  }
  for (int32_t& a : axes) a = a < 0 ? a + rank : a;
  return axes;
}

}  // namespace

std::string squeeze_expand_pass(PassInput& in) {
  constexpr int32_t kSqueeze = 43, kExpandDims = 70;
  const Model& m = *in.m;
  auto tensor = [&](int32_t t) -> const Tensor* {
    return t >= 0 && static_cast<size_t>(t) < m.tensors.size() ? &m.tensors[static_cast<size_t>(t)] : nullptr;
  };
  int squeezes = 0, expands = 0;
  for (FileOperator& fo : *in.file) {
    if (fo.fate != FileOperator::Fate::kPending || (fo.code != kSqueeze && fo.code != kExpandDims)) continue;
    if (fo.inputs.empty() || fo.outputs.size() != 1) continue;
    const Tensor *x = tensor(fo.inputs[0]), *y = tensor(fo.outputs[0]);
    if (!x || !y || x->dtype != CLTRAIN_FLOAT32 || y->dtype != CLTRAIN_FLOAT32 || x->is_constant()) continue;
    if (x->shape.empty() || y->shape.empty() || x->shape[0] != y->shape[0] || x->elements() != y->elements()) continue;
    bool batch_stays = true;  // no axis added or removed at 0
    for (int32_t a : moved_axes(m, fo, *x, *y)) batch_stays = batch_stays && a >= 1;
    if (!batch_stays) continue;
    Operator op;
    op.op = CLTRAIN_OP_RESHAPE;
    op.inputs = {fo.inputs[0]};
    op.outputs = {fo.outputs[0]};
    op.file_index = fo.index;
    op.part = true;
    fo.lowered = {op};
    fo.fate = FileOperator::Fate::kLowered;
    ++(fo.code == kSqueeze ? squeezes : expands);
  }
  if (squeezes + expands == 0) return "";
  std::string line = "loaded ";
  if (squeezes) line += std::to_string(squeezes) + " SQUEEZE" + (squeezes == 1 ? "" : "s");
  if (squeezes && expands) line += " and ";
  if (expands) line += std::to_string(expands) + " EXPAND_DIMS";
  return line + " as RESHAPE" + (squeezes + expands == 1 ? "" : "s") + " (the same elements, another shape)";
}

}  // namespace cltrain
