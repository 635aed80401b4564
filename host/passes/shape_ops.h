// Integer subgraphs over shapes: what converters write for Flatten, Reshape with -1 and global
// pooling in a model with an open batch (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE's shape). The
// loader takes such operators out of Model::operators into Model::shape_ops, and fold_shape_ops
// evaluates them whenever the shapes are known (at load, and again when the batch is set), so
// that their results are int32 constants for the operators that read them. Nothing of them
// reaches the training graph or a backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace cltrain {

namespace fb {
struct Operator;
}

// Builtin codes of the operators the shape evaluator computes (when all they read is int32 and
// known on the host).
bool is_shape_op_code(int32_t code);

// The options a ShapeOperator keeps, read from the file's operator (see ShapeOperator::options).
std::vector<int32_t> read_shape_op_options(int32_t code, const fb::Operator& op);

// Evaluates one shape operator (any ShapeOperator, in m.shape_ops or not) into its output tensor.
void fold_shape_op(Model& m, const ShapeOperator& op, const std::string& what);

// Evaluates m.shape_ops in order into their output tensors (data and shape). Throws ModelError
// naming the operator on anything it cannot compute.
void fold_shape_ops(Model& m, const std::string& what);

}  // namespace cltrain
