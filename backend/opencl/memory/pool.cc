#include "memory/pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "device/cl_error.h"
#include "device/device.h"
#include "memory/plan_cache.h"
#include "memory_plan.h"

namespace cltrain::ocl {
namespace {

void allocate_pool(Pool& pool, const PoolDevice& d, uint64_t bytes) {
  const std::string sizes = "pool of " + std::to_string(bytes) + " bytes on " + d.info.name +
                            " (CL_DEVICE_MAX_MEM_ALLOC_SIZE " + std::to_string(d.info.max_alloc) +
                            ", CL_DEVICE_GLOBAL_MEM_SIZE " + std::to_string(d.info.global_mem) + ")";
  if (bytes > d.info.max_alloc) fail(CLTRAIN_OUT_OF_MEMORY, "the " + sizes + " exceeds the largest allocation");
  if (bytes / 4 > UINT32_MAX)
    fail(CLTRAIN_OUT_OF_MEMORY, "the " + sizes + " exceeds the 32-bit element offsets of the kernels");
  cl_int err = CL_SUCCESS;
  pool.buffer = clCreateBuffer(d.context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  if (err != CL_SUCCESS && is_allocation_error(err))
    fail(CLTRAIN_OUT_OF_MEMORY, "clCreateBuffer: " + cl_error_name(err) + " for the " + sizes);
  CLT_CHECK(err, "clCreateBuffer", sizes);
  pool.bytes = bytes;
  // CLTRAIN_OPENCL_POISON=1: the pool starts as NaNs, as a GPU's fresh memory may hold anything,
  // so that a kernel reading bytes nobody wrote turns the loss into NaN even on POCL (whose fresh
  // allocations read as zeros, and zeros times anything hide the read).
  if (const char* p = std::getenv("CLTRAIN_OPENCL_POISON"); p && std::strcmp(p, "1") == 0) {
    const uint32_t nan_bits = 0x7fc00000u;
    CLT_CALL(clEnqueueFillBuffer, (d.queue, pool.buffer, &nan_bits, sizeof nan_bits, 0, bytes, 0, nullptr, nullptr),
             "poisoning the " + sizes);
  }
}

uint64_t aligned(uint64_t bytes, uint64_t alignment) {
  return (std::max<uint64_t>(bytes, 1) + alignment - 1) / alignment * alignment;
}

// Each step's scratch moves into the largest range free at its step, with the sizes regrow gives
// for it; scratch that regrow drops leaves the plan. The pool's size stays: room a memory budget
// leaves above the plan is not taken, as bigger panels measured no faster on POCL (docs/benchmarks.md).
void regrow_scratch(Pool& pool, std::vector<PlanItem>& items, MemoryPlan& plan, const RegrowScratch& regrow) {
  const uint64_t top = plan.pool_bytes;
  std::vector<int32_t> index(pool.tensors.size(), -1);  // tensor id -> item
  for (size_t i = 0; i < items.size(); ++i) index[static_cast<size_t>(items[i].id)] = static_cast<int32_t>(i);
  std::vector<bool> dropped(items.size(), false);
  for (size_t s = 0; s < pool.step_scratch.size(); ++s) {
    std::vector<int32_t>& ids = pool.step_scratch[s];
    if (ids.empty()) continue;
    std::vector<bool> ignore(items.size(), false);
    for (int32_t id : ids) ignore[static_cast<size_t>(index[static_cast<size_t>(id)])] = true;
    const auto [begin, bytes] = largest_free_range(items, plan, pool.alignment, static_cast<int32_t>(s), ignore, top);
    const std::vector<uint64_t> sizes = regrow(static_cast<int32_t>(s), bytes);
    if (sizes.empty()) continue;
    uint64_t total = 0;
    for (uint64_t b : sizes) total += aligned(b, pool.alignment);
    if (sizes.size() > ids.size() || total > bytes)
      fail(CLTRAIN_ERROR, "scratch of step " + std::to_string(s) + " regrown past its free range");
    uint64_t at = begin;
    for (size_t k = 0; k < ids.size(); ++k) {
      const size_t i = static_cast<size_t>(index[static_cast<size_t>(ids[k])]);
      if (k >= sizes.size()) {
        dropped[i] = true;
        continue;
      }
      items[i].bytes = sizes[k];
      plan.offsets[i] = at;
      pool.tensors[static_cast<size_t>(ids[k])].dims[0] = static_cast<int32_t>((sizes[k] + 3) / 4);
      at += aligned(sizes[k], pool.alignment);
    }
    ids.resize(sizes.size());
  }
  size_t kept = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (dropped[i]) {
      pool.tensors[static_cast<size_t>(items[i].id)].first_step =
          pool.tensors[static_cast<size_t>(items[i].id)].last_step = -1;
      continue;
    }
    items[kept] = items[i];
    plan.offsets[kept++] = plan.offsets[i];
  }
  items.resize(kept);
  plan.offsets.resize(kept);
  measure_plan(items, pool.alignment, &plan);
}

}  // namespace

void Pool::release() {
  for (auto& [id, mem] : views_) clReleaseMemObject(mem);
  views_.clear();
  if (buffer) clReleaseMemObject(buffer);
  buffer = nullptr;
}

std::string Pool::label(int32_t id) const {
  std::string s = "tensor " + std::to_string(id);
  if (id >= 0 && static_cast<size_t>(id) < names.size() && !names[id].empty()) s += " '" + names[id] + "'";
  return s;
}

cl_uint Pool::elem_offset(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= offsets.size() || offsets[id] < 0)
    fail(CLTRAIN_INVALID, label(id) + " is not planned on the OpenCL backend");
  return static_cast<cl_uint>(offsets[id] / (tensors[static_cast<size_t>(id)].dtype == CLTRAIN_FLOAT16 ? 2 : 4));
}

