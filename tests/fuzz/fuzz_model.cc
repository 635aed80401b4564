// libFuzzer target over what a model file goes through before its first step: loading (circle or
// tflite), verifying, the operand checks, the edits (untying, missing biases), the training
// graph and its placement and memory plan on the CPU backend, then one training step when the
// model is small. Any exception is a refusal and fine; a crash, a sanitizer report, a timeout
// or memory beyond libFuzzer's limit is a finding. Built by -DCLTRAIN_FUZZ=ON with clang
// (.ci/fuzz runs it over tests/fuzz/corpus for a bounded time).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "engine.h"

namespace {

// Elements of every tensor of the model at its batch: above this the step is skipped (the plan
// is still made), so that a mutated shape does not spend the run on one input.
constexpr uint64_t kMaxElements = 1u << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto engine = cltrain::Engine::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz input");
    uint64_t elements = 0;
    for (const auto& t : engine->model().tensors) {
      uint64_t n = 1;
      for (int64_t d : t.shape) n *= d > 0 ? static_cast<uint64_t>(d) : 1;
      elements += n;
      if (n > kMaxElements * 64 || elements > kMaxElements * 64) return 0;  // the pool would not fit
    }
    cltrain::Settings s = engine->settings();
    s.backends = {};  // the CPU backend only
    s.cache_dir = std::string();
    s.add_missing_biases = (size & 1) != 0;
    engine->set_settings(s);
    engine->prepare();
    if (elements > kMaxElements) return 0;
    engine->train_step();
  } catch (const std::exception&) {
  }
  return 0;
}
