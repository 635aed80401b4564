// Pass packs (import): PACK (TensorFlow's stack) of float activations — how an unrolled Keras RNN
// with return_sequences=True gathers its steps: PACK on axis 0, a TRANSPOSE [1, 0, 2] to put the
// batch first, and, where the next RNN layer steps through the stack, an UNPACK of the PACK's own
// output — loads as a RESHAPE of each input (a unit axis added, the same elements) and
// CONCATENATIONs along the stacking axis (at most CLTRAIN_MAX_STEP_IO inputs each; a tree beyond),
// all parts of the file's PACK, which export writes back as it was. A TRANSPOSE of the stack that
// keeps the other axes in their order folds: the stack goes straight to the axis the TRANSPOSE
// moves it to. An UNPACK of the stack along its axis (SLICEs by split-slices) reads the PACK's
// inputs again: each part a RESHAPE (a copy) of one. The host's shape operators read the declared
// shape. Only where the batch stays the first axis: a stack on axis 0 that anything else reads is
// left to the check, which names PACK.
#include <algorithm>
#include <cstring>
#include <vector>

#include "circle_generated.h"
#include "cltrain/cltrain_backend.h"
#include "cltrain/cltrain_ops.h"
#include "passes/file_links.h"
#include "passes/lowering.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {
namespace {

constexpr int32_t kPack = 83, kTranspose = 39, kUnpack = 88;

// The constant int32 values of t, or {} where t is not one.
std::vector<int32_t> int32_values(const Model& m, int32_t t) {
  if (t < 0 || static_cast<size_t>(t) >= m.tensors.size()) return {};
  const Tensor& c = m.tensors[static_cast<size_t>(t)];
  if (c.dtype != CLTRAIN_INT32 || !c.is_constant()) return {};
  std::vector<int32_t> v(c.data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), c.data.data(), v.size() * 4);
  return v;
}

// Where the stacking axis a of a rank-`rank` PACK output ends up after TRANSPOSE perm, where perm
// is a permutation that keeps the other axes in their order; -1 otherwise.
int32_t moved_axis(const std::vector<int32_t>& perm, int32_t a, size_t rank) {
  if (perm.size() != rank) return -1;
  std::vector<int32_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t d = 0; d < rank; ++d)
    if (sorted[d] != static_cast<int32_t>(d)) return -1;
  int32_t last = -1, to = -1;
  for (size_t j = 0; j < rank; ++j) {
    if (perm[j] == a) {
      to = static_cast<int32_t>(j);
      continue;
    }
    if (perm[j] < last) return -1;
    last = perm[j];
  }
  return to;
}

}  // namespace

