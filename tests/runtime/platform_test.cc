// The numerics contract across platforms: the CPU backend's per-step losses are the same bits on
// every processor the project builds for (x86-64 with its AVX2 fma chains, aarch64 with std::fma,
// all of it compiled with -ffp-contract=off), and the named models' files are the same bytes.
// The references (data/) were written by the x86-64 build; the aarch64 cross-build runs these
// tests under qemu (.ci/cross) against the same files. After an intended change of the numerics
// or of the model writer, rewrite them from the x86-64 build:
//
//   CLTRAIN_UPDATE_REFERENCE=1 build/runtime_tests --gtest_filter='Platform.*'
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "backend.h"
#include "dataset.h"
#include "model/builder.h"
#include "session.h"

namespace cltrain {
namespace {

constexpr int32_t kBatch = 32;

// A reference file of lines "<key> <key> <value as hex> [a note for people]": read whole, or
// (with CLTRAIN_UPDATE_REFERENCE set) collected and written at the end.
class Reference {
 public:
  explicit Reference(const std::string& file) : path_(std::string(CLTRAIN_TEST_DATA_DIR) + "/" + file) {
    update_ = std::getenv("CLTRAIN_UPDATE_REFERENCE") != nullptr;
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string a, b, hex;
      if (fields >> a >> b >> hex) want_[a + " " + b] = std::stoull(hex, nullptr, 16);
    }
    if (!update_) {
      EXPECT_FALSE(want_.empty()) << "no reference values in " << path_;
    }
  }
  ~Reference() {
    if (!update_) return;
    std::ofstream(path_) << written_.str();
    std::printf("wrote %s\n", path_.c_str());
  }
  // Checks (or records) the value under key "a b"; the note goes to the file and to a failure.
  void expect(const std::string& a, const std::string& b, uint64_t got, int hex_digits, const std::string& note) {
    char line[160];
    std::snprintf(line, sizeof line, "%s %s %0*" PRIx64 " %s\n", a.c_str(), b.c_str(), hex_digits, got, note.c_str());
    written_ << line;
    if (update_) return;
    const auto it = want_.find(a + " " + b);
    if (it == want_.end()) {
      ADD_FAILURE() << a << " " << b << " is not in " << path_;
      return;
    }
    EXPECT_EQ(got, it->second) << "got " << line << "reference " << path_;
  }

 private:
  std::string path_;
  bool update_ = false;
  std::map<std::string, uint64_t> want_;
  std::ostringstream written_;
};

// Trains `model_name` on the CPU for `steps` steps over consecutive batches of the first
// Fashion-MNIST training images (no shuffling) and returns each step's loss.
std::vector<float> cpu_step_losses(const std::string& model_name, int32_t optimizer, int steps) {
  Model model = make_named_model(model_name, kBatch);
  TrainOptions options;
  options.optimizer = optimizer;
  options.learning_rate = optimizer == CLTRAIN_OP_UPDATE_SGD ? 0.01f : 0.001f;
  std::string why;
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(open_backend("cpu", default_backend_config(), &why));
  EXPECT_TRUE(backends.back()) << why;
  if (!backends.back()) return {};
  Session session(build_training_graph(model, options), std::move(backends));
  session.prepare();
  Dataset data = load_fashion_mnist(kFashionMnistDir, true);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s)
    losses.push_back(session.train_step(data.input(static_cast<uint64_t>(s) * kBatch),
                                        data.expected_of(static_cast<uint64_t>(s) * kBatch), nullptr));
  return losses;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

TEST(Platform, CpuStepLossesAreTheReferenceBits) {
  struct Run {
    const char* name;
    const char* model;
    int32_t optimizer;
    int steps;
  };
  const Run runs[] = {{"mlp/adam", "mlp", CLTRAIN_OP_UPDATE_ADAM, 20},
                      {"mlp/sgd", "mlp", CLTRAIN_OP_UPDATE_SGD, 20},
                      {"cnn-tiny/adam", "cnn-tiny", CLTRAIN_OP_UPDATE_ADAM, 5}};
  Reference ref("cpu_step_losses.txt");
  for (const Run& run : runs) {
    const std::vector<float> losses = cpu_step_losses(run.model, run.optimizer, run.steps);
    ASSERT_EQ(losses.size(), static_cast<size_t>(run.steps)) << run.name;
    for (int s = 0; s < run.steps; ++s) {
      char value[32];
      std::snprintf(value, sizeof value, "%.9g", static_cast<double>(losses[s]));
      ref.expect(run.name, std::to_string(s + 1), bits(losses[s]), 8, value);
    }
  }
}

// FNV-1a, 64 bits.
uint64_t digest(const std::vector<uint8_t>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

TEST(Platform, NamedModelFilesAreTheReferenceBytes) {
  Reference ref("named_model_digests.txt");
  for (const std::string& name : named_models())
    for (const char* format : {"circle", "tflite"}) {
      const std::vector<uint8_t> bytes = write_model(make_named_model(name, kBatch), format);
      ref.expect(name, format, digest(bytes), 16, std::to_string(bytes.size()) + " bytes");
    }
}

}  // namespace
}  // namespace cltrain
