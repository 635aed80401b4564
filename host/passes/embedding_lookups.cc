// Pass embedding-lookups (import): EMBEDDING_LOOKUP (what litert-torch writes for nn.Embedding)
// reads rows of its table (input 1) at its ids (input 0), which is GATHER's forward on axis 0 with
// the operands the other way round: each loads as a GATHER model operator of (table, ids), a part
// of the file's operator (export writes it back as it was), so the table trains as a Keras
// Embedding's does (repeated ids accumulate).
#include "cltrain/cltrain_ops.h"
#include "passes/passes.h"

namespace cltrain {

std::string embedding_lookups_pass(PassInput& in) {
  constexpr int32_t kEmbeddingLookup = 7;
  const Model& m = *in.m;
  int n = 0;
  for (FileOperator& fo : *in.file) {
    if (fo.fate != FileOperator::Fate::kPending || fo.code != kEmbeddingLookup) continue;
    if (fo.inputs.size() != 2 || fo.outputs.size() != 1 || fo.inputs[0] < 0 || fo.inputs[1] < 0) continue;
    const Tensor& table = m.tensors[static_cast<size_t>(fo.inputs[1])];
    if (table.dtype != CLTRAIN_FLOAT32) continue;  // a quantized table: left to be refused by name
    Operator op;
    op.op = CLTRAIN_OP_GATHER;
    op.inputs = {fo.inputs[1], fo.inputs[0]};
    op.outputs = {fo.outputs[0]};
    op.file_index = fo.index;
    op.part = true;
    fo.lowered = {op};
    fo.fate = FileOperator::Fate::kLowered;
    ++n;
  }
  return n ? "loaded " + std::to_string(n) + " EMBEDDING_LOOKUP" + (n == 1 ? "" : "s") + " as GATHER" +
                 (n == 1 ? "" : "s") + " of the table's rows (the table trains)"
           : "";
}

}  // namespace cltrain
