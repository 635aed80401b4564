// Pass state-updates (import): operators that only update a variable and compute nothing the
// model's outputs read. Keras 3 layers with dropout (LSTM(dropout=0.2), Dropout) carry a
// SeedGenerator whose state TensorFlow's converter keeps in the inference file: a CALL_ONCE of a
// subgraph that sets it, then VAR_HANDLE, READ_VARIABLE, an INT64 ADD and ASSIGN_VARIABLE per
// draw, none of it reaching an output
// (dropout itself is not in a converted model). Such operators are left out (the file keeps
// them: export writes them back): those that write a variable, and those whose every output only
// they read, where no input or output is a float tensor.
#include <algorithm>
#include <string>
#include <vector>

#include "passes/file_links.h"
#include "passes/passes.h"

namespace cltrain {

std::string state_updates_pass(PassInput& in) {
  constexpr int32_t kCallOnce = 129, kVarHandle = 142, kReadVariable = 143, kAssignVariable = 144;
  Model& m = *in.m;
  std::vector<FileOperator>& file = *in.file;
  bool any = false;
  for (const FileOperator& f : file) any = any || f.code == kAssignVariable;
  if (!any) return "";
  const size_t nt = m.tensors.size();
  // Live: what the model's outputs read, back through the operators that write it.
  std::vector<bool> live_tensor(nt, false), live(file.size(), false);
  for (int32_t t : m.outputs)
    if (t >= 0 && static_cast<size_t>(t) < nt) live_tensor[static_cast<size_t>(t)] = true;
  for (size_t k = file.size(); k-- > 0;) {
    const FileOperator& f = file[k];
    for (int32_t t : f.outputs) live[k] = live[k] || (t >= 0 && live_tensor[static_cast<size_t>(t)]);
    if (live[k])
      for (int32_t t : f.inputs)
        if (t >= 0) live_tensor[static_cast<size_t>(t)] = true;
  }
  const auto no_floats = [&](const FileOperator& f) {
    for (const std::vector<int32_t>* list : {&f.inputs, &f.outputs})
      for (int32_t t : *list)
        if (t >= 0 && m.tensors[static_cast<size_t>(t)].dtype == CLTRAIN_FLOAT32) return false;
    return true;
  };
  int dropped = 0;
  for (size_t k = 0; k < file.size(); ++k) {
    FileOperator& f = file[k];
    if (live[k] || f.fate != FileOperator::Fate::kPending) continue;
    const bool variable =
        f.code == kCallOnce || f.code == kVarHandle || f.code == kReadVariable || f.code == kAssignVariable;
    if (!variable && !no_floats(f)) continue;
    f.fate = FileOperator::Fate::kFolded;
    m.folded_ops.push_back(f.index);
    ++dropped;
  }
  std::sort(m.folded_ops.begin(), m.folded_ops.end());
  if (!dropped) return "";
  return "left out " + std::to_string(dropped) + " operator" + (dropped == 1 ? "" : "s") +
         " that only update a variable (a dropout layer's random seed: dropout is not in a converted model, "
         "so the model trains without it)";
}

}  // namespace cltrain
