// What the plugin counts for the ABI's stats and profile: every OpenCL call that enqueues device
// work, moves bytes, waits, allocates a buffer or builds a program goes through a wrapper
// (counters.cc, linked with -Wl,--wrap=<call>, which also reaches into CLBlast when it is linked
// statically), and the wrapper charges it to the Counters of the backend whose entry point runs on
// this thread (CountingScope). With profiling on, each enqueued command's event is kept with the step it
// belongs to and its device time is collected once it has completed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"
#include "device/cl_headers.h"

namespace cltrain::ocl {

// A command whose device time is collected when it has completed. A CLBlast GEMM (whose own
// kernels the wrappers do not see) is timed from the end of a marker enqueued before it (the end
// of the work before it) to the end of its last kernel, and counts its kernels as calls.
struct TimedCommand {
  int32_t step;  // global step index, -1 outside run() (the host's transfers)
  cl_event event;
  cl_event start = nullptr;  // the marker before a GEMM, else none
  int32_t calls = 1;
  const std::string* kernel = nullptr;  // the kernel's function name (CLTRAIN_OPENCL_KERNEL_TIMES), else none
};

// Per step (index step + 1): timed commands and their summed device time.
struct StepTime {
  int64_t calls = 0;
  uint64_t ns = 0;
};

// CLTRAIN_OPENCL_FAULT=KIND:N, a test hook read when a backend is created: its Nth call of KIND
// fails as a failing device's would. enqueue: a kernel, copy or fill a step enqueues
// (CL_OUT_OF_RESOURCES); read: a read of a tensor (CL_OUT_OF_RESOURCES); alloc: a buffer created,
// the pool's at prepare included (CL_MEM_OBJECT_ALLOCATION_FAILURE). Once only: later calls work.
struct FaultPlan {
  enum Kind { kNone, kEnqueue, kRead, kAlloc };
  Kind kind = kNone;
  int64_t at = 0;    // the call that fails, 1-based
  int64_t seen = 0;  // calls of kind so far
  static FaultPlan from_environment();
  // Counts a call of kind k; true where it is the one to fail.
  bool fails(Kind k) { return k == kind && ++seen == at; }
};

// What one backend counted (the ABI's stats) and, with profiling on, the timed commands.
// launches: kernels, copies, fills (counters.cc) and CLBlast's kernels (gemm/gemm.cc, run_gemm);
// bytes: clEnqueueWrite/ReadBuffer; waits: blocking transfers, clFinish, clWaitForEvents;
// buffer_allocations: clCreateBuffer/SubBuffer; program_builds: clBuildProgram.
struct Counters {
  cltrain_run_stats stats{};
  int32_t current_step = -1;         // the step run() is enqueueing, -1 outside run()
  bool profiling = false;            // set_profiling: time every command's events
  std::vector<TimedCommand> timed;   // enqueued, device time not yet collected
  std::vector<StepTime> step_times;  // index step + 1 (0: the host's transfers)
  // With CLTRAIN_OPENCL_KERNEL_TIMES=FILE (a tuning aid): the timed kernels by function name over the
  // steps, appended to FILE as "kernel calls ms" lines when the backend is destroyed.
  std::map<std::string, StepTime> by_kernel;
  FaultPlan fault = FaultPlan::from_environment();

  Counters() = default;
  Counters(const Counters&) = delete;
  Counters& operator=(const Counters&) = delete;
  ~Counters();  // releases the pending timed commands' events
};

// While alive, the OpenCL calls of this thread are charged to c (nullptr: to none).
class CountingScope {
 public:
  explicit CountingScope(Counters* c);
  ~CountingScope();
  CountingScope(const CountingScope&) = delete;
  CountingScope& operator=(const CountingScope&) = delete;

 private:
  Counters* previous_;
};

// Moves the device time of completed timed commands into the per-step times and releases their
// events; commands still running stay pending.
void collect_times(Counters& c);
// Zeroes the counters and times, dropping pending timed commands.
void reset_counters(Counters& c);

}  // namespace cltrain::ocl
