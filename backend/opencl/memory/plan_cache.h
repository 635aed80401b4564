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

#include <vector>

#include "abi_structs.h"
#include "memory_plan.h"

struct cltrain_backend;

namespace cltrain::ocl {

// The plan of items (b.pool's planned tensors) with b.pool.alignment: loaded from b.cache_dir
// when a valid entry is there, else plan_memory's, then saved there (best effort). Sets
// b.plan_source and counts a rejected entry in b.cache_rejected. Throws only what plan_memory
// throws.
MemoryPlan load_or_plan(cltrain_backend& b, const HostGraph& graph, const std::vector<PlanItem>& items);

}  // namespace cltrain::ocl
