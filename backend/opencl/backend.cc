// The plugin's ABI surface: cltrain_backend_entry() and the entry points behind it. Each entry
// point catches every exception and turns it into a status plus a one-line message.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>

#include "abi_structs.h"
#include "backend.h"
#include "cltrain/cltrain_backend.h"
#include "device/cl_error.h"
#include "memory_plan.h"
#include "prepare.h"

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
#define CLT_HAS_MEMBER(ptr, type, member) ((ptr)->struct_size >= offsetof(type, member) + sizeof((ptr)->member))

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
    const uint64_t memory_budget =
        config && CLT_HAS_MEMBER(config, cltrain_backend_config, memory_budget) ? config->memory_budget : 0;

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
    b->queue.set_handle(clCreateCommandQueue(b->context, b->device.id, props, &e));  // in order
    CLT_CHECK(e, "clCreateCommandQueue", b->device_line);
    b->queue_properties = props;
    b->cache_dir = cache_dir;
    b->memory_budget = memory_budget;
    b->device_key = b->device.name + "|" + b->device.version + "|" + b->device.driver;
    b->programs = std::make_unique<ProgramCache>(b->context, b->device.id, b->device_key, cache_dir,
                                                 program_options(b->device.single_fp_config));
    b->kernels = std::make_unique<Kernels>(*b->programs, b->device.id);
    b->gemm.init(b->device, b->queue);
    // POCL makes program binaries by compiling every kernel again for any work-group size; for
    // gemm.cl's unrolled tiles that took 18 s of mobilenetv2's first prepare (71 s against 53 s
    // without), while rebuilding gemm.cl from source in a later process, a POCL cache hit, adds
    // 0.2 s (0.49 s against 0.31 s).
    if (b->gemm.native() && b->device.platform_short == "POCL") b->programs->keep_source_only("gemm.cl");
    b->scratch_cap = std::min<uint64_t>(8u << 20, std::max<uint64_t>(b->device.max_alloc / 8, 1u << 20));
    b->scratch_floor = std::min<uint64_t>(256u << 10, b->scratch_cap);
    if (const char* env = std::getenv("CLTRAIN_OPENCL_SCRATCH_BYTES"); env && *env) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(env, &end, 10);
      if (end == env || *end != '\0' || v == 0)
        fail(CLTRAIN_ERROR, std::string("CLTRAIN_OPENCL_SCRATCH_BYTES='") + env + "' is not a positive number");
      b->scratch_cap = b->scratch_floor = v;
    }
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

cltrain_status prepare(cltrain_backend* b, const cltrain_graph_desc* graph, cltrain_memory_report* report) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(&b->counters);
  return guarded(&b->last_error, [&] {
    prepare_backend(*b, graph, report);
    return CLTRAIN_OK;
  });
}

cltrain_status plan(cltrain_backend* b, const cltrain_graph_desc* graph, cltrain_memory_report* report) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(&b->counters);
  return guarded(&b->last_error, [&] {
    b->planned_dry = false;
    prepare_backend(*b, graph, report, true);
    b->planned_dry = true;
    return CLTRAIN_OK;
  });
}

