// What the plugin counts for the ABI's stats and profile: every OpenCL call that enqueues device
// work, moves bytes, waits, allocates a buffer or builds a program goes through a wrapper
// (counters.cc, linked with -Wl,--wrap=<call>, which also reaches into CLBlast when it is linked
// statically), and the wrapper charges it to the backend whose entry point runs on this thread
// (CountingScope). With profiling on, each enqueued command's event is kept with the step it
// belongs to and its device time is collected once it has completed.
#pragma once

#include <cstdint>
#include <vector>

#include "cl_headers.h"
#include "cltrain/cltrain_backend.h"

struct cltrain_backend;

namespace cltrain::ocl {

// A command whose device time is collected when it has completed. A CLBlast GEMM (whose own
// kernels the wrappers do not see) is timed from the end of a marker enqueued before it (the end
// of the work before it) to the end of its last kernel, and counts its kernels as calls.
struct TimedCommand {
  int32_t step;              // global step index, -1 outside run() (the host's transfers)
  cl_event event;
  cl_event start = nullptr;  // the marker before a GEMM, else none
  int32_t calls = 1;
};

// Per step (index step + 1): timed commands and their summed device time.
struct StepTime {
  int64_t calls = 0;
  uint64_t ns = 0;
};

// While alive, the OpenCL calls of this thread are charged to b (nullptr: to none).
class CountingScope {
 public:
  explicit CountingScope(cltrain_backend* b);
  ~CountingScope();
  CountingScope(const CountingScope&) = delete;
  CountingScope& operator=(const CountingScope&) = delete;

 private:
  cltrain_backend* previous_;
};

// Moves the device time of completed timed commands into b's per-step times and releases their
// events; commands still running stay pending.
void collect_times(cltrain_backend& b);
// Zeroes the counters and times, dropping pending timed commands.
void reset_counters(cltrain_backend& b);
// Releases the pending timed commands' events (destroy).
void release_timed(cltrain_backend& b);

}  // namespace cltrain::ocl
