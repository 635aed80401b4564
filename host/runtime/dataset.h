// Training data: Fashion-MNIST idx files or raw float32 files, as samples of fixed size.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cltrain {

// A problem with the user's data; what() is one line.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Dataset {
  uint64_t input_size = 0;     // floats per sample
  uint64_t expected_size = 0;  // floats per sample
  std::vector<float> inputs;   // samples back to back
  std::vector<float> expected;
  uint64_t size() const { return input_size ? inputs.size() / input_size : 0; }
  const float* input(uint64_t i) const { return inputs.data() + i * input_size; }
  const float* expected_of(uint64_t i) const { return expected.data() + i * expected_size; }
  // Moves the last `count` samples into a new dataset.
  Dataset split_tail(uint64_t count);
  // Keeps the first `count` samples.
  void truncate(uint64_t count);
};

// Fashion-MNIST: dir holds {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]. Pixels are scaled to
// [0,1], labels one-hot over 10 classes.
Dataset load_fashion_mnist(const std::string& dir, bool train);
constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Raw float32 samples back to back; the sizes must be whole multiples of the sample sizes and
// give the same number of samples. int32_input: the inputs are int32 (token ids), which the
// dataset keeps as their bits in its floats.
Dataset load_raw(const std::string& input_file, uint64_t input_size, const std::string& expected_file,
                 uint64_t expected_size, bool int32_input = false);

}  // namespace cltrain
