// Pass reverses (import): REVERSE_V2 of a float activation along one axis — how TensorFlow's
// converter feeds the backward layer of a Keras Bidirectional its sequence (then reverses what it
// returns) — loads as a SLICE per position along the axis and CONCATENATIONs of them in the
// opposite order: copies only, so forward and backward are exact. All parts of the file's
// REVERSE_V2, which export writes back as it was.
#include <cstring>
#include <string>
#include <vector>

#include "passes/lowering.h"
#include "passes/passes.h"

namespace cltrain {

std::string reverses_pass(PassInput& in) {
  constexpr int32_t kReverseV2 = 105;
  Model& m = *in.m;
  int reversed = 0;
  for (FileOperator& fo : *in.file) {
    if (fo.fate != FileOperator::Fate::kPending || fo.code != kReverseV2 || fo.inputs.size() != 2 ||
        fo.outputs.size() != 1 || fo.inputs[0] < 0 || fo.inputs[1] < 0 || fo.outputs[0] < 0)
      continue;
    const Tensor x = m.tensors[static_cast<size_t>(fo.inputs[0])];  // a copy: tensors are appended below
    const Tensor& axes = m.tensors[static_cast<size_t>(fo.inputs[1])];
    if (x.dtype != CLTRAIN_FLOAT32 || x.is_constant() || x.shape.empty() || !axes.is_constant() ||
        axes.dtype != CLTRAIN_INT32 || axes.data.size() != 4)
      continue;
    int32_t axis = 0;
    std::memcpy(&axis, axes.data.data(), 4);
    const int32_t rank = static_cast<int32_t>(x.shape.size());
    if (axis < 0) axis += rank;
    if (axis <= 0 || axis >= rank) continue;  // never the batch axis
    const int32_t n = x.shape[static_cast<size_t>(axis)];
    Lowering l{m, fo, {}};
    std::vector<int32_t> unit = x.shape, parts;
    unit[static_cast<size_t>(axis)] = 1;
    for (int32_t k = n; k-- > 0;) {
      const int32_t part = l.tensor(x, unit, "/reverse" + std::to_string(k));
      Operator s = l.part(CLTRAIN_OP_SLICE, {fo.inputs[0]}, part);
      s.params.pad_before[axis] = k;
      s.params.pad_after[axis] = n - 1 - k;
      l.ops.push_back(std::move(s));
      parts.push_back(part);
    }
    l.concatenate(std::move(parts), axis, fo.outputs[0], x.shape);
    fo.lowered = std::move(l.ops);
    fo.fate = FileOperator::Fate::kLowered;
    ++reversed;
  }
  if (!reversed) return "";
  return "loaded " + std::to_string(reversed) + " REVERSE_V2 operator" + (reversed == 1 ? "" : "s") +
         " as SLICEs concatenated in the opposite order";
}

}  // namespace cltrain
