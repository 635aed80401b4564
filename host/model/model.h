// Loading a model file (host/model/loader.cc) and changing its batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace cltrain {

// Loads and verifies a .circle (CIR0) or .tflite (TFL3) file. Throws ModelError with one line
// naming the problem.
Model load_model(const std::string& path);
Model load_model_from_memory(const std::vector<uint8_t>& bytes, const std::string& what);

// Sets the batch (first) dimension of every non-constant tensor whose first dimension is the
// model's batch, and of Reshape target shapes. Throws ModelError if the model cannot take it.
void set_batch_size(Model& model, int32_t batch);

}  // namespace cltrain
