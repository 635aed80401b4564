// The backend's one device pool: plans every tensor the backend uses into it from the lifetimes,
// allocates it, uploads initial data and zeroes optimizer variables.
#pragma once

#include "backend_state.h"

namespace cltrain::ocl {

// Copies the tensor table into b, plans, allocates b.pool, uploads and fills the report (may be
// NULL). Throws Error: CLTRAIN_INVALID for a bad table, CLTRAIN_ERROR for a plan conflict,
// CLTRAIN_OUT_OF_MEMORY when the pool does not fit.
void plan_pool(Backend& b, const cltrain_graph_desc& graph, cltrain_memory_report* report);

// Bytes of a planned tensor; throws CLTRAIN_INVALID for one that is not planned here.
uint64_t planned_bytes(const Backend& b, int32_t tensor);

}  // namespace cltrain::ocl
