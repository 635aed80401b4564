// The plugin's ABI surface: cltrain_backend_entry() and the entry points behind it. Each entry
// point catches every exception and turns it into a status plus a one-line message.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "abi_structs.h"
#include <map>
#include "cl_error.h"
#include "cltrain/cltrain_backend.h"
#include "counters.h"
#include "device.h"
#include "disk_cache.h"
#include "gemm_native.h"
#include "gemm_tuning.h"
#include "launch.h"
#include "memory_plan.h"
#include "ops/ops.h"
#include "pool.h"

namespace cltrain::ocl {
namespace {

void copy_line(char* dst, size_t len, const std::string& s) {
  if (!dst || len == 0) return;
  const size_t n = std::min(len - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// Runs f and turns what it throws into a status; msg receives the message.
template <class F>
cltrain_status guarded(std::string* msg, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (msg) *msg = e.what();
    return e.status();
  } catch (const std::bad_alloc&) {
    if (msg) *msg = "out of host memory";
    return CLTRAIN_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    if (msg) *msg = std::string("internal error: ") + e.what();
    return CLTRAIN_ERROR;
  } catch (...) {
    if (msg) *msg = "internal error: unknown exception";
    return CLTRAIN_ERROR;
  }
}

// A member of a struct that carries its own struct_size, if the caller's struct has it.
#define CLT_HAS_MEMBER(ptr, type, member) \
  ((ptr)->struct_size >= offsetof(type, member) + sizeof((ptr)->member))

cltrain_status probe(char* err, size_t err_len) {
  std::string msg;
  const cltrain_status st = guarded(&msg, [&] {
    const Discovery d = discover_devices();
    if (d.devices.empty()) fail(CLTRAIN_UNAVAILABLE, d.none_reason);
    return CLTRAIN_OK;
  });
  copy_line(err, err_len, st == CLTRAIN_OK ? "" : msg);
  return st;
}

cltrain_status list_devices(char* buf, size_t buf_len) {
  std::string text, msg;
  const cltrain_status st = guarded(&msg, [&] {
    const Discovery d = discover_devices();
    if (d.devices.empty()) fail(CLTRAIN_UNAVAILABLE, d.none_reason);
    const int def = default_device_index(d.devices);
    for (const DeviceInfo& dev : d.devices) text += describe_device(dev, dev.index == def) + "\n";
    return CLTRAIN_OK;
  });
  copy_line(buf, buf_len, st == CLTRAIN_OK ? text : msg);
  return st;
}

cltrain_status create(const cltrain_backend_config* config, cltrain_backend** out, char* err, size_t err_len) {
  if (out) *out = nullptr;
  std::string msg;
  const cltrain_status st = guarded(&msg, [&] {
    if (!out) fail(CLTRAIN_INVALID, "create: out is NULL");
    int index = -1;
    std::string cache_dir;
    if (config && CLT_HAS_MEMBER(config, cltrain_backend_config, device_index)) index = config->device_index;
    if (config && CLT_HAS_MEMBER(config, cltrain_backend_config, cache_dir) && config->cache_dir)
      cache_dir = config->cache_dir;

    const Discovery d = discover_devices();
    if (d.devices.empty()) fail(CLTRAIN_UNAVAILABLE, d.none_reason);
    auto b = std::make_unique<cltrain_backend>();
    b->device = d.devices[select_device(d.devices, index)];
    b->device_line = device_line(b->device);

    cl_int e = CL_SUCCESS;
    b->context = clCreateContext(nullptr, 1, &b->device.id, nullptr, nullptr, &e);
    CLT_CHECK(e, "clCreateContext", b->device_line);
    const char* profile = std::getenv("CLTRAIN_OPENCL_PROFILE");
    const cl_command_queue_properties props = profile && *profile ? CL_QUEUE_PROFILING_ENABLE : 0;
    b->queue = clCreateCommandQueue(b->context, b->device.id, props, &e);  // in order
    CLT_CHECK(e, "clCreateCommandQueue", b->device_line);
    b->queue_properties = props;
    b->cache_dir = cache_dir;
    b->device_key = b->device.name + "|" + b->device.version + "|" + b->device.driver;
    b->programs = std::make_unique<ProgramCache>(b->context, b->device.id, b->device_key, cache_dir,
                                                 program_options(b->device.single_fp_config));
    apply_gemm_tuning(b->device);
    b->gemm_tile = gemm_tile(b->device);
    std::string gemm_error;
    b->native_gemm = choose_gemm_engine(b->device.type, b->device.local_mem, &gemm_error) == GemmEngine::kNative;
    b->gemm_limits = native_limits(b->device.local_mem);
    // POCL makes program binaries by compiling every kernel again for any work-group size; for
    // gemm.cl's unrolled tiles that took 18 s of mobilenetv2's first prepare (71 s against 53 s
    // without), while rebuilding gemm.cl from source in a later process, a POCL cache hit, adds
    // 0.2 s (0.49 s against 0.31 s).
    if (b->native_gemm && b->device.platform_short == "POCL") b->programs->keep_source_only("gemm.cl");
    if (!gemm_error.empty()) fail(CLTRAIN_ERROR, gemm_error);
    b->scratch_cap = std::min<uint64_t>(8u << 20, std::max<uint64_t>(b->device.max_alloc / 8, 1u << 20));
    b->scratch_floor = std::min<uint64_t>(256u << 10, b->scratch_cap);
    if (const char* env = std::getenv("CLTRAIN_OPENCL_SCRATCH_BYTES"); env && *env) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(env, &end, 10);
      if (end == env || *end != '\0' || v == 0)
        fail(CLTRAIN_ERROR, std::string("CLTRAIN_OPENCL_SCRATCH_BYTES='") + env + "' is not a positive number");
      b->scratch_cap = b->scratch_floor = v;
    }
    b->scratch_budget = b->scratch_cap;
    const char* trace = std::getenv("CLTRAIN_OPENCL_TRACE");
    b->trace = trace && *trace;
    b->programs->set_trace(b->trace);
    b->filter = OpFilter::from_env();
    b->last_error = b->filter.error;
    *out = b.release();
    return CLTRAIN_OK;
  });
  copy_line(err, err_len, st == CLTRAIN_OK ? "" : msg);
  return st;
}

// CLTRAIN_OPENCL_TRACE: each step's mean wall time over its runs after the first, and their sum.
void print_trace(const cltrain_backend& b) {
  double total = 0;
  std::fprintf(stderr, "cltrain opencl trace: mean ms per run of each step, after its first run\n");
  for (size_t i = 0; i < b.trace_ms.size(); ++i) {
    if (b.trace_runs[i] < 2) continue;
    const double mean = b.trace_ms[i] / static_cast<double>(b.trace_runs[i] - 1);
    total += mean;
    std::fprintf(stderr, "  %4zu %-24s %-8s %9.3f ms (%lld runs)\n", i, cltrain_op_name(b.steps[i].op),
                 phase_name(b.steps[i].phase).c_str(), mean, static_cast<long long>(b.trace_runs[i] - 1));
  }
  std::fprintf(stderr, "  total %.3f ms\n", total);
}

void destroy(cltrain_backend* b) {
  try {
    if (b && b->trace && !b->trace_ms.empty()) print_trace(*b);
    delete b;
  } catch (...) {  // nothing can be reported from here
  }
}

const char* device_name(cltrain_backend* b) { return b ? b->device_line.c_str() : "(no backend)"; }

// Empty if the backend can run the step, else why not.
std::string why_unsupported(const cltrain_backend* b, const StepView& s) {
  const OpFamily* family = find_op_family(s.step.op);
  if (!family || !family->check || !family->prepare)
    return std::string("op ") + cltrain_op_name(s.step.op) + " is not implemented on OpenCL";
  if (b && b->filter.blocks(s.step.op)) return "filtered out by CLTRAIN_OPENCL_OP_FILTER";
  if (s.step.num_inputs < 0 || s.step.num_inputs > CLTRAIN_MAX_STEP_IO || s.step.num_outputs < 0 ||
      s.step.num_outputs > CLTRAIN_MAX_STEP_IO)
    return "has a bad number of inputs or outputs";
  for (int i = 0; i < s.step.num_inputs + s.step.num_outputs; ++i) {
    const int32_t id = i < s.step.num_inputs ? s.step.inputs[i] : s.step.outputs[i - s.step.num_inputs];
    if (id < -1) return "refers to tensor " + std::to_string(id);
    const bool output = i >= s.step.num_inputs;
    if (id >= 0 && s.tensor(id).dtype != cltrain_slot_dtype(&s.step, output, output ? i - s.step.num_inputs : i))
      return "tensor " + std::to_string(id) + " is not " + (s.tensor(id).dtype == CLTRAIN_FLOAT32 ? "uint8" : "float32");
  }
  return family->check(s);
}

int supports(cltrain_backend* b, const cltrain_graph_desc* graph, int32_t index, int training) {
  if (!graph || index < 0 || index >= graph->num_steps || !graph->steps || (graph->num_tensors > 0 && !graph->tensors))
    return 0;
  try {
    const cltrain_step_desc step = cltrain_graph_step(graph, index);
    std::map<int32_t, cltrain_tensor_desc> tensors;  // the step's own, read by the host's element size
    for (int i = 0; i < step.num_inputs + step.num_outputs && i < 2 * CLTRAIN_MAX_STEP_IO; ++i) {
      const int32_t id = i < step.num_inputs ? step.inputs[i] : step.outputs[i - step.num_inputs];
      if (id >= graph->num_tensors) return 0;
      if (id >= 0) tensors[id] = cltrain_graph_tensor(graph, id);
    }
    return why_unsupported(b, StepView{step, nullptr, -1, &tensors}).empty() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

// Every tensor a step touches must be planned here and live at the step.
void check_step_tensors(const cltrain_backend& b, const StepView& s) {
  for (int i = 0; i < s.step.num_inputs + s.step.num_outputs; ++i) {
    const int32_t id = i < s.step.num_inputs ? s.step.inputs[i] : s.step.outputs[i - s.step.num_inputs];
    if (id < 0) continue;
    if (id >= b.num_host_tensors)
      fail(CLTRAIN_INVALID, s.what() + " refers to tensor " + std::to_string(id) + " outside the table");
    const cltrain_tensor_desc& t = b.tensors[id];
    if (b.offsets[id] < 0 || (!t.persistent && (s.index < t.first_step || s.index > t.last_step)))
      fail(CLTRAIN_INVALID, s.what() + " uses " + b.tensor_label(id) + " outside its lifetime [" +
                                std::to_string(t.first_step) + ", " + std::to_string(t.last_step) + "]");
  }
}

// Per step, the bytes of the host's tensors planned here that are live at it (an alias group
// counted once, over the span of its members).
std::vector<uint64_t> live_bytes(const HostGraph& g) {
  const size_t n = g.tensors.size();
  const int32_t num_steps = g.num_steps();
  std::vector<uint64_t> live(static_cast<size_t>(std::max(num_steps, 1)) + 1, 0);
  std::vector<int32_t> first(n, -1), last(n, -1);
  std::vector<uint64_t> bytes(n, 0);
  auto root = [&](size_t t) {
    for (size_t hops = 0; g.tensors[t].alias > 0 && static_cast<size_t>(g.tensors[t].alias - 1) < n && hops < n; ++hops)
      t = static_cast<size_t>(g.tensors[t].alias - 1);
    return t;
  };
  for (size_t t = 0; t < n; ++t) {
    const cltrain_tensor_desc& d = g.tensors[t];
    if (d.first_step < 0) continue;
    const size_t r = root(t);
    const int32_t f = d.persistent ? 0 : d.first_step, l = d.persistent ? num_steps - 1 : d.last_step;
    first[r] = first[r] < 0 ? f : std::min(first[r], f);
    last[r] = std::max(last[r], l);
    bytes[r] = std::max(bytes[r], tensor_bytes(d));
  }
  for (size_t t = 0; t < n; ++t)
    for (int32_t s = std::max(first[t], 0); first[t] >= 0 && s <= last[t] && s < num_steps; ++s) live[s] += bytes[t];
  return live;
}

// What prepare took from the cache directory: one line with CLTRAIN_OPENCL_TRACE; without it,
// one note when corrupt or stale entries had to be rebuilt (nothing when all is well).
void report_caches(const cltrain_backend& b) {
  const int rejected = b.cache_rejected + b.programs->entries_rejected();
  if (b.trace)
    std::fprintf(stderr,
                 "cltrain opencl: prepare: plan %s; programs: %d built, %d loaded from the cache, %d built from "
                 "source by choice\n",
                 b.plan_source.c_str(), b.programs->programs_built(), b.programs->programs_loaded(),
                 b.programs->programs_from_source());
  else if (rejected > 0)
    std::fprintf(stderr, "cltrain: note: %d corrupt or stale %s in the OpenCL cache %s; rebuilt\n", rejected,
                 rejected == 1 ? "entry" : "entries", b.cache_dir.c_str());
}

// The cache directory stays within cache_max_bytes(): the least recently used entries of other
// graphs go first, this prepare's never.
void trim_cache_dir(const cltrain_backend& b, std::filesystem::file_time_type prepare_started) {
  if (b.cache_dir.empty()) return;
  std::string error;
  const uint64_t max_bytes = cache_max_bytes(&error);
  if (!error.empty()) std::fprintf(stderr, "cltrain: warning: %s; keeping the cache under %llu bytes\n", error.c_str(),
                                   static_cast<unsigned long long>(max_bytes));
  const int deleted = trim_cache(b.cache_dir, max_bytes, prepare_started);
  if (b.trace && deleted > 0)
    std::fprintf(stderr, "cltrain opencl: cache: deleted the %d least recently used entries (bound %llu bytes)\n",
                 deleted, static_cast<unsigned long long>(max_bytes));
}

cltrain_status prepare(cltrain_backend* b, const cltrain_graph_desc* host_graph, cltrain_memory_report* report) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(b);
  const auto prepare_started = CacheClock::now();
  return guarded(&b->last_error, [&] {
    if (b->prepared || !b->steps.empty()) fail(CLTRAIN_INVALID, "prepare: called more than once");
    HostGraph g;
    if (const std::string e = read_graph(host_graph, &g); !e.empty()) fail(CLTRAIN_INVALID, "prepare: " + e);
    const HostGraph* graph = &g;
    b->steps = g.steps;
    b->assigned = g.assigned;
    b->runs.assign(g.steps.size(), StepRun{});

    // Check every assigned step and collect the scratch tensors they need, then plan them all.
    // The peak is that of the host's tensors, or higher where a step's least scratch (at the
    // floor budget) raises it; each step's scratch may then fill what the step leaves below it.
    const std::vector<uint64_t> live = live_bytes(*graph);
    uint64_t peak = *std::max_element(live.begin(), live.end());
    std::vector<uint64_t> budgets(live.size(), b->scratch_cap);
    for (int32_t i = 0; i < graph->num_steps() && b->scratch_floor < b->scratch_cap; ++i) {
      const OpFamily* family = b->assigned[i] ? find_op_family(b->steps[i].op) : nullptr;
      const StepView s{b->steps[i], graph->tensors.data(), i};
      if (!family || !family->scratch || !why_unsupported(b, s).empty()) continue;  // refused below
      b->scratch_budget = b->scratch_floor;
      uint64_t least = 0;
      for (uint64_t bytes : family->scratch(*b, s)) least += bytes;
      peak = std::max(peak, live[static_cast<size_t>(i)] + least);
    }
    for (size_t i = 0; i < live.size(); ++i)
      budgets[i] = std::clamp<uint64_t>(peak - std::min(peak, live[i]), b->scratch_floor, b->scratch_cap);
    std::vector<ScratchRequest> scratch;
    for (int32_t i = 0; i < graph->num_steps(); ++i) {
      if (!b->assigned[i]) continue;
      b->scratch_budget = budgets[static_cast<size_t>(i)];
      const StepView s{b->steps[i], graph->tensors.data(), i};
      const cltrain_step_desc& st = s.step;
      const bool counts_ok = st.num_inputs >= 0 && st.num_inputs <= CLTRAIN_MAX_STEP_IO && st.num_outputs >= 0 &&
                             st.num_outputs <= CLTRAIN_MAX_STEP_IO;
      for (int k = 0; counts_ok && k < st.num_inputs + st.num_outputs; ++k) {
        const int32_t id = k < st.num_inputs ? st.inputs[k] : st.outputs[k - st.num_inputs];
        if (id >= graph->num_tensors())
          fail(CLTRAIN_INVALID, s.what() + " refers to tensor " + std::to_string(id) + " outside the table");
      }
      if (const std::string why = why_unsupported(b, s); !why.empty())
        fail(CLTRAIN_INVALID, s.what() + " cannot run on OpenCL: " + why);
      const OpFamily* family = find_op_family(s.step.op);
      if (!family->scratch) continue;
      const std::vector<uint64_t> sizes = family->scratch(*b, s);
      for (size_t k = 0; k < sizes.size(); ++k)
        scratch.push_back({i, sizes[k], s.what() + " scratch " + std::to_string(k)});
    }
    plan_pool(*b, *graph, scratch, report);

    for (int32_t i = 0; i < graph->num_steps(); ++i) {
      if (!b->assigned[i]) continue;
      const StepView s{b->steps[i], b->tensors.data(), i};
      b->scratch_budget = budgets[static_cast<size_t>(i)];
      check_step_tensors(*b, s);
      b->runs[i] = find_op_family(s.step.op)->prepare(*b, s);
    }
    CLT_CALL(clFinish, (b->queue), "end of prepare");
    report_caches(*b);
    trim_cache_dir(*b, prepare_started);
    b->prepared = true;
    return CLTRAIN_OK;
  });
}

cltrain_status run(cltrain_backend* b, const int32_t* steps, int32_t num_steps, const cltrain_run_args* args) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(b);
  return guarded(&b->last_error, [&] {
    if (!b->prepared) fail(CLTRAIN_INVALID, "run: prepare has not succeeded");
    if (num_steps < 0 || (num_steps > 0 && !steps)) fail(CLTRAIN_INVALID, "run: bad step list");
    const cltrain_run_args run_args = read_sized(args);  // members the host's struct lacks are 0
    // Check the whole list before enqueueing anything.
    for (int32_t i = 0; i < num_steps; ++i) {
      const int32_t id = steps[i];
      if (id < 0 || id >= static_cast<int32_t>(b->runs.size()) || !b->runs[id])
        fail(CLTRAIN_INVALID, "run: step " + std::to_string(id) + " is not assigned to the OpenCL backend");
      if (b->steps[id].op == CLTRAIN_OP_UPDATE_ADAM && (!args || run_args.iteration < 1))
        fail(CLTRAIN_INVALID, "run: step " + std::to_string(id) + " (Adam) needs run_args.iteration >= 1");
    }
    // The step whose commands the counters and profiling charge, while it enqueues.
    struct CurrentStep {
      cltrain_backend* b;
      CurrentStep(cltrain_backend* backend, int32_t step) : b(backend) { b->current_step = step; }
      ~CurrentStep() { b->current_step = -1; }
    };
    // The queue is in order, so data from write_tensor is visible to the first kernel.
    if (!b->trace) {
      for (int32_t i = 0; i < num_steps; ++i) {
        const CurrentStep current(b, steps[i]);
        b->runs[steps[i]](&run_args);
        ++b->counters.steps_run;
      }
      return CLTRAIN_OK;
    }
    b->trace_ms.resize(b->runs.size(), 0.0);
    b->trace_runs.resize(b->runs.size(), 0);
    CLT_CALL(clFinish, (b->queue), "trace");
    for (int32_t i = 0; i < num_steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      {
        const CurrentStep current(b, steps[i]);
        b->runs[steps[i]](&run_args);
        ++b->counters.steps_run;
      }
      CLT_CALL(clFinish, (b->queue), "trace");
      // The first run of a step (CLBlast compiles its kernels then) is not counted.
      if (b->trace_runs[steps[i]]++ > 0)
        b->trace_ms[steps[i]] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    return CLTRAIN_OK;
  });
}

// Copies src into the tensor's staging buffer and enqueues a non-blocking transfer from there,
// so that the host goes on while the bytes move (the ABI lets write_tensor return once it has
// copied src). The staging buffer is reused by the next write of the same tensor, which first
// waits for this transfer only if it has not completed (in a training step it has: the loss read
// of the step before waited for everything).
cltrain_status write_tensor(cltrain_backend* b, int32_t tensor, const void* src, uint64_t bytes) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(b);
  return guarded(&b->last_error, [&] {
    if (!b->prepared) fail(CLTRAIN_INVALID, "write_tensor: prepare has not succeeded");
    const uint64_t size = planned_bytes(*b, tensor);
    if (bytes != size)
      fail(CLTRAIN_INVALID, "write_tensor: " + b->tensor_label(tensor) + " has " + std::to_string(size) +
                                " bytes, got " + std::to_string(bytes));
    if (!src && bytes > 0) fail(CLTRAIN_INVALID, "write_tensor: src is NULL");
    if (bytes == 0) return CLTRAIN_OK;
    StagedWrite& w = b->staged[tensor];
    if (w.done) {
      cl_int status = CL_COMPLETE;
      CLT_CALL(clGetEventInfo, (w.done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
               "write_tensor " + b->tensor_label(tensor));
      if (status > CL_COMPLETE)  // still queued or running: the one wait that blocks
        CLT_CALL(clWaitForEvents, (1, &w.done), "write_tensor " + b->tensor_label(tensor));
      clReleaseEvent(w.done);
      w.done = nullptr;
    }
    w.bytes.resize(bytes);  // allocated by the first write, reused after
    std::memcpy(w.bytes.data(), src, bytes);
    CLT_CALL(clEnqueueWriteBuffer,
             (b->queue, b->pool, CL_FALSE, b->offsets[tensor], bytes, w.bytes.data(), 0, nullptr, &w.done),
             "write_tensor " + b->tensor_label(tensor));
    return CLTRAIN_OK;
  });
}

cltrain_status read_tensor(cltrain_backend* b, int32_t tensor, void* dst, uint64_t bytes) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(b);
  return guarded(&b->last_error, [&] {
    if (!b->prepared) fail(CLTRAIN_INVALID, "read_tensor: prepare has not succeeded");
    const uint64_t size = planned_bytes(*b, tensor);
    if (bytes != size)
      fail(CLTRAIN_INVALID, "read_tensor: " + b->tensor_label(tensor) + " has " + std::to_string(size) +
                                " bytes, got " + std::to_string(bytes));
    if (!dst && bytes > 0) fail(CLTRAIN_INVALID, "read_tensor: dst is NULL");
    if (bytes > 0)  // blocking, after everything queued before it
      CLT_CALL(clEnqueueReadBuffer, (b->queue, b->pool, CL_TRUE, b->offsets[tensor], bytes, dst, 0, nullptr, nullptr),
               "read_tensor " + b->tensor_label(tensor));
    if (!b->timed.empty()) collect_times(*b);  // everything before the read has completed
    return CLTRAIN_OK;
  });
}

cltrain_status sync(cltrain_backend* b) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(b);
  return guarded(&b->last_error, [&] {
    CLT_CALL(clFinish, (b->queue), "sync");
    if (!b->timed.empty()) collect_times(*b);
    return CLTRAIN_OK;
  });
}

const char* last_error(cltrain_backend* b) { return b ? b->last_error.c_str() : "no backend object"; }

cltrain_status plan_private(cltrain_backend* b, const void** rows, uint32_t* row_size, int32_t* num_rows) {
  if (!b) return CLTRAIN_INVALID;
  return guarded(&b->last_error, [&] {
    if (!b->prepared) fail(CLTRAIN_INVALID, "plan_private: prepare has not succeeded");
    if (!rows || !row_size || !num_rows) fail(CLTRAIN_INVALID, "plan_private: NULL output");
    b->private_rows.clear();
    for (size_t s = 0; s < b->step_scratch.size(); ++s)
      for (int32_t t : b->step_scratch[s])
        b->private_rows.push_back({static_cast<int32_t>(s), CLTRAIN_ROLE_LAYER_SCOPE,
                                   static_cast<uint64_t>(b->offsets[static_cast<size_t>(t)]),
                                   tensor_bytes(b->tensors[static_cast<size_t>(t)])});
    *rows = b->private_rows.data();
    *row_size = sizeof(cltrain_private_tensor);
    *num_rows = static_cast<int32_t>(b->private_rows.size());
    return CLTRAIN_OK;
  });
}

cltrain_status plan_offsets(cltrain_backend* b, int64_t* offsets, int32_t num_tensors) {
  if (!b) return CLTRAIN_INVALID;
  return guarded(&b->last_error, [&] {
    if (!b->prepared) fail(CLTRAIN_INVALID, "plan_offsets: prepare has not succeeded");
    if (num_tensors < 0 || (num_tensors > 0 && !offsets)) fail(CLTRAIN_INVALID, "plan_offsets: bad table");
    for (int32_t i = 0; i < num_tensors; ++i) offsets[i] = i < b->num_host_tensors ? b->offsets[i] : -1;
    return CLTRAIN_OK;
  });
}

cltrain_status stats(cltrain_backend* b, cltrain_run_stats* out) {
  if (!b || !out) return CLTRAIN_INVALID;
  fill_sized(b->counters, out);
  return CLTRAIN_OK;
}

cltrain_status reset_stats(cltrain_backend* b) {
  if (!b) return CLTRAIN_INVALID;
  return guarded(&b->last_error, [&] {
    reset_counters(*b);
    return CLTRAIN_OK;
  });
}

// Profiling needs a queue created with CL_QUEUE_PROFILING_ENABLE (OpenCL 1.2 cannot switch it on
// an existing queue): turning it on replaces the queue once, after the queued work; the kernels,
// buffers and CLBlast's programs do not depend on the queue. Off, no event is asked for.
cltrain_status set_profiling(cltrain_backend* b, int on) {
  if (!b) return CLTRAIN_INVALID;
  return guarded(&b->last_error, [&] {
    if (on && !(b->queue_properties & CL_QUEUE_PROFILING_ENABLE)) {
      CLT_CALL(clFinish, (b->queue), "set_profiling");
      cl_int e = CL_SUCCESS;
      cl_command_queue q = clCreateCommandQueue(b->context, b->device.id, CL_QUEUE_PROFILING_ENABLE, &e);
      if (e != CL_SUCCESS || !q)
        fail(CLTRAIN_UNAVAILABLE, "set_profiling: clCreateCommandQueue with CL_QUEUE_PROFILING_ENABLE: " +
                                      cl_error_name(e));
      clReleaseCommandQueue(b->queue);
      b->queue = q;
      b->queue_properties = CL_QUEUE_PROFILING_ENABLE;
    }
    b->profiling = on != 0;
    return CLTRAIN_OK;
  });
}

cltrain_status profile(cltrain_backend* b, const void** rows, uint32_t* row_size, int32_t* num_rows) {
  if (!b) return CLTRAIN_INVALID;
  return guarded(&b->last_error, [&] {
    if (!rows || !row_size || !num_rows) fail(CLTRAIN_INVALID, "profile: rows, row_size or num_rows is NULL");
    CLT_CALL(clFinish, (b->queue), "profile");  // not counted: no CountingScope here
    collect_times(*b);
    b->profile_rows.clear();
    for (size_t i = 0; i < b->step_times.size(); ++i) {
      if (b->step_times[i].calls == 0) continue;
      cltrain_kernel_profile r{};
      r.step = static_cast<int32_t>(i) - 1;
      r.calls = b->step_times[i].calls;
      r.ms = static_cast<double>(b->step_times[i].ns) * 1e-6;
      b->profile_rows.push_back(r);
    }
    *rows = b->profile_rows.data();
    *row_size = sizeof(cltrain_kernel_profile);
    *num_rows = static_cast<int32_t>(b->profile_rows.size());
    return CLTRAIN_OK;
  });
}

}  // namespace
}  // namespace cltrain::ocl

extern "C" CLTRAIN_EXPORT const cltrain_backend_iface* cltrain_backend_entry(void) {
  using namespace cltrain::ocl;
  static const cltrain_backend_iface iface = [] {
    cltrain_backend_iface i{};
    i.abi_version = CLTRAIN_BACKEND_ABI_VERSION;
    i.struct_size = sizeof i;
    i.name = "opencl";
    i.create = create;
    i.destroy = destroy;
    i.supports = supports;
    i.prepare = prepare;
    i.run = run;
    i.write_tensor = write_tensor;
    i.read_tensor = read_tensor;
    i.sync = sync;
    i.last_error = last_error;
    i.probe = probe;
    i.list_devices = list_devices;
    i.device_name = device_name;
    i.plan_offsets = plan_offsets;
    i.plan_private = plan_private;
    i.stats = stats;
    i.reset_stats = reset_stats;
    i.set_profiling = set_profiling;
    i.profile = profile;
    return i;
  }();
  return &iface;
}
