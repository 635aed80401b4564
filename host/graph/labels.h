// Message helpers for a model's tensors and operators (every model error is one line naming them),
// and the window arithmetic shared by the graph check and the op descriptors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace cltrain {
namespace graph {

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
inline uint64_t dtype_size(int32_t dtype) { return dtype == CLTRAIN_UINT8 ? 1 : 4; }

// Name of a fused activation code ("RELU6", graph/activations.h), or the number of one the format
// does not define.
std::string activation_str(int32_t act);

// Output size of a convolution or pool along one axis (cltrain_ops.h, cltrain_padding): SAME
// ceil(in / stride), VALID ceil((in - (filter - 1) * dilation) / stride). Computed in 64 bits;
// 0 or less where the (dilated) filter does not fit a VALID input, -1 for a stride, filter or
// dilation below 1 or an unknown padding.
int64_t window_out_size(int64_t in, int64_t filter, int64_t stride, int64_t dilation, int32_t padding);

}  // namespace graph
}  // namespace cltrain
