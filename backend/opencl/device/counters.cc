#include "device/counters.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace cltrain::ocl {
namespace {

// The counters of the backend whose entry point runs on this thread; its OpenCL calls are charged
// to them.
thread_local Counters* g_active = nullptr;

enum class Traffic { kNone, kToDevice, kFromDevice };

// One enqueue through its real call: counts it and, with profiling on, keeps its event (asking
// for one where the caller did not) with the step it belongs to.
template <class Call>
cl_int counted(bool launch, Traffic traffic, size_t bytes, bool blocking, cl_event* event, Call&& call) {
  Counters* b = g_active;
  if (!b) return call(event);
  if ((launch && b->current_step >= 0 && b->fault.fails(FaultPlan::kEnqueue)) ||
      (traffic == Traffic::kFromDevice && b->fault.fails(FaultPlan::kRead)))
    return CL_OUT_OF_RESOURCES;
  const bool timed = b->profiling;
  cl_event own = nullptr;
  cl_event* ev = event ? event : (timed ? &own : nullptr);
  const cl_int err = call(ev);
  if (err != CL_SUCCESS) return err;
  cltrain_run_stats& c = b->stats;
  if (launch && b->current_step >= 0) ++c.launches;
  if (traffic == Traffic::kToDevice) c.bytes_to_device += bytes;
  if (traffic == Traffic::kFromDevice) c.bytes_from_device += bytes;
  if (blocking) ++c.blocking_waits;
  if (timed && ev && *ev) {
    if (event) clRetainEvent(*ev);  // the caller keeps its own reference
    b->timed.push_back({b->current_step, *ev});
  }
  return err;
}

void count_wait() {
  if (g_active) ++g_active->stats.blocking_waits;
}

}  // namespace

FaultPlan FaultPlan::from_environment() {
  FaultPlan f;
  const char* v = std::getenv("CLTRAIN_OPENCL_FAULT");
  if (!v || !*v) return f;  // unset or empty: no fault
  const std::string s = v;
  const size_t colon = s.find(':');
  const std::string kind = s.substr(0, colon);
  f.kind = kind == "enqueue" ? kEnqueue : kind == "read" ? kRead : kind == "alloc" ? kAlloc : kNone;
  f.at = colon == std::string::npos ? 1 : std::atoll(s.c_str() + colon + 1);
  if (f.kind == kNone || f.at < 1)
    std::fprintf(stderr, "cltrain: warning: CLTRAIN_OPENCL_FAULT=%s is not KIND:N (enqueue, read or alloc; N >= 1)\n",
                 v);
  return f;
}

CountingScope::CountingScope(Counters* c) : previous_(g_active) { g_active = c; }
CountingScope::~CountingScope() { g_active = previous_; }

