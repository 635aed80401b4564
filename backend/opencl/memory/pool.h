// The backend's one device pool: every tensor the backend uses, planned into one buffer from the
// lifetimes (memory_plan.h), allocated, and the initial data uploaded.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "abi_structs.h"
#include "cltrain/cltrain_backend.h"
#include "device/cl_headers.h"
#include "memory/plan_cache.h"

namespace cltrain::ocl {

// The planned tensors and where they lie: the host's tensors (copies, name and data pointers
// cleared), then the backend's private ones (kernel scratch, CLTRAIN_ROLE_LAYER_SCOPE) from index
// num_host_tensors on.
struct Pool {
  std::vector<cltrain_tensor_desc> tensors;
  std::vector<std::string> names;
  int32_t num_host_tensors = 0;
  std::vector<int64_t> offsets;                    // byte offset in the buffer, -1 where not planned here
  std::vector<std::vector<int32_t>> step_scratch;  // per global step: its private tensors, in order
  cl_mem buffer = nullptr;
  uint64_t bytes = 0;
  uint64_t alignment = 64;

  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() { release(); }
  void release();  // the views and the buffer

  std::string label(int32_t id) const;  // "tensor 3 'dense/W'"
  // The tensor's offset in the buffer in elements of its storage (floats; halves for
  // CLTRAIN_FLOAT16), as kernels take it; Error where not planned.
  cl_uint elem_offset(int32_t id) const;
  // A sub-buffer covering the whole tensor (for CLBlast); created once, owned by the pool.
  cl_mem view(int32_t id);
  // Bytes of a planned tensor of the host; Error (CLTRAIN_INVALID) for one that is not planned here.
  uint64_t planned_bytes(int32_t id) const;

 private:
  std::map<int32_t, cl_mem> views_;
};

// A private tensor of the backend: kernel scratch of one step (CLTRAIN_ROLE_LAYER_SCOPE).
struct ScratchRequest {
  int32_t step = -1;
  uint64_t bytes = 0;
  std::string name;  // "step 5 (Conv2D forward) scratch 0"
};

// After planning, a step's scratch for the largest free range at its step: called with the step and
// the range's bytes, it returns the step's scratch sizes (no more of them than were planned) whose
// sizes, each aligned up to the pool's alignment, add up to at most those bytes; or {} to keep what
// was planned.
using RegrowScratch = std::function<std::vector<uint64_t>(int32_t step, uint64_t bytes)>;

struct DeviceInfo;

// The device a pool lives on: its limits, the context its buffer is made in and the queue that
// uploads the initial data.
struct PoolDevice {
  const DeviceInfo& info;
  cl_context context;
  cl_command_queue queue;
};

// Copies the tensor table into pool, appends the private tensors (pool.step_scratch lists them
// per step, in the order requested), plans all of them (cache: a saved plan, or a new one; dry: no
// more than that and the report), lets regrow (if set) enlarge each step's scratch into the bytes
// the plan leaves free at that step (the pool does not grow), allocates the buffer on the device,
// uploads and fills the report (may be NULL; the private tensors count as layer-scope). Throws
// Error: CLTRAIN_INVALID for a bad table, CLTRAIN_ERROR for a plan conflict, CLTRAIN_OUT_OF_MEMORY
// when the pool does not fit.
void plan_pool(Pool& pool, const PoolDevice& device, PlanCache& cache, const HostGraph& graph,
               const std::vector<ScratchRequest>& scratch, const RegrowScratch& regrow, cltrain_memory_report* report,
               bool dry = false);

}  // namespace cltrain::ocl
