// The graph check of a loaded model (host/model/graph_check.cc).
#pragma once

#include <string>

#include "graph/graph.h"

namespace cltrain {

// Graph-level checks on a loaded model: operator arity, operand types and shapes, and that the
// operators are in an order where each tensor is computed once before it is read. Completes the
// parameters that come from operands and shapes rather than from options: MEAN's axes_mask
// (from the constant axes), PAD's pad_before/pad_after (from the constant paddings),
// CONCATENATION's axis (made non-negative), DEPTHWISE_CONV_2D's depth_multiplier (from the
// weights' shape). Running it again on its own result changes nothing.
void check_graph(Model& m, const std::string& what);

}  // namespace cltrain