void collect_times(Counters& b) {
  size_t kept = 0;
  for (const TimedCommand& t : b.timed) {
    cl_int status = CL_COMPLETE;
    if (clGetEventInfo(t.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS)
      status = -1;               // cannot tell: drop it
    if (status > CL_COMPLETE) {  // queued, submitted or running
      b.timed[kept++] = t;
      continue;
    }
    cl_ulong start = 0, end = 0, marker_end = 0;
    if (status == CL_COMPLETE &&
        clGetEventProfilingInfo(t.event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) == CL_SUCCESS &&
        clGetEventProfilingInfo(t.event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) == CL_SUCCESS) {
      if (t.start &&
          clGetEventProfilingInfo(t.start, CL_PROFILING_COMMAND_END, sizeof marker_end, &marker_end, nullptr) ==
              CL_SUCCESS &&
          marker_end < start)
        start = marker_end;  // the GEMM's first kernel began after the work before it ended
      const size_t index = static_cast<size_t>(t.step + 1);
      if (b.step_times.size() <= index) b.step_times.resize(index + 1);
      b.step_times[index].calls += t.calls;
      b.step_times[index].ns += end > start ? end - start : 0;
      if (t.kernel && t.step >= 0) {
        StepTime& k = b.by_kernel[*t.kernel];
        k.calls += t.calls;
        k.ns += end > start ? end - start : 0;
      }
    }
    clReleaseEvent(t.event);
    if (t.start) clReleaseEvent(t.start);
  }
  b.timed.resize(kept);
}

namespace {

void release_timed(Counters& c) {
  for (const TimedCommand& t : c.timed) {
    clReleaseEvent(t.event);
    if (t.start) clReleaseEvent(t.start);
  }
  c.timed.clear();
}

}  // namespace

// CLTRAIN_OPENCL_KERNEL_TIMES=FILE[:sizes|:kernels], read once: the file, and whether to key by
// global size or by kernel object (each prepared GEMM has its own: one line per product).
struct KernelTimes {
  std::string file;
  bool sizes = false, objects = false;
};
static const KernelTimes* kernel_times() {
  static const KernelTimes* const setting = []() -> const KernelTimes* {
    const char* p = std::getenv("CLTRAIN_OPENCL_KERNEL_TIMES");
    if (!p || !*p) return nullptr;
    auto* t = new KernelTimes{p};
    for (const std::string suffix : {":sizes", ":kernels"})
      if (t->file.size() > suffix.size() &&
          t->file.compare(t->file.size() - suffix.size(), suffix.size(), suffix) == 0) {
        t->file.resize(t->file.size() - suffix.size());
        (suffix == ":sizes" ? t->sizes : t->objects) = true;
      }
    return t;
  }();
  return setting;
}

// "name", with :sizes "name[global sizes]" ("gemm[13x1]"), with :kernels "name#i" (i: the kernel
// object's order of first launch, "gemm#3"). The names live as long as the process (TimedCommand
// points into the set); backends on several threads share it.
static const std::string* intern_kernel_name(cl_kernel k, cl_uint dims, const size_t* global) {
  static std::mutex lock;
  static std::set<std::string> names;
  static std::map<cl_kernel, size_t> objects;
  char name[256] = {};
  if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, nullptr) != CL_SUCCESS) return nullptr;
  std::string key = name;
  if (kernel_times()->sizes && global) {
    key += "[";
    for (cl_uint d = 0; d < dims; ++d) key += (d ? "x" : "") + std::to_string(global[d]);
    key += "]";
  }
  const std::lock_guard<std::mutex> hold(lock);
  if (kernel_times()->objects) key += "#" + std::to_string(objects.emplace(k, objects.size()).first->second);
  return &*names.insert(key).first;
}

Counters::~Counters() {
  release_timed(*this);
  const KernelTimes* times = kernel_times();
  if (!times || by_kernel.empty()) return;
  if (FILE* f = std::fopen(times->file.c_str(), "a")) {
    for (const auto& [name, t] : by_kernel)
      std::fprintf(f, "%s %lld %.3f\n", name.c_str(), static_cast<long long>(t.calls), t.ns / 1e6);
    std::fclose(f);
  }
}

void reset_counters(Counters& c) {
  release_timed(c);
  c.stats = cltrain_run_stats{};
  c.step_times.clear();
}

}  // namespace cltrain::ocl

// The wrapped OpenCL calls (-Wl,--wrap=NAME sends every reference to NAME in the plugin's own
// objects, and in a static CLBlast, to __wrap_NAME; __real_NAME is the ICD loader's).
using cltrain::ocl::counted;
using cltrain::ocl::Traffic;

extern "C" {

cl_int __real_clEnqueueNDRangeKernel(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*,
                                     cl_uint, const cl_event*, cl_event*);
cl_int __real_clEnqueueCopyBuffer(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event*,
                                  cl_event*);
cl_int __real_clEnqueueFillBuffer(cl_command_queue, cl_mem, const void*, size_t, size_t, size_t, cl_uint,
                                  const cl_event*, cl_event*);
cl_int __real_clEnqueueWriteBuffer(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void*, cl_uint,
                                   const cl_event*, cl_event*);
cl_int __real_clEnqueueReadBuffer(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint, const cl_event*,
                                  cl_event*);
cl_int __real_clFinish(cl_command_queue);
cl_int __real_clWaitForEvents(cl_uint, const cl_event*);
cl_mem __real_clCreateBuffer(cl_context, cl_mem_flags, size_t, void*, cl_int*);
cl_mem __real_clCreateSubBuffer(cl_mem, cl_mem_flags, cl_buffer_create_type, const void*, cl_int*);
cl_int __real_clBuildProgram(cl_program, cl_uint, const cl_device_id*, const char*,
                             void(CL_CALLBACK*)(cl_program, void*), void*);

cl_int __wrap_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* offset,
                                     const size_t* global, const size_t* local, cl_uint n, const cl_event* wait,
                                     cl_event* event) {
  const cl_int err = counted(true, Traffic::kNone, 0, false, event, [&](cl_event* ev) {
    return __real_clEnqueueNDRangeKernel(q, k, dims, offset, global, local, n, wait, ev);
  });
  cltrain::ocl::Counters* c = cltrain::ocl::g_active;
  if (err == CL_SUCCESS && c && c->profiling && !c->timed.empty() && cltrain::ocl::kernel_times())
    c->timed.back().kernel = cltrain::ocl::intern_kernel_name(k, dims, global);
  return err;
}

