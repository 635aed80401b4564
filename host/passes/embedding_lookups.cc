// Pass embedding-lookups (import): EMBEDDING_LOOKUP (what litert-torch writes for nn.Embedding)
// reads rows of its table (input 1) at its ids (input 0), which is GATHER's forward on axis 0 with
// the operands the other way round: each loads as a GATHER model operator of (table, ids), a part
// of the file's operator (export writes it back as it was), so the table trains as a Keras
// Embedding's does (repeated ids accumulate).
#include <algorithm>
#include <vector>

#include "cltrain/cltrain_ops.h"
#include "passes/file_links.h"
#include "passes/passes.h"

namespace cltrain {

namespace {

constexpr int32_t kReshape = 22;

// litert-torch flattens the ids around the lookup: RESHAPE(ids [B, S] -> [B*S]), the lookup
// ([B*S, D]), RESHAPE(-> [B, S, D]). Where the file has exactly that (each middle tensor read
// once), the two RESHAPEs fold (export writes them back) and the GATHER reads the ids [B, S] and
// writes [B, S, D]: an int32 tensor never passes through a float operator. The positions of the
// two RESHAPEs in *before and *after; the ids and the output in *ids, *out.
bool flattened_ids(const Model& m, const std::vector<FileOperator>& ops, const FileLinks& l, const FileOperator& lookup,
                   int32_t* ids, int32_t* out, int32_t* before, int32_t* after) {
  const int32_t flat = lookup.inputs[0], rows = lookup.outputs[0];
  const int32_t p = l.producer[static_cast<size_t>(flat)];
  if (p < 0 || l.reader_count(flat) != 1 || l.reader_count(rows) != 1) return false;
  const FileOperator& r1 = ops[static_cast<size_t>(p)];
  if (r1.code != kReshape || r1.fate != FileOperator::Fate::kPending || r1.inputs.empty() || r1.inputs[0] < 0)
    return false;
  int32_t r2 = -1;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!ops[i].inputs.empty() && ops[i].inputs[0] == rows) r2 = static_cast<int32_t>(i);
  if (r2 < 0) return false;
  const FileOperator& back = ops[static_cast<size_t>(r2)];
  if (back.code != kReshape || back.fate != FileOperator::Fate::kPending || back.outputs.size() != 1 ||
      back.outputs[0] < 0)
    return false;
  const Tensor& x = m.tensors[static_cast<size_t>(r1.inputs[0])];
  const Tensor& table = m.tensors[static_cast<size_t>(lookup.inputs[1])];
  const Tensor& y = m.tensors[static_cast<size_t>(back.outputs[0])];
  if (x.dtype != CLTRAIN_INT32 || x.is_constant() || table.shape.empty()) return false;
  std::vector<int32_t> want = x.shape;
  want.insert(want.end(), table.shape.begin() + 1, table.shape.end());
  if (y.shape != want) return false;
  *ids = r1.inputs[0];
  *out = back.outputs[0];
  *before = p;
  *after = r2;
  return true;
}

}  // namespace

std::string embedding_lookups_pass(PassInput& in) {
  constexpr int32_t kEmbeddingLookup = 7;
  Model& m = *in.m;
  std::vector<FileOperator>& ops = *in.file;
  const FileLinks links(ops, m.tensors.size());
  int n = 0, unflattened = 0;
  for (FileOperator& fo : ops) {
    if (fo.fate != FileOperator::Fate::kPending || fo.code != kEmbeddingLookup) continue;
    if (fo.inputs.size() != 2 || fo.outputs.size() != 1 || fo.inputs[0] < 0 || fo.inputs[1] < 0 || fo.outputs[0] < 0)
      continue;
    const Tensor& table = m.tensors[static_cast<size_t>(fo.inputs[1])];
    if (table.dtype != CLTRAIN_FLOAT32) continue;  // a quantized table: left to be refused by name
    Operator op;
    op.op = CLTRAIN_OP_GATHER;
    op.inputs = {fo.inputs[1], fo.inputs[0]};
    op.outputs = {fo.outputs[0]};
    int32_t ids, out, before, after;
    if (flattened_ids(m, ops, links, fo, &ids, &out, &before, &after)) {
      op.inputs[1] = ids;
      op.outputs[0] = out;
      for (int32_t k : {before, after}) {
        ops[static_cast<size_t>(k)].fate = FileOperator::Fate::kFolded;
        m.folded_ops.push_back(ops[static_cast<size_t>(k)].index);
      }
      ++unflattened;
    }
    op.file_index = fo.index;
    op.part = true;
    fo.lowered = {op};
    fo.fate = FileOperator::Fate::kLowered;
    ++n;
  }
  std::sort(m.folded_ops.begin(), m.folded_ops.end());
  if (!n) return "";
  std::string line = "loaded " + std::to_string(n) + " EMBEDDING_LOOKUP" + (n == 1 ? "" : "s") + " as GATHER" +
                     (n == 1 ? "" : "s") + " of the table's rows (the table trains)";
  if (unflattened)
    line += "; folded the RESHAPEs that flatten the ids around " + std::to_string(unflattened) + " of them";
  return line;
}

}  // namespace cltrain