std::string packs_pass(PassInput& in) {
  Model& m = *in.m;
  std::vector<FileOperator>& file = *in.file;
  const FileLinks links(file, m.tensors.size());
  int packs = 0, transposes = 0, unpacks = 0;
  for (FileOperator& fo : file) {
    if (fo.fate != FileOperator::Fate::kPending || fo.code != kPack || fo.inputs.empty() || fo.outputs.size() != 1 ||
        !links.valid(fo.outputs[0]) || !links.valid(fo.inputs[0]))
      continue;
    const Tensor& x0 = m.tensors[static_cast<size_t>(fo.inputs[0])];
    bool plain = !x0.shape.empty();
    for (int32_t x : fo.inputs) {
      plain = plain && links.valid(x);
      if (!plain) break;
      const Tensor& t = m.tensors[static_cast<size_t>(x)];
      plain = t.dtype == CLTRAIN_FLOAT32 && !t.is_constant() && t.shape == x0.shape;
    }
    if (!plain) continue;
    const size_t rank = x0.shape.size() + 1;
    const auto* o = fo.op->builtin_options_as_PackOptions();
    int32_t axis = o ? o->axis() : 0;
    if (axis < 0) axis += static_cast<int32_t>(rank);
    if (axis < 0 || axis >= static_cast<int32_t>(rank)) continue;
    // Who reads the stack: a TRANSPOSE that keeps the other axes in order (the stack goes where it
    // moves the axis), an UNPACK along the same axis (split-slices made it SLICEs: each part is
    // just an input again), the host's shape operators (they read the declared shape), the rest.
    const int32_t y = fo.outputs[0];
    FileOperator* transpose = nullptr;
    int32_t to = -1;
    std::vector<FileOperator*> unstacks;
    bool others = std::find(m.outputs.begin(), m.outputs.end(), y) != m.outputs.end();
    for (const auto& [reader, slot] : links.readers[static_cast<size_t>(y)]) {
      FileOperator& r = file[static_cast<size_t>(reader)];
      if (r.fate == FileOperator::Fate::kHost) continue;
      if (!transpose && r.code == kTranspose && r.fate == FileOperator::Fate::kPending && slot == 0 &&
          r.inputs.size() == 2 && r.outputs.size() == 1 && links.valid(r.outputs[0])) {
        const int32_t j = moved_axis(int32_values(m, r.inputs[1]), axis, rank);
        if (j >= 1) {
          transpose = &r, to = j;
          continue;
        }
      }
      if (r.code == kUnpack && r.fate == FileOperator::Fate::kLowered && r.outputs.size() == fo.inputs.size()) {
        const auto* u = r.op->builtin_options_as_UnpackOptions();
        int32_t ua = u ? u->axis() : 0;
        if (ua < 0) ua += static_cast<int32_t>(rank);
        bool same = ua == axis;
        for (int32_t t : r.outputs)
          same = same && links.valid(t) && m.tensors[static_cast<size_t>(t)].shape == x0.shape;
        if (same) {
          unstacks.push_back(&r);
          continue;
        }
      }
      others = true;
    }
    if (others && axis == 0) continue;                 // the stack itself would not have the batch first
    std::vector<std::pair<int32_t, int32_t>> targets;  // (tensor, stacking axis)
    if (transpose) targets.push_back({transpose->outputs[0], to});
    if (others) targets.push_back({y, axis});
    bool fits = true;
    for (const auto& [t, a] : targets) {
      std::vector<int32_t> stacked = x0.shape;
      stacked.insert(stacked.begin() + a, static_cast<int32_t>(fo.inputs.size()));
      const std::vector<int32_t>& declared = m.tensors[static_cast<size_t>(t)].shape;
      fits = fits && (declared.empty() || declared == stacked);
    }
    if (!fits) continue;
    Lowering l{m, fo, {}};
    for (const auto& [t, a] : targets) {
      std::vector<int32_t> unit = x0.shape, stacked = x0.shape;
      unit.insert(unit.begin() + a, 1);
      stacked.insert(stacked.begin() + a, static_cast<int32_t>(fo.inputs.size()));
      std::vector<int32_t> parts;
      for (int32_t x : fo.inputs) {
        const int32_t r = l.tensor(m.tensors[static_cast<size_t>(x)], unit, "/unit" + std::to_string(a));
        l.ops.push_back(l.part(CLTRAIN_OP_RESHAPE, {x}, r));
        parts.push_back(r);
      }
      l.concatenate(std::move(parts), a, t, stacked);
    }
    // Each UNPACK part k is the PACK's input k: a RESHAPE to the same shape (a copy), still a part
    // of the UNPACK for export.
    for (FileOperator* u : unstacks) {
      u->lowered.clear();
      for (size_t k = 0; k < u->outputs.size(); ++k) {
        u->lowered.push_back(part_of(*u, CLTRAIN_OP_RESHAPE, {fo.inputs[k]}, u->outputs[k]));
      }
      ++unpacks;
    }
    fo.lowered = std::move(l.ops);
    fo.fate = fo.lowered.empty() ? FileOperator::Fate::kFolded : FileOperator::Fate::kLowered;
    ++packs;
    if (transpose) transpose->fate = FileOperator::Fate::kFolded, ++transposes;
  }
  if (!packs) return "";
  std::string line =
      "loaded " + std::to_string(packs) + " PACK" + (packs == 1 ? "" : "s") + " as RESHAPEs and CONCATENATIONs";
  if (transposes)
    line += ", the " + std::to_string(transposes) + " TRANSPOSE" + (transposes == 1 ? "" : "s") + " after them folded";
  if (unpacks)
    line += ", " + std::to_string(unpacks) + " UNPACK" + (unpacks == 1 ? "" : "s") + " of them read as their inputs";
  return line;
}

}  // namespace cltrain