cl_int __wrap_clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset, size_t dst_offset,
                                  size_t size, cl_uint n, const cl_event* wait, cl_event* event) {
  return counted(true, Traffic::kNone, 0, false, event, [&](cl_event* ev) {
    return __real_clEnqueueCopyBuffer(q, src, dst, src_offset, dst_offset, size, n, wait, ev);
  });
}

cl_int __wrap_clEnqueueFillBuffer(cl_command_queue q, cl_mem mem, const void* pattern, size_t pattern_size,
                                  size_t offset, size_t size, cl_uint n, const cl_event* wait, cl_event* event) {
  return counted(true, Traffic::kNone, 0, false, event, [&](cl_event* ev) {
    return __real_clEnqueueFillBuffer(q, mem, pattern, pattern_size, offset, size, n, wait, ev);
  });
}

cl_int __wrap_clEnqueueWriteBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking, size_t offset, size_t size,
                                   const void* ptr, cl_uint n, const cl_event* wait, cl_event* event) {
  return counted(false, Traffic::kToDevice, size, blocking == CL_TRUE, event, [&](cl_event* ev) {
    return __real_clEnqueueWriteBuffer(q, mem, blocking, offset, size, ptr, n, wait, ev);
  });
}

cl_int __wrap_clEnqueueReadBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking, size_t offset, size_t size,
                                  void* ptr, cl_uint n, const cl_event* wait, cl_event* event) {
  return counted(false, Traffic::kFromDevice, size, blocking == CL_TRUE, event, [&](cl_event* ev) {
    return __real_clEnqueueReadBuffer(q, mem, blocking, offset, size, ptr, n, wait, ev);
  });
}

cl_int __wrap_clFinish(cl_command_queue q) {
  cltrain::ocl::count_wait();
  return __real_clFinish(q);
}

cl_int __wrap_clWaitForEvents(cl_uint n, const cl_event* events) {
  cltrain::ocl::count_wait();
  return __real_clWaitForEvents(n, events);
}

cl_mem __wrap_clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void* host, cl_int* err) {
  if (cltrain::ocl::g_active && cltrain::ocl::g_active->fault.fails(cltrain::ocl::FaultPlan::kAlloc)) {
    if (err) *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    return nullptr;
  }
  cl_mem mem = __real_clCreateBuffer(context, flags, size, host, err);
  if (mem && cltrain::ocl::g_active) ++cltrain::ocl::g_active->stats.buffer_allocations;
  return mem;
}

cl_mem __wrap_clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags, cl_buffer_create_type type, const void* info,
                                cl_int* err) {
  if (cltrain::ocl::g_active && cltrain::ocl::g_active->fault.fails(cltrain::ocl::FaultPlan::kAlloc)) {
    if (err) *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    return nullptr;
  }
  cl_mem mem = __real_clCreateSubBuffer(buffer, flags, type, info, err);
  if (mem && cltrain::ocl::g_active) ++cltrain::ocl::g_active->stats.buffer_allocations;
  return mem;
}

cl_int __wrap_clBuildProgram(cl_program program, cl_uint n, const cl_device_id* devices, const char* options,
                             void(CL_CALLBACK* notify)(cl_program, void*), void* user_data) {
  if (cltrain::ocl::g_active) ++cltrain::ocl::g_active->stats.program_builds;
  return __real_clBuildProgram(program, n, devices, options, notify, user_data);
}

}  // extern "C"
