// Lifetime-based offset planning of a backend's tensors into one pool.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cltrain/cltrain_backend.h"

namespace cltrain {

struct PlanItem {
  int32_t id = -1;     // caller's tensor id
  uint64_t bytes = 0;  // size before alignment
  int32_t first = 0;   // lifetime, inclusive
  int32_t last = 0;
  int32_t role = 0;    // cltrain_role, for the report
  int32_t alias = -1;  // caller's id of an item whose bytes this one shares (the same offset;
                       // planned as one block over both lifetimes), -1: none
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // one per item, in the order given
  uint64_t pool_bytes = 0;
  uint64_t lower_bound = 0;  // largest sum of (aligned) live bytes at one step
  uint64_t role_peak[CLTRAIN_ROLE_COUNT] = {};
  std::string algorithm;  // which algorithm produced the kept result
};

// Plans offsets for items; each offset is a multiple of `alignment`. Runs several algorithms
// and keeps the smallest pool. Items that share bytes (alias) are planned as one block whose
// lifetime spans all of theirs and whose size is the largest of theirs.
MemoryPlan plan_memory(const std::vector<PlanItem>& items, uint64_t alignment);

// Empty string if no two items with overlapping lifetimes share a byte (unless one is an alias
// of the other, at the same offset) and all offsets are aligned; else the first conflict.
std::string check_plan(const std::vector<PlanItem>& items, const MemoryPlan& plan, uint64_t alignment);

// Recomputes plan->lower_bound and plan->role_peak for items (whose sizes may have changed since
// planning): per step, an alias group's (aligned) bytes count once in the lower bound, and under the
// role of the member that holds them then in the role peaks.
void measure_plan(const std::vector<PlanItem>& items, uint64_t alignment, MemoryPlan* plan);

// The largest aligned range of [0, top) that no item live at `step` occupies, items whose index
// `ignore` flags excepted: its offset and size (size 0 if none).
std::pair<uint64_t, uint64_t> largest_free_range(const std::vector<PlanItem>& items, const MemoryPlan& plan,
                                                 uint64_t alignment, int32_t step, const std::vector<bool>& ignore,
                                                 uint64_t top);

// Fills each item's alias from tensors[item.id].alias (the ABI's 1-based encoding). Empty string
// if every alias names another planned item of the same byte size; else the first problem.
std::string link_aliases(std::vector<PlanItem>& items, const cltrain_tensor_desc* tensors, size_t num_tensors);

// Size in bytes of a tensor described at the ABI.
uint64_t tensor_bytes(const cltrain_tensor_desc& t);
uint64_t tensor_elements(const cltrain_tensor_desc& t);
// "float32", "int32", "uint8", "float16" (a cltrain_dtype's name), "dtype N" for another value.
std::string dtype_name(int32_t dtype);

}  // namespace cltrain
