// The backend's one device pool: plans every tensor the backend uses into it from the lifetimes,
// allocates it, uploads initial data and zeroes optimizer variables.
#pragma once

#include <string>
#include <vector>

#include "abi_structs.h"
#include "backend_state.h"

namespace cltrain::ocl {

// A private tensor of the backend: kernel scratch of one step (CLTRAIN_ROLE_LAYER_SCOPE).
struct ScratchRequest {
  int32_t step = -1;
  uint64_t bytes = 0;
  std::string name;  // "step 5 (Conv2D forward) scratch 0"
};

// Copies the tensor table into b, appends the private tensors (b.step_scratch lists them per
// step, in the order requested), plans all of them, allocates b.pool, uploads and fills the
// report (may be NULL; the private tensors count as layer-scope). Throws Error: CLTRAIN_INVALID for a bad table, CLTRAIN_ERROR for a plan conflict,
// CLTRAIN_OUT_OF_MEMORY when the pool does not fit.
void plan_pool(Backend& b, const HostGraph& graph, const std::vector<ScratchRequest>& scratch,
               cltrain_memory_report* report);

// Bytes of a planned tensor of the host; throws CLTRAIN_INVALID for one that is not planned here.
uint64_t planned_bytes(const Backend& b, int32_t tensor);

}  // namespace cltrain::ocl
