// The op families of the OpenCL backend, one entry per op of CLTRAIN_OP_LIST.
//
// Each op file defines kOp_<ENUM> for the ops it implements. The declarations below come from the
// op list itself, so an op added to the list without an entry here fails to link: add its op file,
// or define `const OpFamily kOp_<ENUM> = {};` (not supported on OpenCL) in unsupported.cc.
#pragma once

#include <string>

#include "backend_state.h"
#include "cltrain/cltrain_ops.h"

namespace cltrain::ocl {

struct OpFamily {
  // Empty if this backend can run the step, else why not. Checks shapes and params; the caller
  // has checked that the op is not filtered and that every tensor of the step is float32.
  std::string (*check)(const StepView& s) = nullptr;
  // At prepare: generates the step's kernels, sets their constant arguments and returns what
  // run() enqueues. Only called after check() passed.
  StepRun (*prepare)(Backend& b, const StepView& s) = nullptr;
};

#define CLTRAIN_OCL_DECLARE_OP(e, name, code, kind) extern const OpFamily kOp_##e;
CLTRAIN_OP_LIST(CLTRAIN_OCL_DECLARE_OP)
#undef CLTRAIN_OCL_DECLARE_OP

// The family of an op value, or nullptr for a value outside the list.
const OpFamily* find_op_family(int op);

// Shared checks; each returns an empty string when it holds.
std::string require_tensor(const StepView& s, int32_t id, const char* role);
std::string require_count(const StepView& s, int32_t id, const char* role, uint64_t count);

}  // namespace cltrain::ocl
