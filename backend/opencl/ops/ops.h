// The op families of the OpenCL backend, one entry per op of CLTRAIN_OP_LIST.
//
// Each op file defines kOp_<ENUM> for the ops it implements. The declarations below come from the
// op list itself, so an op added to the list without an entry here fails to link: add its op file,
// or define `const OpFamily kOp_<ENUM> = {};` (not supported on OpenCL) in unsupported.cc.
#pragma once

#include <string>
#include <vector>

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
  // Optional: the bytes of each private scratch tensor the step needs (im2col panels, CLBlast's
  // GEMM scratch). Called before the pool is planned, after check() passed; the tensors are
  // planned as CLTRAIN_ROLE_LAYER_SCOPE, live during this step only, and prepare finds them in
  // b.step_scratch[s.index] in the same order (scratch_tensor()).
  std::vector<uint64_t> (*scratch)(Backend& b, const StepView& s) = nullptr;
};

#define CLTRAIN_OCL_DECLARE_OP(e, name, code, kind) extern const OpFamily kOp_##e;
CLTRAIN_OP_LIST(CLTRAIN_OCL_DECLARE_OP)
#undef CLTRAIN_OCL_DECLARE_OP

// The family of an op value, or nullptr for a value outside the list.
const OpFamily* find_op_family(int op);

// Shared checks; each returns an empty string when it holds.
std::string require_tensor(const StepView& s, int32_t id, const char* role);
// For a one-input op whose forward is in [x] out [y] and backward in [dy] out [dx]: the forward's
// x and y, or the backward's dx and dy, as (x, y), both required.
std::string unary_pair(const StepView& s, int32_t* x, int32_t* y);
std::string require_count(const StepView& s, int32_t id, const char* role, uint64_t count);

// Fused activations the kernels implement (common.cl clt_act): NONE, RELU, RELU_N1_TO_1, RELU6, TANH.
bool activation_supported(int32_t activation);

// The i-th private scratch tensor of the step (as its family's scratch() listed them).
int32_t scratch_tensor(const Backend& b, const StepView& s, size_t i);

}  // namespace cltrain::ocl
