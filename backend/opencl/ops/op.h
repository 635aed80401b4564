// The op families of the OpenCL backend, one entry per op of CLTRAIN_OP_LIST, and what an op may
// see and do: its step (StepView), and an OpContext that gives it the device, its scratch budget,
// kernels, the pool's offsets, its scratch tensors and GEMMs. At run time its StepRun gets the
// queue. Nothing else of the backend reaches an op.
//
// Each op file defines kOp_<ENUM> for the ops it implements. The declarations below come from the
// op list itself, so an op added to the list without an entry fails to link: add its op file, or
// define `const OpFamily kOp_<ENUM> = {};` (not supported on OpenCL) in it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"
#include "device/cl_error.h"
#include "device/queue.h"
#include "gemm/gemm.h"
#include "program/kernel.h"

struct cltrain_backend;

namespace cltrain::ocl {

// One step and the tensors it refers to: the whole table, or (in supports()) only the step's own
// tensors by id.
struct StepView {
  const cltrain_step_desc& step;
  const cltrain_tensor_desc* tensors;
  int32_t index;                                                         // global step index; -1 in supports()
  const std::map<int32_t, cltrain_tensor_desc>* step_tensors = nullptr;  // instead of tensors

  int32_t in(int i) const { return i < step.num_inputs ? step.inputs[i] : -1; }
  int32_t out(int i) const { return i < step.num_outputs ? step.outputs[i] : -1; }
  const cltrain_tensor_desc& tensor(int32_t id) const { return step_tensors ? step_tensors->at(id) : tensors[id]; }
  uint64_t count(int32_t id) const;  // elements
  std::string what() const;          // "step 5 (FullyConnected backward)"
};

// What run() enqueues for one prepared step.
using StepRun = std::function<void(const Queue& queue, const cltrain_run_args* args)>;

// A step's plan within one scratch budget (OpFamily::plan): the bytes of each private scratch
// tensor, and what the family keeps of the plan for its prepare() (detail, the family's own type).
struct StepPlan {
  std::vector<uint64_t> scratch;
  std::shared_ptr<const void> detail;
};

// What a step's plan() and prepare() may read and touch. plan() runs before the pool is planned:
// it may use the device, the budget and the GEMM engine's sizes. prepare() may use everything,
// and gets the plan made at its budget.
class OpContext {
 public:
  // budget: the bytes the step's scratch may take without raising the pool's peak.
  OpContext(cltrain_backend& b, const StepView& s, uint64_t budget, const StepPlan* plan = nullptr)
      : s(s), b_(b), budget_(budget), plan_(plan) {}

  const StepView& s;

  const DeviceInfo& device() const;
  uint64_t scratch_budget() const { return budget_; }
  // The host plans within a memory budget: kernels may trade launches for less scratch.
  bool lean() const;
  uint64_t scratch_cap() const;  // the largest budget any step gets
  const GemmEngine& gemm() const;
  // Whether a tensor of the step (-1: none) is stored as float16 (only where the family says
  // half_storage), and d with NAME set to 1 for one that is, 0 otherwise (common.cl's NAME_H).
  bool half(int32_t tensor) const;
  Defines& storage(Defines& d, const char* name, int32_t tensor) const;
  // g with its operands' storage (Gemm::a_half ...), and the bytes of CLBlast scratch it needs.
  Gemm with_storage(Gemm g) const;
  uint64_t gemm_temp_bytes(const Gemm& g) const { return gemm().temp_bytes(with_storage(g)); }

  // --- prepare() only ---
  // The family's plan of this step at this budget (what its plan() kept as detail).
  template <class T>
  const T& plan() const {
    if (!plan_ || !plan_->detail) fail(CLTRAIN_ERROR, s.what() + ": prepared without its plan");
    return *static_cast<const T*>(plan_->detail.get());
  }
  Kernel kernel(const std::string& family, const Defines& defines, const char* name) const;
  cl_mem pool() const;
  // In elements of the tensor's storage (floats, or halves for CLTRAIN_FLOAT16), as kernels take it.
  cl_uint offset(int32_t tensor) const;
  cl_uint offset_or_zero(int32_t tensor) const;  // 0 for an absent (-1) tensor
  // The i-th private scratch tensor of the step (as its family's scratch() listed them).
  int32_t scratch(size_t i) const;
  size_t num_scratch() const;
  // temp: the step's private tensor for CLBlast's scratch, or -1.
  PreparedGemm prepare_gemm(const Gemm& g, int32_t temp) const;

 private:
  cltrain_backend& b_;
  uint64_t budget_;
  const StepPlan* plan_;
};

struct OpFamily {
  // Empty if this backend can run the step, else why not. Checks shapes and params; the caller
  // has checked that the op is not filtered and that every tensor of the step has its slot's dtype.
  std::string (*check)(const StepView& s) = nullptr;
  // At prepare: generates the step's kernels, sets their constant arguments and returns what
  // run() enqueues. Only called after check() passed.
  StepRun (*prepare)(const OpContext& c) = nullptr;
  // Optional: the step's plan within c.scratch_budget(): the bytes of each private scratch tensor
  // it needs (im2col panels, CLBlast's GEMM scratch) and what prepare() enqueues. Called before the
  // pool is planned, after check() passed, once per budget prepare tries (prepare.cc); the tensors
  // are planned as CLTRAIN_ROLE_LAYER_SCOPE, live during this step only, and prepare() finds them
  // as c.scratch(i) in the same order and the plan as c.plan<T>().
  StepPlan (*plan)(const OpContext& c) = nullptr;
  // The family's kernels load and store float16 tensors (CLTRAIN_FLOAT16 activations and
  // back-prop tensors, the host's --storage fp16), each output element rounded once.
  bool half_storage = false;
};

#define CLTRAIN_OCL_DECLARE_OP(e, name, code, kind) extern const OpFamily kOp_##e;
CLTRAIN_OP_LIST(CLTRAIN_OCL_DECLARE_OP)
#undef CLTRAIN_OCL_DECLARE_OP

// The family of an op value, or nullptr for a value outside the list.
const OpFamily* find_op_family(int op);

std::string phase_name(int32_t phase);

// Lanes of a kernel that works on neighbouring channels as vectors (common.cl's VEC): the widest
// of 16, 8 and 4 that divides channels, else 1.
inline long long channel_lanes(int64_t channels) {
  for (long long v : {16, 8, 4})
    if (channels % v == 0) return v;
  return 1;
}

// Shared checks; each returns an empty string when it holds.
std::string require_tensor(const StepView& s, int32_t id, const char* role);
// For a one-input op whose forward is in [x] out [y] and backward in [dy] out [dx]: the forward's
// x and y, or the backward's dx and dy, as (x, y), both required.
std::string unary_pair(const StepView& s, int32_t* x, int32_t* y);
std::string require_count(const StepView& s, int32_t id, const char* role, uint64_t count);
// Input 0 present, and output 0 with as many elements.
std::string require_same_count(const StepView& s, const char* in_role, const char* out_role);

// Fused activations the kernels implement (common.cl clt_act): NONE, RELU, RELU_N1_TO_1, RELU6, TANH.
bool activation_supported(int32_t activation);

}  // namespace cltrain::ocl
