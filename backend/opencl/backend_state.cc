#include <atomic>
#include <cstdio>
#include <cstdlib>

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
  if (queue.handle()) clReleaseCommandQueue(queue.handle());
  if (context) clReleaseContext(context);
}
