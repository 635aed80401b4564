// Floating-point operations of a training step, counted from the op's definition (the step
// conventions and Numerics of cltrain_ops.h), not from any backend's implementation.
//
// Convention
//  - A multiply-add (one term of a dot product) counts 2.
//  - Every other float add, subtract, multiply, divide, square root, exp, log, max/min and
//    comparison that the definition performs counts 1; copies, gathers, selects on an index and
//    zero fills count 0 (RESHAPE, PAD, CONCATENATION are free).
//  - Windows (convolutions, pools) count only the taps inside the input: positions in the
//    padding are skipped by the definition, so they cost nothing here, whatever a backend does.
//  - A fused activation counts 1 per output element forward (ReLU6 2, Tanh 5) and its derivative
//    1 per element backward (Tanh 3); so does a producer's derivative that a backward step applies
//    (params.dx_activation: per element of dx for convolutions, per window for max pools).
//  - Each op's own figures stand beside its descriptor's flops() (host/ops/): for example ReLU 1
//    forward and 1 backward per element, Softmax 6 / 5, Adam 12 per updated element.
#pragma once

#include <cstdint>
#include <vector>

#include "cltrain/cltrain_backend.h"

namespace cltrain {

// FLOPs of one step (any op of cltrain_ops.h, any phase) over the given tensor table.
uint64_t flops_of_step(const cltrain_step_desc& step, const std::vector<cltrain_tensor_desc>& tensors);

// The sum over steps [first, end) of a step list.
uint64_t flops_of_steps(const std::vector<cltrain_step_desc>& steps, const std::vector<cltrain_tensor_desc>& tensors,
                        size_t first, size_t end);

}  // namespace cltrain
