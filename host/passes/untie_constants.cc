// Pass untie-constants (setup): constants a converter merged become one weight per layer.
#include "passes/model_edits.h"

#include <algorithm>
#include <map>
#include <set>

#include "ops/op_descriptor.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {

std::string untie_merged_constants(Model& m) {
  // Readers of each float32 constant: (operator, input slot).
  std::map<int32_t, std::vector<std::pair<size_t, size_t>>> readers;
  for (size_t i = 0; i < m.operators.size(); ++i)
    for (size_t k = 0; k < m.operators[i].inputs.size(); ++k) {
      const int32_t t = m.operators[i].inputs[k];
      if (t >= 0 && is_float_constant(m.tensors[static_cast<size_t>(t)])) readers[t].push_back({i, k});
    }
  int32_t untied = 0, copies = 0;
  for (const auto& [t, uses] : readers) {
    std::set<size_t> ops;
    for (const auto& u : uses) ops.insert(u.first);
    if (ops.size() < 2 || !uniform(m.tensors[static_cast<size_t>(t)])) continue;
    bool all_broadcast = true;  // a scalar of element-wise operators is not trained: nothing to untie
    for (size_t op : ops) all_broadcast = all_broadcast && find_op(m.operators[op].op)->broadcasts;
    if (all_broadcast && m.tensors[static_cast<size_t>(t)].elements() == 1) continue;
    // Group the readers: operators that share a constant with varied values share t too.
    std::vector<size_t> list(ops.begin(), ops.end());
    std::vector<size_t> group(list.size());
    for (size_t a = 0; a < list.size(); ++a) {
      group[a] = a;
      for (size_t b = 0; b < a && group[a] == a; ++b)
        for (int32_t x : m.operators[list[a]].inputs)
          if (x >= 0 && x != t && is_float_constant(m.tensors[static_cast<size_t>(x)]) &&
              !uniform(m.tensors[static_cast<size_t>(x)]) &&
              std::count(m.operators[list[b]].inputs.begin(), m.operators[list[b]].inputs.end(), x)) {
            group[a] = group[b];
            break;
          }
    }
    std::map<size_t, int32_t> tensor_of_group;  // the first group keeps t
    for (size_t a = 0; a < list.size(); ++a) {
      const size_t g = group[a];
      if (tensor_of_group.empty()) tensor_of_group[g] = t;
      if (!tensor_of_group.count(g)) {
        Tensor copy = m.tensors[static_cast<size_t>(t)];
        copy.name += "/untied" + std::to_string(tensor_of_group.size());
        tensor_of_group[g] = append_tensor(m, std::move(copy));
        ++copies;
      }
      for (int32_t& x : m.operators[list[a]].inputs)
        if (x == t) x = tensor_of_group[g];
    }
    if (tensor_of_group.size() > 1) ++untied;
  }
  if (untied == 0) return "";
  return std::to_string(untied) + " constant" + (untied == 1 ? "" : "s") +
         " that the converter merged (equal values read by layers that do not share weights) now train as " +
         std::to_string(untied + copies) + " separate weights, one per layer";
}

std::string untie_constants_pass(PassInput& in) {
  std::string line = untie_merged_constants(*in.m);
  if (!line.empty()) in.results->warnings.push_back(line);
  return line;
}

}  // namespace cltrain
