// Floating-point operations of a training step, counted from the op's definition (the step
// conventions and Numerics of cltrain_backend.h), not from any backend's implementation.
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
//  - Element-wise per element: ReLU 1 / 1, ReLU6 2 / 1, Tanh 5 / 3, Logistic 3 / 3 (fwd / bwd);
//    Softmax 6 / 5; MSE 3 / 4 (3 with SUM); CCE 5 / 4 (3 with SUM); Accumulate 1; SGD 2; Adam 12
//    (per updated element); Add/Sub/Mul/Div 1 forward, backward per element of y and gradient
//    asked for: Add, Sub 1, Mul 2, Div 2 (da) and 4 (db).
//  - Mean: one add per input element, one divide per output element; backward one divide per
//    element. Average pool: one add per inside tap, one divide per output; backward one divide
//    per output and one add per inside tap. Max pool: one comparison per inside tap; backward
//    one add per output element.
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
