// libFuzzer target over what a checkpoint file goes through when training resumes from it:
// cltrain's trailer (checksum, progress), onert's layout (header, offsets, every constant's and
// Adam's blocks, the training position), checked against cnn-tiny (Adam) prepared on the CPU
// backend; then one training step where it loaded. Any exception is a refusal and fine; a crash, a
// sanitizer report, a timeout or memory beyond libFuzzer's limit is a finding. The corpus
// (tests/fuzz/checkpoint_corpus) holds an exported and a periodic checkpoint of cnn-tiny. Its CRC
// makes most mutations of a periodic checkpoint fail early; the exported one (no trailer) lets
// them reach the layout checks.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "checkpoint.h"
#include "engine.h"
#include "model/builder.h"

namespace {

cltrain::Engine& engine() {
  static const std::unique_ptr<cltrain::Engine> e = [] {
    auto made = cltrain::Engine::from_buffer(cltrain::write_model(cltrain::make_named_model("cnn-tiny", 2), "circle"),
                                             "cnn-tiny");
    cltrain::Settings s = made->settings();
    s.backends = {};
    s.cache_dir = std::string();
    s.optimizer = cltrain::Optimizer::kAdam;
    made->set_settings(s);
    made->prepare();
    const std::vector<float> x(made->batch() * made->input_size(), 0.25f);
    std::vector<float> y(made->batch() * made->output_size(), 0.0f);
    y[0] = 1.0f;
    made->set_input(x.data(), x.size());
    made->set_expected(y.data(), y.size());
    return made;
  }();
  return *e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cltrain::Engine& e = engine();
  try {
    const cltrain::TrainingPosition pos =
        cltrain::load_checkpoint(e.session(), e.model(), std::vector<uint8_t>(data, data + size), "fuzz input");
    if (pos.step < 1000000) e.train_step();
  } catch (const std::exception&) {
  }
  return 0;
}
