// The CPU backend's op interface: each op family file in ops/ defines one CpuOp per op of the
// op list (kCpuOp_FULLY_CONNECTED, ...); backend.cc builds its dispatch table from
// CLTRAIN_OP_LIST, so an op added to the list without a CPU implementation fails to link.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cltrain/cltrain_backend.h"

namespace cltrain {
namespace cpu {

// One input or output slot of a step. desc is nullptr where the slot is absent (-1 or past
// num_inputs/num_outputs); data is nullptr while a step is only being checked.
struct TensorRef {
  const cltrain_tensor_desc* desc = nullptr;
  float* data = nullptr;
  uint64_t elements = 0;
  bool present() const { return desc != nullptr; }
  int32_t rank() const { return desc ? desc->rank : 0; }
  int32_t dim(int i) const { return desc->dims[i]; }
};

struct StepView {
  const cltrain_step_desc* step = nullptr;
  TensorRef in[CLTRAIN_MAX_STEP_IO];
  TensorRef out[CLTRAIN_MAX_STEP_IO];
  const cltrain_op_params& params() const { return step->params; }
};

// Validates a step (which slots are present, their shapes, its params): "" if the CPU can run
// it, else what is wrong, without the op's name (the caller adds it).
using CheckFn = std::string (*)(const StepView& s);
// Runs a step whose check passed: "" on success, else what went wrong.
using RunFn = std::string (*)(const StepView& s, const cltrain_run_args& args);

struct PhaseFns {
  CheckFn check = nullptr;  // both nullptr where the op has no step of this phase
  RunFn run = nullptr;
};

struct CpuOp {
  PhaseFns phase[3];  // indexed by cltrain_phase
  // A model op without a backward step that training may still run: its output is piecewise
  // constant (a comparison's 0/1 mask), so no gradient flows through it.
  bool piecewise_constant = false;
};

#define CLTRAIN_CPU_DECLARE_OP(e, name, code, kind) extern const CpuOp kCpuOp_##e;
CLTRAIN_OP_LIST(CLTRAIN_CPU_DECLARE_OP)
#undef CLTRAIN_CPU_DECLARE_OP

// Fused activations (activation.cc), shared by the ops that fuse one; select-based as
// cltrain_backend.h's Numerics say.
bool activation_supported(int32_t activation);
float apply_activation(int32_t activation, float z);
// dz from the activation's output y and dy.
float activation_backward(int32_t activation, float y, float dy);
// In place over n elements: y = act(y); dy = dz (dy is dead after a backward step).
void apply_activation(int32_t activation, float* y, uint64_t n);
void activation_backward(int32_t activation, const float* y, float* dy, uint64_t n);
float tanh_forward(float x);
float logistic_forward(float x);
// "" if the step's activation is supported, else what is wrong.
std::string require_activation(const StepView& s);
// Backward steps with params.dx_activation (in [x, ...] out [dx, ...]): "" if it is NONE, or
// supported with x and dx present.
std::string require_dx_activation(const StepView& s);
// Computes dx (out slot 0) with compute(target); with params.dx_activation, into a temporary,
// then dx = act'(x) applied to it, element by element (dx may share x's bytes).
void input_grad_into(const StepView& s, const std::function<void(float* target)>& compute);

// Checking helpers (ops/check.cc). Each returns "" when the condition holds.
std::string require_slots(const StepView& s, int max_inputs, int max_outputs);
std::string require(const TensorRef& t, const char* what);
std::string require_elements(const TensorRef& t, uint64_t elements, const char* what);
std::string shape_string(const TensorRef& t);
// t has exactly this shape.
std::string require_dims(const TensorRef& t, const int64_t* dims, int rank, const char* what);

// Elements of one sample: all but the first dimension (1 for rank <= 1).
uint64_t sample_elements(const TensorRef& t);
// The first dimension (1 for rank 0).
uint64_t batch_size(const TensorRef& t);

}  // namespace cpu
}  // namespace cltrain
