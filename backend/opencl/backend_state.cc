#include "backend_state.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "memory_plan.h"

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
    f.error = std::string("CLTRAIN_OPENCL_OP_FILTER='") + pattern +
              "' is not a valid regular expression (" + e.what() + "); it filters no op";
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) std::fprintf(stderr, "cltrain: warning: %s\n", f.error.c_str());
  }
  return f;
}

uint64_t StepView::count(int32_t id) const { return tensor_elements(tensor(id)); }

std::string phase_name(int32_t phase) {
  switch (phase) {
    case CLTRAIN_PHASE_FORWARD: return "forward";
    case CLTRAIN_PHASE_BACKWARD: return "backward";
    case CLTRAIN_PHASE_UPDATE: return "update";
    default: return "phase " + std::to_string(phase);
  }
}

std::string StepView::what() const {
  std::string s = index >= 0 ? "step " + std::to_string(index) + " (" : "(";
  return s + cltrain_op_name(step.op) + " " + phase_name(step.phase) + ")";
}

}  // namespace cltrain::ocl

cltrain_backend::~cltrain_backend() {
  // Errors are ignored here: destroy has no way to report them and must release everything.
  if (queue) clFinish(queue);
  cltrain::ocl::release_timed(*this);
  for (auto& [id, w] : staged)
    if (w.done) clReleaseEvent(w.done);
  for (cl_kernel k : kernels) clReleaseKernel(k);
  programs.reset();
  for (auto& [id, mem] : sub_buffers) clReleaseMemObject(mem);
  if (pool) clReleaseMemObject(pool);
  if (queue) clReleaseCommandQueue(queue);
  if (context) clReleaseContext(context);
}

std::string cltrain_backend::tensor_label(int32_t id) const {
  std::string s = "tensor " + std::to_string(id);
  if (id >= 0 && static_cast<size_t>(id) < tensor_names.size() && !tensor_names[id].empty())
    s += " '" + tensor_names[id] + "'";
  return s;
}
