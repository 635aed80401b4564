// The CPU backend's op table (from the op list, cpu_op.h) and its checks of the steps and tensors
// a graph hands it (backend.cc): everything about a step but its lifetimes and placement.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cltrain/cltrain_backend.h"
#include "cpu_op.h"

namespace cltrain {
namespace cpu {

extern const CpuOp* const kOps[CLTRAIN_OP_COUNT];  // per op, its CPU steps
extern const int kOpKinds[CLTRAIN_OP_COUNT];       // per op, its CLTRAIN_KIND_*

const char* phase_name(int32_t phase);  // "forward", "backward", "update"

using TensorAt = std::function<const cltrain_tensor_desc*(int32_t id)>;

// "tensor 3 (name)".
std::string tensor_label(const cltrain_tensor_desc& t, int32_t id);
// A step's operands over the pool at the planned offsets (no data where pool is null).
StepView make_view(const cltrain_step_desc& step, const TensorAt& tensors, uint8_t* pool, const int64_t* offsets);
// "" or what is wrong with the step: op, phase, slots, dtypes, shapes.
std::string check_step(const cltrain_step_desc& step, const TensorAt& tensors, int32_t num_tensors);
// "" or what is wrong with the tensor: rank, dims, dtype, role, lifetime within last_step, data size.
std::string check_tensor(const cltrain_tensor_desc& t, int32_t id, int32_t last_step);

}  // namespace cpu
}  // namespace cltrain
