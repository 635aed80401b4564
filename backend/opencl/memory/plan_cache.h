// The saved memory plan: with a cache directory, prepare keeps the pool plan (each tensor's
// offset, the pool size, the per-role peaks and the lower bound) in an entry of disk_cache.h,
// "cltrain-ocl-plan-<key>.bin", keyed by a hash of everything the plan depends on: the tensor
// table and steps as prepare received them (shapes, dtypes, roles, lifetimes, persistence, each
// step's op, phase, tensors and parameters, the assigned flags), the planned items (with the
// backend's scratch), the pool alignment, the device, this build of the plugin and the format.
// A second prepare of the same graph loads the plan instead of planning; an entry that is
// corrupt, made for another key, or whose offsets fail check_plan for these tensors is never
// used: the plan is computed again and the entry rewritten.
#pragma once

#include <string>
#include <vector>

#include "abi_structs.h"
#include "memory_plan.h"

namespace cltrain::ocl {

// Where saved plans are kept and what the last load_or_plan did with them.
struct PlanCache {
  std::string dir;         // the cache directory; empty: none (plans are computed, never saved)
  std::string device_key;  // the device's part of the key (device/device.h)
  bool trace = false;      // CLTRAIN_OPENCL_TRACE: say why an entry was not used
  std::string source;      // "loaded from PATH", "computed (ALGORITHM), saved to PATH", ...
  int rejected = 0;        // entries found corrupt or stale (and rebuilt)
};

// The plan of items (a pool's planned tensors) with the pool's alignment: loaded from cache.dir
// when a valid entry is there, else plan_memory's, then saved there (best effort). Sets
// cache.source and counts a rejected entry in cache.rejected. Throws only what plan_memory throws.
MemoryPlan load_or_plan(PlanCache& cache, uint64_t alignment, const HostGraph& graph,
                        const std::vector<PlanItem>& items);

}  // namespace cltrain::ocl
