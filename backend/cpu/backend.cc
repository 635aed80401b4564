// The CPU backend: the cltrain_backend_iface of the built-in backend. It plans all of its
// tensors into one 64-byte aligned pool with the shared planner, and runs steps synchronously
// through a dispatch table generated from the op list.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "abi_structs.h"
#include "cltrain/cltrain_backend.h"
#include "cltrain/cltrain_cpu.h"
#include "cpu_op.h"
#include "half.h"
#include "memory_plan.h"
#include "steps.h"

namespace cltrain {
namespace cpu {
namespace {

constexpr uint64_t kPoolAlignment = 64;
const char kDeviceName[] = "host CPU";

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

struct CpuBackend {
  std::string error;
  bool prepared = false;
  std::vector<std::string> names;            // owned copies of the tensor names
  std::vector<cltrain_tensor_desc> tensors;  // the host's table, names pointing into `names`
  std::vector<uint8_t> half;                 // per tensor: float16 storage, kept as floats (half.h)
  std::vector<int64_t> offsets;              // byte offset in the pool, -1 where not planned
  std::vector<cltrain_step_desc> steps;
  std::vector<uint8_t> assigned;
  std::vector<StepView> views;  // per step, resolved against the pool if assigned
  std::unique_ptr<uint8_t, FreeDeleter> pool;
  uint64_t pool_bytes = 0;
  // stats and profile: steps run since the last reset_stats and, with profiling on, each step's
  // wall time on the host (runs are synchronous, so that is its time).
  uint64_t steps_run = 0;
  bool profiling = false;
  std::vector<cltrain_kernel_profile> step_times;  // per step; calls 0 where it has not run
  std::vector<cltrain_kernel_profile> profile_rows;
};

CpuBackend* self(cltrain_backend* b) { return reinterpret_cast<CpuBackend*>(b); }

cltrain_status fail(CpuBackend* b, cltrain_status status, const std::string& message) {
  b->error = message;
  return status;
}

// Runs f, turning any exception into a status and a message: nothing may cross the ABI.
template <typename F>
cltrain_status guarded(CpuBackend* b, const char* what, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(b, CLTRAIN_OUT_OF_MEMORY, std::string(what) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(b, CLTRAIN_ERROR, std::string(what) + ": " + e.what());
  } catch (...) {
    return fail(b, CLTRAIN_ERROR, std::string(what) + ": unknown failure");
  }
}

// The tensor descriptors a step refers to: the backend's own copy of the table after prepare, or
// the host's graph (read by its element size) in supports().
// dry: the plan and its report only (the ABI's plan); the backend stays unprepared.
cltrain_status prepare(CpuBackend* b, const cltrain_graph_desc* graph, cltrain_memory_report* report, bool dry) {
  if (b->prepared) return fail(b, CLTRAIN_INVALID, "prepare was already called on this backend");
  HostGraph g;
  if (const std::string e = read_graph(graph, &g); !e.empty()) return fail(b, CLTRAIN_INVALID, "prepare: " + e);
  // Own copies of everything the host's pointers reach.
  const std::vector<cltrain_tensor_desc>& host = g.tensors;
  b->names.resize(host.size());
  b->tensors = host;
  b->half.assign(host.size(), 0);
  for (size_t i = 0; i < b->tensors.size(); ++i) {
    b->names[i] = b->tensors[i].name ? b->tensors[i].name : "";
    b->tensors[i].name = b->names[i].c_str();
    b->tensors[i].data = nullptr;
    if ((b->half[i] = b->tensors[i].dtype == CLTRAIN_FLOAT16)) b->tensors[i].dtype = CLTRAIN_FLOAT32;
  }
  b->steps = g.steps;
  b->assigned = g.assigned;
  const TensorAt tensors = [b](int32_t id) { return &b->tensors[static_cast<size_t>(id)]; };
  const int32_t last_step = std::max(g.num_steps(), 1) - 1;

  std::vector<PlanItem> items;
  for (int32_t id = 0; id < g.num_tensors(); ++id) {
    const cltrain_tensor_desc& t = host[static_cast<size_t>(id)];
    if (t.first_step < 0) continue;
    if (std::string e = check_tensor(t, id, last_step); !e.empty()) return fail(b, CLTRAIN_INVALID, "prepare: " + e);
    PlanItem it;
    it.id = id;
    it.bytes = tensor_bytes(b->tensors[static_cast<size_t>(id)]);
    it.role = t.role;
    // What must survive from one iteration to the next may share its bytes with nothing.
    const bool keep = t.persistent != 0 || t.data != nullptr;
    it.first = keep ? 0 : t.first_step;
    it.last = keep ? last_step : t.last_step;
    items.push_back(it);
  }

  for (int32_t s = 0; s < g.num_steps(); ++s) {
    if (!b->assigned[s]) continue;
    const cltrain_step_desc& step = b->steps[s];
    const std::string where = "prepare: step " + std::to_string(s) + ": ";
    if (std::string e = check_step(step, tensors, g.num_tensors()); !e.empty())
      return fail(b, CLTRAIN_INVALID, where + e);
    for (int side = 0; side < 2; ++side) {
      const int32_t count = side ? step.num_outputs : step.num_inputs;
      const int32_t* ids = side ? step.outputs : step.inputs;
      for (int i = 0; i < count; ++i) {
        if (ids[i] < 0) continue;
        const cltrain_tensor_desc& t = b->tensors[ids[i]];
        const bool keep = t.persistent != 0 || host[static_cast<size_t>(ids[i])].data != nullptr;
        if (t.first_step < 0 || (!keep && (s < t.first_step || s > t.last_step)))
          return fail(b, CLTRAIN_INVALID,
                      where + cltrain_op_name(step.op) + " uses " + tensor_label(t, ids[i]) +
                          " outside its lifetime [" + std::to_string(t.first_step) + ", " +
                          std::to_string(t.last_step) + "]");
      }
    }
  }

  if (std::string e = link_aliases(items, b->tensors.data(), b->tensors.size()); !e.empty())
    return fail(b, CLTRAIN_INVALID, "prepare: " + e);
  MemoryPlan plan = plan_memory(items, kPoolAlignment);
  if (std::string e = check_plan(items, plan, kPoolAlignment); !e.empty())
    return fail(b, CLTRAIN_ERROR, "prepare: the memory plan (" + plan.algorithm + ") is wrong: " + e);
  if (dry) {
    if (report) fill_memory_report(plan, items.size(), report);
    return CLTRAIN_OK;
  }

  if (plan.pool_bytes > 0) {
    // aligned_alloc wants a size that is a multiple of the alignment.
    const uint64_t bytes = (plan.pool_bytes + kPoolAlignment - 1) / kPoolAlignment * kPoolAlignment;
    void* p = std::aligned_alloc(kPoolAlignment, bytes);
    if (!p)
      return fail(b, CLTRAIN_OUT_OF_MEMORY, "prepare: cannot allocate the pool of " + std::to_string(bytes) + " bytes");
    std::memset(p, 0, bytes);
    b->pool.reset(static_cast<uint8_t*>(p));
  }
  b->pool_bytes = plan.pool_bytes;
  b->offsets.assign(b->tensors.size(), -1);
  for (size_t i = 0; i < items.size(); ++i) b->offsets[items[i].id] = static_cast<int64_t>(plan.offsets[i]);

  for (const PlanItem& it : items) {
    const cltrain_tensor_desc& t = host[static_cast<size_t>(it.id)];
    uint8_t* dst = b->pool.get() + b->offsets[it.id];
    if (t.role == CLTRAIN_ROLE_OPTIMIZER) std::memset(dst, 0, it.bytes);
    if (t.data) std::memcpy(dst, t.data, it.bytes);
  }

  b->views.assign(b->steps.size(), StepView{});
  for (size_t s = 0; s < b->steps.size(); ++s)
    if (b->assigned[s]) b->views[s] = make_view(b->steps[s], tensors, b->pool.get(), b->offsets.data());

  if (report) fill_memory_report(plan, items.size(), report);  // only what fits in the host's struct
  b->prepared = true;
  return CLTRAIN_OK;
}

cltrain_status run(CpuBackend* b, const int32_t* steps, int32_t num_steps, const cltrain_run_args* args) {
  if (!b->prepared) return fail(b, CLTRAIN_INVALID, "run before prepare");
  if (num_steps < 0 || (num_steps > 0 && !steps)) return fail(b, CLTRAIN_INVALID, "run: no step list");
  if (!args) return fail(b, CLTRAIN_INVALID, "run: no run arguments");
  const cltrain_run_args run_args = read_sized(args);  // members the host's struct lacks are 0
  for (int32_t i = 0; i < num_steps; ++i) {
    const int32_t s = steps[i];
    if (s < 0 || static_cast<size_t>(s) >= b->steps.size() || !b->assigned[s])
      return fail(b, CLTRAIN_INVALID, "run: step " + std::to_string(s) + " is not assigned to the cpu backend");
    const cltrain_step_desc& step = b->steps[s];
    const auto t0 = b->profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (std::string e = kOps[step.op]->phase[step.phase].run(b->views[s], run_args); !e.empty())
      return fail(
          b, CLTRAIN_ERROR,
          "step " + std::to_string(s) + " (" + cltrain_op_name(step.op) + " " + phase_name(step.phase) + "): " + e);
    round_half_outputs(b->views[s], b->half);
    ++b->steps_run;
    if (b->profiling) {
      if (b->step_times.size() < b->steps.size()) b->step_times.resize(b->steps.size());
      cltrain_kernel_profile& t = b->step_times[static_cast<size_t>(s)];
      t.step = s;
      t.calls += 1;
      t.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  return CLTRAIN_OK;
}

// The pool address of a planned tensor whose size is `bytes`, or nullptr with the error set.
uint8_t* tensor_address(CpuBackend* b, int32_t id, uint64_t bytes, const char* what) {
  if (!b->prepared) {
    b->error = std::string(what) + " before prepare";
    return nullptr;
  }
  if (id < 0 || static_cast<size_t>(id) >= b->tensors.size()) {
    b->error = std::string(what) + ": tensor " + std::to_string(id) + " is outside the tensor table";
    return nullptr;
  }
  if (b->offsets[id] < 0) {
    b->error = std::string(what) + ": " + tensor_label(b->tensors[id], id) + " is not planned on the cpu backend";
    return nullptr;
  }
  const uint64_t size = tensor_bytes(b->tensors[id]);
  if (bytes != size) {
    b->error = std::string(what) + ": " + tensor_label(b->tensors[id], id) + " has " + std::to_string(size) +
               " bytes, not " + std::to_string(bytes);
    return nullptr;
  }
  return b->pool.get() + b->offsets[id];
}

// --- the iface members ---

cltrain_status iface_probe(char* err, size_t err_len) {
  if (err && err_len) err[0] = 0;
  return CLTRAIN_OK;
}

cltrain_status iface_list_devices(char* buf, size_t buf_len) {
  if (!buf || buf_len == 0) return CLTRAIN_INVALID;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::snprintf(buf, buf_len, "cpu: %s, %u threads\n", kDeviceName, threads);
  return CLTRAIN_OK;
}

cltrain_status iface_create(const cltrain_backend_config*, cltrain_backend** out, char* err, size_t err_len) {
  if (err && err_len) err[0] = 0;
  if (!out) {
    if (err && err_len) std::snprintf(err, err_len, "create: no place for the backend");
    return CLTRAIN_INVALID;
  }
  *out = nullptr;
  CpuBackend* b = new (std::nothrow) CpuBackend();
  if (!b) {
    if (err && err_len) std::snprintf(err, err_len, "create: out of host memory");
    return CLTRAIN_OUT_OF_MEMORY;
  }
  *out = reinterpret_cast<cltrain_backend*>(b);
  return CLTRAIN_OK;
}

void iface_destroy(cltrain_backend* backend) { delete self(backend); }

const char* iface_device_name(cltrain_backend*) { return kDeviceName; }

int iface_supports(cltrain_backend* backend, const cltrain_graph_desc* graph, int32_t index, int training) {
  CpuBackend* b = self(backend);
  if (!graph || index < 0 || index >= graph->num_steps || !graph->steps || (graph->num_tensors > 0 && !graph->tensors))
    return 0;
  try {
    const cltrain_step_desc step = cltrain_graph_step(graph, index);
    std::map<int32_t, cltrain_tensor_desc> read;  // the step's tensors, read by the host's element size
    const TensorAt tensors = [&](int32_t id) {
      auto it = read.find(id);
      if (it == read.end()) it = read.emplace(id, cltrain_graph_tensor(graph, id)).first;
      return &it->second;
    };
    std::string e = check_step(step, tensors, graph->num_tensors);  // also checks that op is in the list
    // A forward step that reads nothing (FILL) has nothing to train through, a comparison's mask
    // no gradient.
    if (e.empty() && training && step.phase == CLTRAIN_PHASE_FORWARD && step.num_inputs > 0 &&
        (kOpKinds[step.op] == CLTRAIN_KIND_MODEL || kOpKinds[step.op] == CLTRAIN_KIND_LOSS) &&
        !kOps[step.op]->phase[CLTRAIN_PHASE_BACKWARD].run && !kOps[step.op]->piecewise_constant)
      e = std::string(cltrain_op_name(step.op)) + " has no backward step";
    if (!e.empty()) {
      if (b) b->error = "unsupported: " + e;
      return 0;
    }
    return 1;
  } catch (...) {
    return 0;
  }
}

cltrain_status iface_prepare(cltrain_backend* backend, const cltrain_graph_desc* graph, cltrain_memory_report* report) {
  CpuBackend* b = self(backend);
  return guarded(b, "prepare", [&] { return prepare(b, graph, report, false); });
}

cltrain_status iface_plan(cltrain_backend* backend, const cltrain_graph_desc* graph, cltrain_memory_report* report) {
  CpuBackend* b = self(backend);
  return guarded(b, "plan", [&] { return prepare(b, graph, report, true); });
}

cltrain_status iface_run(cltrain_backend* backend, const int32_t* steps, int32_t num_steps,
                         const cltrain_run_args* args) {
  CpuBackend* b = self(backend);
  return guarded(b, "run", [&] { return run(b, steps, num_steps, args); });
}

cltrain_status iface_write_tensor(cltrain_backend* backend, int32_t tensor, const void* src, uint64_t bytes) {
  CpuBackend* b = self(backend);
  return guarded(b, "write_tensor", [&] {
    uint8_t* p = tensor_address(b, tensor, bytes, "write_tensor");
    if (!p) return CLTRAIN_INVALID;
    if (bytes && !src) return fail(b, CLTRAIN_INVALID, "write_tensor: no source");
    if (bytes) std::memcpy(p, src, bytes);
    return CLTRAIN_OK;
  });
}

cltrain_status iface_read_tensor(cltrain_backend* backend, int32_t tensor, void* dst, uint64_t bytes) {
  CpuBackend* b = self(backend);
  return guarded(b, "read_tensor", [&] {
    const uint8_t* p = tensor_address(b, tensor, bytes, "read_tensor");
    if (!p) return CLTRAIN_INVALID;
    if (bytes && !dst) return fail(b, CLTRAIN_INVALID, "read_tensor: no destination");
    if (bytes) std::memcpy(dst, p, bytes);
    return CLTRAIN_OK;
  });
}

cltrain_status iface_sync(cltrain_backend*) { return CLTRAIN_OK; }

const char* iface_last_error(cltrain_backend* backend) { return self(backend)->error.c_str(); }

cltrain_status iface_plan_offsets(cltrain_backend* backend, int64_t* offsets, int32_t num_tensors) {
  CpuBackend* b = self(backend);
  if (!b->prepared) return fail(b, CLTRAIN_INVALID, "plan_offsets before prepare");
  if (num_tensors < 0 || (num_tensors > 0 && !offsets))
    return fail(b, CLTRAIN_INVALID, "plan_offsets: no offset table");
  for (int32_t i = 0; i < num_tensors; ++i)
    offsets[i] = static_cast<size_t>(i) < b->offsets.size() ? b->offsets[i] : -1;
  return CLTRAIN_OK;
}

// Host memory: launches are the steps run, nothing moves to or from a device, nothing waits.
cltrain_status iface_stats(cltrain_backend* backend, cltrain_run_stats* out) {
  CpuBackend* b = self(backend);
  if (!out) return fail(b, CLTRAIN_INVALID, "stats: out is NULL");
  cltrain_run_stats full{};
  full.launches = b->steps_run;
  full.steps_run = b->steps_run;
  fill_sized(full, out);
  return CLTRAIN_OK;
}

cltrain_status iface_reset_stats(cltrain_backend* backend) {
  CpuBackend* b = self(backend);
  b->steps_run = 0;
  b->step_times.clear();
  return CLTRAIN_OK;
}

cltrain_status iface_set_profiling(cltrain_backend* backend, int on) {
  self(backend)->profiling = on != 0;
  return CLTRAIN_OK;
}

cltrain_status iface_profile(cltrain_backend* backend, const void** rows, uint32_t* row_size, int32_t* num_rows) {
  CpuBackend* b = self(backend);
  if (!rows || !row_size || !num_rows) return fail(b, CLTRAIN_INVALID, "profile: rows, row_size or num_rows is NULL");
  return guarded(b, "profile", [&] {
    b->profile_rows.clear();
    for (const cltrain_kernel_profile& t : b->step_times)
      if (t.calls > 0) b->profile_rows.push_back(t);
    *rows = b->profile_rows.data();
    *row_size = sizeof(cltrain_kernel_profile);
    *num_rows = static_cast<int32_t>(b->profile_rows.size());
    return CLTRAIN_OK;
  });
}

const cltrain_backend_iface kIface = [] {
  cltrain_backend_iface i{};
  i.abi_version = CLTRAIN_BACKEND_ABI_VERSION;
  i.struct_size = sizeof i;
  i.name = "cpu";
  i.create = iface_create;
  i.destroy = iface_destroy;
  i.supports = iface_supports;
  i.prepare = iface_prepare;
  i.run = iface_run;
  i.write_tensor = iface_write_tensor;
  i.read_tensor = iface_read_tensor;
  i.sync = iface_sync;
  i.last_error = iface_last_error;
  i.probe = iface_probe;
  i.list_devices = iface_list_devices;
  i.device_name = iface_device_name;
  i.plan_offsets = iface_plan_offsets;
  i.stats = iface_stats;
  i.reset_stats = iface_reset_stats;
  i.set_profiling = iface_set_profiling;
  i.profile = iface_profile;
  i.plan_private = nullptr;  // the CPU backend plans no private tensors
  i.plan = iface_plan;
  return i;
}();

}  // namespace
}  // namespace cpu
}  // namespace cltrain

extern "C" const cltrain_backend_iface* cltrain_cpu_backend_iface(void) { return &cltrain::cpu::kIface; }
