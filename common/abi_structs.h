// The sized structs and arrays of the plugin ABI (cltrain_backend.h's growth rules): what a
// backend hands back fills only the members that fit in the caller's struct, and what it reads
// takes only the members the caller's struct has (the rest read as zero); the graph's arrays are
// read by their element sizes. Header-only; both backends use it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "memory_plan.h"

namespace cltrain {

// Copies `full` into the caller's *out, whose struct_size (set by the caller) says how much of
// it there is; out->struct_size stays as the caller set it.
template <class T>
void fill_sized(const T& full, T* out) {
  const uint32_t size = out->struct_size;
  T copy = full;
  copy.struct_size = size;
  std::memcpy(out, &copy, std::min<size_t>(size, sizeof(T)));
}

// The caller's struct as this build knows it: members beyond in->struct_size read as zero.
template <class T>
T read_sized(const T* in) {
  T copy{};
  if (!in) return copy;
  cltrain_read_sized(&copy, sizeof copy, in, in->struct_size);
  copy.struct_size = static_cast<uint32_t>(sizeof(T));
  return copy;
}

// The host's training graph as this build's structs, its tables read by the host's element sizes
// (cltrain_backend.h): what a backend keeps of what prepare receives. Pointers in the tensors
// (names, initial data) still point into the host's memory, valid during prepare.
struct HostGraph {
  std::vector<cltrain_tensor_desc> tensors;
  std::vector<cltrain_step_desc> steps;
  std::vector<uint8_t> assigned;
  uint64_t pool_limit = 0;
  int32_t num_tensors() const { return static_cast<int32_t>(tensors.size()); }
  int32_t num_steps() const { return static_cast<int32_t>(steps.size()); }
};

// Reads graph into *out; "" on success, else what is wrong with it (for a CLTRAIN_INVALID).
inline std::string read_graph(const cltrain_graph_desc* graph, HostGraph* out) {
  if (!graph) return "no graph";
  const cltrain_graph_desc g = read_sized(graph);
  if (g.tensor_size == 0 || g.step_size == 0) return "the graph's tensor_size or step_size is 0";
  if (g.num_tensors < 0 || g.num_steps < 0 || (g.num_tensors > 0 && !g.tensors) ||
      (g.num_steps > 0 && (!g.steps || !g.assigned)))
    return "the graph's tables are missing or have negative sizes";
  out->tensors.resize(static_cast<size_t>(g.num_tensors));
  for (int32_t i = 0; i < g.num_tensors; ++i) out->tensors[static_cast<size_t>(i)] = cltrain_graph_tensor(&g, i);
  out->steps.resize(static_cast<size_t>(g.num_steps));
  for (int32_t i = 0; i < g.num_steps; ++i) out->steps[static_cast<size_t>(i)] = cltrain_graph_step(&g, i);
  out->assigned.assign(g.assigned, g.assigned + g.num_steps);
  out->pool_limit = g.pool_limit;
  return {};
}

// The memory report of a plan of num_tensors tensors, into the host's struct.
inline void fill_memory_report(const MemoryPlan& plan, uint64_t num_tensors, cltrain_memory_report* out) {
  cltrain_memory_report full{};
  for (int r = 0; r < CLTRAIN_ROLE_COUNT; ++r) full.role_peak[r] = plan.role_peak[r];
  full.pool_bytes = plan.pool_bytes;
  full.lower_bound = plan.lower_bound;
  full.num_tensors = num_tensors;
  fill_sized(full, out);
}

}  // namespace cltrain
