// Float16 storage on the CPU backend (CLTRAIN_FLOAT16, the Numerics of cltrain_backend.h): the
// backend keeps such tensors as floats and, after each step, rounds every element of the step's
// float16 outputs to the nearest float16 value, ties to even, as OpenCL's vstore_half_rte stores
// it. Its steps compute in float32 from inputs that hold float16 values, so each output element is
// rounded once, where the OpenCL kernels round it.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu_op.h"

namespace cltrain::cpu {

// The float16 nearest to x (ties to even; beyond the largest finite, Inf; NaN stays NaN), as a float.
float round_to_half(float x);

// Rounds the outputs of a step that half (per tensor id) marks as float16.
void round_half_outputs(const StepView& v, const std::vector<uint8_t>& half);

}  // namespace cltrain::cpu
