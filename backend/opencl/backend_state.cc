#include <atomic>
#include <cstdio>
#include <cstdlib>

#include <clblast.h>

#include "backend.h"

namespace cltrain::ocl {

bool OpFilter::blocks(int op) const { return active && std::regex_search(cltrain_op_name(op), re); }

OpFilter OpFilter::from_env() {
  OpFilter f;
  const char* pattern = std::getenv("CLTRAIN_OPENCL_OP_FILTER");
  if (!pattern || !*pattern) return f;  // unset or empty: no filter
  try {
    f.re = std::regex(pattern, std::regex::ECMAScript);
    f.active = true;
  } catch (const std::regex_error& e) {
    f.error = std::string("CLTRAIN_OPENCL_OP_FILTER='") + pattern + "' is not a valid regular expression (" + e.what() +
              "); it filters no op";
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) std::fprintf(stderr, "cltrain: warning: %s\n", f.error.c_str());
  }
  return f;
}

}  // namespace cltrain::ocl

namespace {

// Backends alive in this process: CLBlast's program cache is one for the process.
std::atomic<int> live_backends{0};

}  // namespace

cltrain_backend::cltrain_backend() { ++live_backends; }

cltrain_backend::~cltrain_backend() {
  // Errors are ignored here: destroy has no way to report them and must release everything.
  if (queue.handle()) clFinish(queue.handle());
  cltrain::ocl::reset_counters(counters);
  for (auto& [id, w] : staged)
    if (w.done) clReleaseEvent(w.done);
  runs.clear();  // they hold prepared GEMMs' kernels, which kernels releases
  kernels.reset();
  programs.reset();
  pool.release();  // before the queue and the context
  // The last backend empties CLBlast's process-wide program cache while its context still
  // exists: left to the cache's static destructor at exit, the programs are released after the
  // OpenCL runtime's own teardown (Oclgrind then aborts in clReleaseProgram with a corrupted
  // heap). A backend still alive keeps the cache: its routines would have to build again.
  if (--live_backends == 0) clblast::ClearCache();
  if (queue.handle()) clReleaseCommandQueue(queue.handle());
  if (context) clReleaseContext(context);
}