cltrain_status run(cltrain_backend* b, const int32_t* steps, int32_t num_steps, const cltrain_run_args* args) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(&b->counters);
  return guarded(&b->last_error, [&] {
    if (!b->prepared) fail(CLTRAIN_INVALID, "run: prepare has not succeeded");
    if (num_steps < 0 || (num_steps > 0 && !steps)) fail(CLTRAIN_INVALID, "run: bad step list");
    const cltrain_run_args run_args = read_sized(args);  // members the host's struct lacks are 0
    // Check the whole list before enqueueing anything.
    for (int32_t i = 0; i < num_steps; ++i) {
      const int32_t id = steps[i];
      if (id < 0 || id >= static_cast<int32_t>(b->runs.size()) || !b->runs[id])
        fail(CLTRAIN_INVALID, "run: step " + std::to_string(id) + " is not assigned to the OpenCL backend");
      if ((b->steps[id].op == CLTRAIN_OP_UPDATE_ADAM || b->steps[id].op == CLTRAIN_OP_UPDATE_ADAM_SQUARES) &&
          (!args || run_args.iteration < 1))
        fail(CLTRAIN_INVALID, "run: step " + std::to_string(id) + " (Adam) needs run_args.iteration >= 1");
    }
    // The step whose commands the counters and profiling charge, while it enqueues.
    struct CurrentStep {
      cltrain_backend* b;
      CurrentStep(cltrain_backend* backend, int32_t step) : b(backend) { b->counters.current_step = step; }
      ~CurrentStep() { b->counters.current_step = -1; }
    };
    // The queue is in order, so data from write_tensor is visible to the first kernel.
    if (!b->trace) {
      for (int32_t i = 0; i < num_steps; ++i) {
        const CurrentStep current(b, steps[i]);
        b->runs[steps[i]](b->queue, &run_args);
        ++b->counters.stats.steps_run;
      }
      return CLTRAIN_OK;
    }
    b->trace_ms.resize(b->runs.size(), 0.0);
    b->trace_runs.resize(b->runs.size(), 0);
    CLT_CALL(clFinish, (b->queue.handle()), "trace");
    for (int32_t i = 0; i < num_steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      {
        const CurrentStep current(b, steps[i]);
        b->runs[steps[i]](b->queue, &run_args);
        ++b->counters.stats.steps_run;
      }
      CLT_CALL(clFinish, (b->queue.handle()), "trace");
      // The first run of a step (CLBlast compiles its kernels then) is not counted.
      if (b->trace_runs[steps[i]]++ > 0)
        b->trace_ms[steps[i]] +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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
  const CountingScope counting(&b->counters);
  return guarded(&b->last_error, [&] {
    if (!b->prepared) fail(CLTRAIN_INVALID, "write_tensor: prepare has not succeeded");
    const uint64_t size = b->pool.planned_bytes(tensor);
    if (bytes != size)
      fail(CLTRAIN_INVALID, "write_tensor: " + b->pool.label(tensor) + " has " + std::to_string(size) + " bytes, got " +
                                std::to_string(bytes));
    if (!src && bytes > 0) fail(CLTRAIN_INVALID, "write_tensor: src is NULL");
    if (bytes == 0) return CLTRAIN_OK;
    StagedWrite& w = b->staged[tensor];
    if (w.done) {
      cl_int status = CL_COMPLETE;
      CLT_CALL(clGetEventInfo, (w.done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
               "write_tensor " + b->pool.label(tensor));
      if (status > CL_COMPLETE)  // still queued or running: the one wait that blocks
        CLT_CALL(clWaitForEvents, (1, &w.done), "write_tensor " + b->pool.label(tensor));
      clReleaseEvent(w.done);
      w.done = nullptr;
    }
    w.bytes.resize(bytes);  // allocated by the first write, reused after
    std::memcpy(w.bytes.data(), src, bytes);
    CLT_CALL(clEnqueueWriteBuffer,
             (b->queue.handle(), b->pool.buffer, CL_FALSE, b->pool.offsets[tensor], bytes, w.bytes.data(), 0, nullptr,
              &w.done),
             "write_tensor " + b->pool.label(tensor));
    return CLTRAIN_OK;
  });
}

cltrain_status read_tensor(cltrain_backend* b, int32_t tensor, void* dst, uint64_t bytes) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(&b->counters);
  return guarded(&b->last_error, [&] {
    if (!b->prepared) fail(CLTRAIN_INVALID, "read_tensor: prepare has not succeeded");
    const uint64_t size = b->pool.planned_bytes(tensor);
    if (bytes != size)
      fail(CLTRAIN_INVALID, "read_tensor: " + b->pool.label(tensor) + " has " + std::to_string(size) + " bytes, got " +
                                std::to_string(bytes));
    if (!dst && bytes > 0) fail(CLTRAIN_INVALID, "read_tensor: dst is NULL");
    if (bytes > 0)  // blocking, after everything queued before it
      CLT_CALL(clEnqueueReadBuffer,
               (b->queue.handle(), b->pool.buffer, CL_TRUE, b->pool.offsets[tensor], bytes, dst, 0, nullptr, nullptr),
               "read_tensor " + b->pool.label(tensor));
    if (!b->counters.timed.empty()) collect_times(b->counters);  // everything before the read has completed
    return CLTRAIN_OK;
  });
}

cltrain_status sync(cltrain_backend* b) {
  if (!b) return CLTRAIN_INVALID;
  const CountingScope counting(&b->counters);
  return guarded(&b->last_error, [&] {
    CLT_CALL(clFinish, (b->queue.handle()), "sync");
    if (!b->counters.timed.empty()) collect_times(b->counters);
    return CLTRAIN_OK;
  });
}

const char* last_error(cltrain_backend* b) { return b ? b->last_error.c_str() : "no backend object"; }

cltrain_status plan_private(cltrain_backend* b, const void** rows, uint32_t* row_size, int32_t* num_rows) {
  if (!b) return CLTRAIN_INVALID;
  return guarded(&b->last_error, [&] {
    if (!b->prepared && !b->planned_dry) fail(CLTRAIN_INVALID, "plan_private: neither prepare nor plan has succeeded");
    if (!rows || !row_size || !num_rows) fail(CLTRAIN_INVALID, "plan_private: NULL output");
    b->private_rows.clear();
    for (size_t s = 0; s < b->pool.step_scratch.size(); ++s)
      for (int32_t t : b->pool.step_scratch[s])
        b->private_rows.push_back({static_cast<int32_t>(s), CLTRAIN_ROLE_LAYER_SCOPE,
                                   static_cast<uint64_t>(b->pool.offsets[static_cast<size_t>(t)]),
                                   tensor_bytes(b->pool.tensors[static_cast<size_t>(t)])});
    *rows = b->private_rows.data();
    *row_size = sizeof(cltrain_private_tensor);
    *num_rows = static_cast<int32_t>(b->private_rows.size());
    return CLTRAIN_OK;
  });
}

cltrain_status plan_offsets(cltrain_backend* b, int64_t* offsets, int32_t num_tensors) {
  if (!b) return CLTRAIN_INVALID;
  return guarded(&b->last_error, [&] {
    if (!b->prepared && !b->planned_dry) fail(CLTRAIN_INVALID, "plan_offsets: neither prepare nor plan has succeeded");
    if (num_tensors < 0 || (num_tensors > 0 && !offsets)) fail(CLTRAIN_INVALID, "plan_offsets: bad table");
    for (int32_t i = 0; i < num_tensors; ++i) offsets[i] = i < b->pool.num_host_tensors ? b->pool.offsets[i] : -1;
    return CLTRAIN_OK;
  });
}

cltrain_status stats(cltrain_backend* b, cltrain_run_stats* out) {
  if (!b || !out) return CLTRAIN_INVALID;
  fill_sized(b->counters.stats, out);
  return CLTRAIN_OK;
}

cltrain_status reset_stats(cltrain_backend* b) {
  if (!b) return CLTRAIN_INVALID;
  return guarded(&b->last_error, [&] {
    reset_counters(b->counters);
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
      CLT_CALL(clFinish, (b->queue.handle()), "set_profiling");
      cl_int e = CL_SUCCESS;
      cl_command_queue q = clCreateCommandQueue(b->context, b->device.id, CL_QUEUE_PROFILING_ENABLE, &e);
      if (e != CL_SUCCESS || !q)
        fail(CLTRAIN_UNAVAILABLE,
             "set_profiling: clCreateCommandQueue with CL_QUEUE_PROFILING_ENABLE: " + cl_error_name(e));
      clReleaseCommandQueue(b->queue.handle());
      b->queue.set_handle(q);
      b->queue_properties = CL_QUEUE_PROFILING_ENABLE;
    }
    b->counters.profiling = on != 0;
    return CLTRAIN_OK;
  });
}

cltrain_status profile(cltrain_backend* b, const void** rows, uint32_t* row_size, int32_t* num_rows) {
  if (!b) return CLTRAIN_INVALID;
  return guarded(&b->last_error, [&] {
    if (!rows || !row_size || !num_rows) fail(CLTRAIN_INVALID, "profile: rows, row_size or num_rows is NULL");
    CLT_CALL(clFinish, (b->queue.handle()), "profile");  // not counted: no CountingScope here
    collect_times(b->counters);
    b->profile_rows.clear();
    for (size_t i = 0; i < b->counters.step_times.size(); ++i) {
      if (b->counters.step_times[i].calls == 0) continue;
      cltrain_kernel_profile r{};
      r.step = static_cast<int32_t>(i) - 1;
      r.calls = b->counters.step_times[i].calls;
      r.ms = static_cast<double>(b->counters.step_times[i].ns) * 1e-6;
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
    i.plan = plan;
    return i;
  }();
  return &iface;
}
