// Helpers of the passes that add tensors to a model (after the file's, Model::file_tensor_count).
#pragma once

#include <cstring>
#include <utility>

#include "graph/graph.h"

namespace cltrain {

inline bool is_float_constant(const Tensor& t) { return t.is_constant() && t.dtype == CLTRAIN_FLOAT32; }

// All values the same: what an initializer (zeros, ones) gives, and so what a converter may have
// merged between layers that never shared it.
inline bool uniform(const Tensor& t) {
  if (t.data.size() < 8) return true;
  for (size_t i = 4; i < t.data.size(); i += 4)
    if (std::memcmp(t.data.data(), t.data.data() + i, 4) != 0) return false;
  return true;
}

inline int32_t append_tensor(Model& m, Tensor t) {
  t.buffer = 0;
  t.file_offset = -1;
  m.tensors.push_back(std::move(t));
  return static_cast<int32_t>(m.tensors.size() - 1);
}

}  // namespace cltrain
