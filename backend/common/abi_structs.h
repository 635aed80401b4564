// The structs of the plugin ABI that carry their own struct_size: what a backend hands back fills
// only the members that fit in the caller's struct, and what it reads takes only the members the
// caller's struct has (the rest read as zero). Header-only; both backends use it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

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
  std::memcpy(&copy, in, std::min<size_t>(in->struct_size, sizeof(T)));
  copy.struct_size = static_cast<uint32_t>(sizeof(T));
  return copy;
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
