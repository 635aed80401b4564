// What the ABI's supports() and prepare() do (prepare.cc).
#pragma once

#include <string>

#include "backend.h"

namespace cltrain::ocl {

// Empty if b (may be NULL) can run the step, else why not.
std::string why_unsupported(const Backend* b, const StepView& s);

// The whole of prepare; throws Error. dry: plan only (the ABI's plan): the report and the pool's
// plan with every step's least scratch, no buffer, no kernels; the backend stays unprepared.
void prepare_backend(Backend& b, const cltrain_graph_desc* graph, cltrain_memory_report* report, bool dry = false);

}  // namespace cltrain::ocl
