// Helpers shared by the loader, the graph checks and the writer (not part of the public API).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace cltrain {
namespace detail {

// Throws ModelError("<what>: <msg>").
[[noreturn]] void fail(const std::string& what, const std::string& msg);

// A name made safe for a one-line message: control characters replaced, long names cut.
std::string printable(const std::string& s, size_t max_len = 80);

// "[128,784]"
std::string shape_str(const std::vector<int32_t>& shape);

// "tensor 3 'fc1/weights'"
std::string tensor_label(const Model& m, int32_t t);

// "operator 2 (FullyConnected)"
std::string operator_label(const Model& m, size_t i);

// Bytes per element of a cltrain_dtype.
inline uint64_t dtype_size(int32_t /*dtype*/) { return 4; }

// Graph-level checks on a loaded model: operator arity, operand types and shapes, and that the
// operators are in an order where each tensor is computed once before it is read.
void check_graph(const Model& m, const std::string& what);

}  // namespace detail
}  // namespace cltrain
