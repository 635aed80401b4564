// Pass index-guards (import). Keras' Embedding guards its ids before the GATHER:
// SELECT_V2(LESS(ids, 0), ADD(ids, V), ids) with V the table's rows (SELECT with a fixed batch),
// which is GATHER's own rule (negative ids count from the end, cltrain_ops.h). Such a guard is
// folded: its three operators leave the graph (the file keeps them: export writes them back as
// they were, Model::folded_ops) and the GATHERs read the ids (Model::reads_instead).
#include <algorithm>
#include <cstring>
#include <vector>

#include "circle_generated.h"
#include "passes/file_links.h"
#include "passes/passes.h"

namespace cltrain {

std::string index_guards_pass(PassInput& in) {
  const std::vector<FileOperator>& ops = *in.file;
  Model& m = *in.m;
  const size_t nt = m.tensors.size();
  auto valid = [&](int32_t t) { return t >= 0 && static_cast<size_t>(t) < nt; };
  const FileLinks links(ops, nt);
  const std::vector<int32_t>& producer = links.producer;
  const auto& readers = links.readers;
  auto scalar = [&](int32_t t, int32_t* v) {
    if (!valid(t)) return false;
    const Tensor& x = m.tensors[static_cast<size_t>(t)];
    if (x.dtype != CLTRAIN_INT32 || !x.is_constant() || x.elements() != 1 || x.data.size() != 4) return false;
    std::memcpy(v, x.data.data(), 4);
    return true;
  };
  constexpr int32_t kLess = 58, kSelect = 64, kSelectV2 = 123, kAdd = 0, kGather = 36, kEmbeddingLookup = 7;
  std::vector<int32_t> folded;
  for (size_t i = 0; i < ops.size(); ++i) {
    const FileOperator& sel = ops[i];
    const std::vector<int32_t>&si = sel.inputs, &so = sel.outputs;
    if ((sel.code != kSelect && sel.code != kSelectV2) || si.size() != 3 || so.size() != 1 || !valid(so[0])) continue;
    const int32_t cond = si[0], wrapped = si[1], ids = si[2];
    if (!valid(cond) || !valid(wrapped) || !valid(ids)) continue;
    const Tensor& idt = m.tensors[static_cast<size_t>(ids)];
    if (idt.dtype != CLTRAIN_INT32 || idt.is_constant()) continue;
    const int32_t lp = producer[static_cast<size_t>(cond)], ap = producer[static_cast<size_t>(wrapped)];
    if (lp < 0 || ap < 0 || readers[static_cast<size_t>(cond)].size() != 1 ||
        readers[static_cast<size_t>(wrapped)].size() != 1)
      continue;
    const FileOperator& less = ops[static_cast<size_t>(lp)];
    const FileOperator& add = ops[static_cast<size_t>(ap)];
    const std::vector<int32_t>&li = less.inputs, &ai = add.inputs;
    int32_t zero = -1, rows = 0;
    if (less.code != kLess || li.size() != 2 || li[0] != ids || !scalar(li[1], &zero) || zero != 0) continue;
    if (add.code != kAdd || ai.size() != 2) continue;
    const auto* ao = add.op->builtin_options_as_AddOptions();
    if (ao && ao->fused_activation_function() != fb::ActivationFunctionType::NONE) continue;
    if (!((ai[0] == ids && scalar(ai[1], &rows)) || (ai[1] == ids && scalar(ai[0], &rows))) || rows <= 0) continue;
    // Every reader of the guarded ids is a GATHER's ids (slot 1; EMBEDDING_LOOKUP's: slot 0) over
    // a table of that many rows.
    bool gathers = !readers[static_cast<size_t>(so[0])].empty();
    for (const auto& [r, slot] : readers[static_cast<size_t>(so[0])]) {
      const FileOperator& ro = ops[static_cast<size_t>(r)];
      const std::vector<int32_t>& gi = ro.inputs;
      const size_t table = ro.code == kEmbeddingLookup ? 1 : 0;
      gathers = gathers && (ro.code == kGather || ro.code == kEmbeddingLookup) && slot == 1 - table && gi.size() == 2 &&
                valid(gi[table]) && !m.tensors[static_cast<size_t>(gi[table])].shape.empty() &&
                m.tensors[static_cast<size_t>(gi[table])].shape[0] == rows;
    }
    if (!gathers) continue;
    folded.insert(folded.end(), {lp, ap, static_cast<int32_t>(i)});
    m.reads_instead[so[0]] = ids;
  }
  std::sort(folded.begin(), folded.end());
  for (int32_t i : folded) {  // positions in the list (a WHILE's steps before them shift them): their file indices
    (*in.file)[static_cast<size_t>(i)].fate = FileOperator::Fate::kFolded;
    m.folded_ops.push_back((*in.file)[static_cast<size_t>(i)].index);
  }
  std::sort(m.folded_ops.begin(), m.folded_ops.end());
  const size_t n = folded.size() / 3;
  return n ? "folded " + std::to_string(n) + " index guard" + (n == 1 ? "" : "s") +
                 " before GATHER (SELECT_V2(LESS, ADD); GATHER counts negative ids from the end itself)"
           : "";
}

}  // namespace cltrain