cl_mem Pool::view(int32_t id) {
  if (auto it = views_.find(id); it != views_.end()) return it->second;
  if (id < 0 || static_cast<size_t>(id) >= offsets.size() || offsets[id] < 0)
    fail(CLTRAIN_INVALID, label(id) + " is not planned on the OpenCL backend");
  cl_buffer_region region;
  region.origin = static_cast<size_t>(offsets[id]);  // a multiple of the base address alignment
  region.size = static_cast<size_t>(std::max<uint64_t>(tensor_bytes(tensors[id]), 4));
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateSubBuffer(buffer, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  CLT_CHECK(err, "clCreateSubBuffer", "view of " + label(id));
  views_.emplace(id, mem);
  return mem;
}

uint64_t Pool::planned_bytes(int32_t id) const {
  if (id < 0 || id >= num_host_tensors)
    fail(CLTRAIN_INVALID, "tensor id " + std::to_string(id) + " is outside the tensor table (" +
                              std::to_string(num_host_tensors) + " tensors)");
  if (offsets[id] < 0) fail(CLTRAIN_INVALID, label(id) + " is not planned on the OpenCL backend");
  return tensor_bytes(tensors[id]);
}

void plan_pool(Pool& pool, const PoolDevice& device, PlanCache& cache, const HostGraph& graph,
               const std::vector<ScratchRequest>& scratch, const RegrowScratch& regrow, cltrain_memory_report* report,
               bool dry) {
  const size_t host = static_cast<size_t>(graph.num_tensors());
  pool.num_host_tensors = graph.num_tensors();
  pool.tensors.assign(graph.tensors.begin(), graph.tensors.end());
  pool.names.resize(host);
  for (size_t i = 0; i < host; ++i) {
    pool.names[i] = graph.tensors[i].name ? graph.tensors[i].name : "";
    pool.tensors[i].name = nullptr;
    pool.tensors[i].data = nullptr;
  }
  // Private scratch: a float tensor live during its one step.
  pool.step_scratch.assign(static_cast<size_t>(graph.num_steps()), {});
  for (const ScratchRequest& r : scratch) {
    if (r.step < 0 || r.step >= graph.num_steps()) fail(CLTRAIN_ERROR, "scratch for step " + std::to_string(r.step));
    cltrain_tensor_desc t{};
    t.rank = 1;
    const uint64_t elems = (r.bytes + 3) / 4;
    if (elems > INT32_MAX)
      fail(CLTRAIN_OUT_OF_MEMORY, r.name + " of " + std::to_string(r.bytes) + " bytes is too large");
    t.dims[0] = static_cast<int32_t>(elems);
    t.dtype = CLTRAIN_FLOAT32;
    t.role = CLTRAIN_ROLE_LAYER_SCOPE;
    t.first_step = t.last_step = r.step;
    pool.step_scratch[r.step].push_back(static_cast<int32_t>(pool.tensors.size()));
    pool.tensors.push_back(t);
    pool.names.push_back(r.name);
  }
  const size_t n = pool.tensors.size();
  pool.offsets.assign(n, -1);

  // Persistent tensors (weights, optimizer variables) keep their bytes from one iteration to the
  // next, so they are planned as live over the whole step order whatever lifetime they carry.
  int32_t last_step = graph.num_steps() - 1;
  for (const auto& t : pool.tensors)
    if (t.first_step >= 0) last_step = std::max(last_step, t.last_step);

  std::vector<PlanItem> items;
  for (size_t i = 0; i < n; ++i) {
    const cltrain_tensor_desc& t = pool.tensors[i];
    if (t.first_step < 0) continue;
    if (t.rank < 0 || t.rank > CLTRAIN_MAX_RANK)
      fail(CLTRAIN_INVALID, pool.label(static_cast<int32_t>(i)) + " has rank " + std::to_string(t.rank));
    if (t.last_step < t.first_step)
      fail(CLTRAIN_INVALID, pool.label(static_cast<int32_t>(i)) + " has lifetime [" + std::to_string(t.first_step) +
                                ", " + std::to_string(t.last_step) + "]");
    PlanItem it;
    it.id = static_cast<int32_t>(i);
    it.bytes = tensor_bytes(t);
    it.first = t.persistent ? 0 : t.first_step;
    it.last = t.persistent ? last_step : t.last_step;
    it.role = t.role;
    items.push_back(it);
  }

  if (const std::string e = link_aliases(items, graph.tensors.data(), host); !e.empty())
    fail(CLTRAIN_INVALID, "prepare: " + e);
  pool.alignment = std::max<uint64_t>(64, device.info.base_addr_align_bits / 8);
  MemoryPlan plan = load_or_plan(cache, pool.alignment, graph, items);  // plan_cache.h: a saved plan, or a new one
  if (regrow) regrow_scratch(pool, items, plan, regrow);
  if (const std::string conflict = check_plan(items, plan, pool.alignment); !conflict.empty())
    fail(CLTRAIN_ERROR, "memory plan (" + plan.algorithm + ") is wrong: " + conflict);
  for (size_t i = 0; i < items.size(); ++i) pool.offsets[items[i].id] = static_cast<int64_t>(plan.offsets[i]);

  if (dry) {
    if (report) fill_memory_report(plan, items.size(), report);
    return;
  }
  if (plan.pool_bytes > 0) allocate_pool(pool, device, plan.pool_bytes);

  // Blocking writes: the host's data is only valid during prepare. The first write also makes a
  // lazily allocating driver commit the pool, so running out of memory shows here.
  for (const PlanItem& it : items) {
    if (it.id >= pool.num_host_tensors) continue;  // private scratch
    const cltrain_tensor_desc& src = graph.tensors[it.id];
    if (src.data) {
      if (src.data_bytes != it.bytes)
        fail(CLTRAIN_INVALID, pool.label(it.id) + " has " + std::to_string(it.bytes) +
                                  " bytes but its initial data has " + std::to_string(src.data_bytes));
      CLT_CALL(clEnqueueWriteBuffer,
               (device.queue, pool.buffer, CL_TRUE, pool.offsets[it.id], it.bytes, src.data, 0, nullptr, nullptr),
               "initial data of " + pool.label(it.id));
    } else if (src.role == CLTRAIN_ROLE_OPTIMIZER && it.bytes > 0) {
      const float zero = 0.0f;
      CLT_CALL(clEnqueueFillBuffer,
               (device.queue, pool.buffer, &zero, sizeof zero, pool.offsets[it.id], it.bytes, 0, nullptr, nullptr),
               "zeroing " + pool.label(it.id));
    }
  }
  CLT_CALL(clFinish, (device.queue), "after the initial uploads");

  if (report) fill_memory_report(plan, items.size(), report);  // only what fits in the host's struct
}

}  // namespace cltrain::ocl
