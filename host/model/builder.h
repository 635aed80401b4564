// Building models in code (tests, `cltrain make-model`) and writing any Model as circle/tflite.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/model.h"

namespace cltrain {

// Builds a Model op by op. Weights are Glorot-uniform from a fixed-seed generator, biases zero,
// so the same calls with the same seed give the same model. Methods return tensor indices.
class ModelBuilder {
 public:
  explicit ModelBuilder(uint32_t seed = 42);

  // A model input; shape[0] is the batch.
  int input(std::vector<int32_t> shape, std::string name = "input");

  // y = activation(x W^T + b), W [units, in] where in is x's last dimension; x is viewed as
  // [N, in]. Tensors: NAME/weights, NAME/bias, NAME (the output); NAME defaults to "fcK".
  int fully_connected(int x, int units, int activation, bool bias = true, std::string name = "");

  int relu(int x, std::string name = "");

  // new_shape may hold one -1 (inferred). Writes an INT32 constant shape operand as the
  // second input, as the TFLite converter does.
  int reshape(int x, std::vector<int32_t> new_shape, std::string name = "");

  int softmax(int x, float beta = 1.0f, std::string name = "");

  void output(int t);

  // The model exactly as load_model would return it (format "circle", no file bytes);
  // constant tensors get buffers 1, 2, ... in tensor order.
  Model build() const;

 private:
  int add_tensor(std::string name, std::vector<int32_t> shape, int32_t dtype = CLTRAIN_FLOAT32);
  int add_op(int32_t op, std::vector<int32_t> inputs, int output, cltrain_op_params params = {});
  std::string auto_name(const std::string& given, const char* prefix);
  const Tensor& tensor(int t) const;

  Model model_;
  std::mt19937 rng_;
  std::map<std::string, int> counters_;  // for default names: fc1, fc2, relu1, ...
};

// Serializes any Model, valid or not (tests write broken ones on purpose), as "circle" (CIR0)
// or "tflite" (TFL3). Buffer 0 is the empty buffer; a constant tensor keeps its buffer index
// (or gets a new one if it has none) and the buffer list is as long as the largest such index.
// Each operator's builtin code comes from the op list; ops outside it throw std::invalid_argument.
std::vector<uint8_t> write_model(const Model& m, const std::string& format);

// Writes bytes to path.tmp.PID, fsyncs, renames it over path. std::runtime_error with one line
// on failure (the temporary file is removed).
void save_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes);

// Benchmark models by name ("mlp"), batch first. Unknown names throw ModelError listing the
// known ones.
Model make_named_model(const std::string& name, int32_t batch);

// The names make_named_model knows.
std::vector<std::string> named_models();

// Number of elements of all constant float32 tensors (the model's parameters).
uint64_t count_parameters(const Model& m);

}  // namespace cltrain
