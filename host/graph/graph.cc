// The index helpers of graph.h.
#include "graph/graph.h"

namespace cltrain {

std::vector<int32_t> model_operator_index(const Model& m) {
  std::vector<int32_t> index(file_operator_count(m), -1);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    if (m.operators[i].added) continue;  // not the file's
    const size_t f = static_cast<size_t>(file_operator_index(m, i));
    if (f < index.size() && index[f] < 0) index[f] = static_cast<int32_t>(i);
  }
  return index;
}

}  // namespace cltrain
