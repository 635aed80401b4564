// Edits the runtime makes to a loaded model before training, so that it trains as the framework
// it was converted from trains it (docs/training-rules.md). New tensors go after the file's
// (Model::file_tensor_count), operators are rewired in place; the exports write both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

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

// LoRA: for each chosen FULLY_CONNECTED (chosen[i] for Model::operators[i]) with the weight W
// [M, K], adapters A [rank, K] (uniform in +-1/sqrt(K), from a fixed seed) and B [M, rank]
// (zero) after the model's tensors, shared by every operator that shares W, and after the
// operator, marked Operator::added: h = FC(x, A), u = FC(h, B), s = u * (alpha / rank), and
// y = act(z + s) where the base FC now writes z without its activation. The base weights are
// meant to stay frozen (the caller trains only the adapters' operators).
struct LoraAdapter {
  int32_t weight = -1, a = -1, b = -1;  // W and its adapters (tensor indices)
  float scale = 0.0f;                   // alpha / rank
};
std::vector<LoraAdapter> add_lora(Model& m, int32_t rank, float alpha, const std::vector<bool>& chosen);

// W + scale * B A, in double, rounded once.
std::vector<float> merged_lora_weight(const std::vector<float>& w, const std::vector<float>& a,
                                      const std::vector<float>& b, int32_t rows, int32_t cols, int32_t rank,
                                      float scale);

}  // namespace cltrain
