// Edits the runtime makes to a loaded model before training, so that it trains as the framework
// it was converted from trains it (docs/training-rules.md). New tensors go after the file's
// (Model::file_tensor_count), operators are rewired in place; the exports write both.
#pragma once

#include <cstdint>
#include <string>

#include "model/model.h"

namespace cltrain {

// Converters store equal constants once (the zero biases of a fresh model become one tensor read
// by several operators). A float32 constant read by several operators stays one tied weight only
// among operators that also share a weight with varied values (the same kernel: one layer applied
// twice); a constant whose values are all equal is otherwise given to each operator as its own
// copy. Returns one line saying what was untied ("" if nothing).
std::string untie_merged_constants(Model& m);

// The FullyConnected, Conv2D and DepthwiseConv2D operators without a bias (converters drop zero
// biases).
int32_t count_missing_biases(const Model& m);
// Gives each of them a zero bias (one per output channel) to train; operators that share their
// kernel share it. Returns how many operators got one.
int32_t add_missing_biases(Model& m);

}  // namespace cltrain
