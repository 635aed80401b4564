// Checkpoints move between cltrain and onert both ways, against files onert itself wrote
// (data/onert, made once by tests/onert/make_references.sh with PyPI's onert 0.1.0; nothing here
// needs onert). The model, mk_small.circle, is mnist-kaggle's graph with fewer channels: the same
// 24 tensors and 10 operators, so the same onert order, in checkpoints of 94 KB instead of 5.8 MB
// (the full mnist-kaggle is measured by the same script; docs/training-rules.md).
//
// Regenerate the model (then the references) after an intended change of the model writer:
//   CLTRAIN_UPDATE_REFERENCE=1 build/runtime_tests --gtest_filter='OnertCheckpoint.ModelIsTheCommittedFile'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "checkpoint.h"
#include "dataset.h"
#include "engine.h"
#include "model/builder.h"

namespace cltrain {
namespace {

const std::string kDir = std::string(CLTRAIN_TEST_DATA_DIR) + "/onert";
constexpr int32_t kBatch = 8, kSteps = 5;

Model mk_small() {
  ModelBuilder b;
  int x = b.input({1, 28, 28, 1}, "input");
  x = b.conv2d(x, 4, 5, 5, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "conv1");
  x = b.conv2d(x, 4, 5, 5, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "conv2");
  x = b.max_pool2d(x, 2, 2, 2, CLTRAIN_PADDING_VALID, "pool1");
  x = b.conv2d(x, 8, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "conv3");
  x = b.conv2d(x, 8, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "conv4");
  x = b.max_pool2d(x, 2, 2, 2, CLTRAIN_PADDING_VALID, "pool2");
  x = b.reshape(x, {-1, 392}, "flatten");
  x = b.fully_connected(x, 16, CLTRAIN_ACT_RELU, true, "fc1");
  x = b.fully_connected(x, 10, CLTRAIN_ACT_NONE, true, "fc2");
  b.output(b.softmax(x, 1.0f, "softmax"));
  return b.build();
}

std::vector<uint8_t> bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::vector<double> losses_of(const std::string& path) {  // lines "step loss"
  std::ifstream f(path);
  std::vector<double> out;
  int step;
  double loss;
  while (f >> step >> loss) out.push_back(loss);
  return out;
}

uint32_t u32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// The first 40 training images of Fashion-MNIST, in order: what the references trained on.
const Dataset& data() {
  static const Dataset d = [] {
    Dataset x = load_fashion_mnist(kFashionMnistDir, true);
    x.truncate(static_cast<uint64_t>(kBatch * kSteps));
    return x;
  }();
  return d;
}

std::unique_ptr<Engine> engine(const std::string& opt, const std::string& backend) {
  auto e = Engine::from_file(kDir + "/mk_small.circle");
  Settings s = e->settings();
  s.batch_size = kBatch;
  s.optimizer = opt == "adam" ? Optimizer::kAdam : Optimizer::kSgd;
  s.learning_rate = opt == "adam" ? 0.001f : 0.01f;
  s.loss = Loss::kCategoricalCrossentropy;
  s.backends = {backend};
  s.cache_dir = "";
  e->set_settings(s);
  e->prepare();
  return e;
}

// One pass over the data (kSteps steps); the losses.
std::vector<double> epoch(Engine& e) {
  const Dataset& d = data();
  std::vector<double> out;
  for (int i = 0; i < kSteps; ++i) {
    e.set_input(d.input(static_cast<uint64_t>(i * kBatch)), static_cast<uint64_t>(kBatch) * d.input_size);
    e.set_expected(d.expected.data() + static_cast<size_t>(i * kBatch) * d.expected_size,
                   static_cast<uint64_t>(kBatch) * d.expected_size);
    out.push_back(e.train_step());
  }
  return out;
}

void expect_losses_near(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << what << ", step " << i + 1;
}

TEST(OnertCheckpoint, ModelIsTheCommittedFile) {
  const std::vector<uint8_t> built = write_model(mk_small(), "circle");
  if (std::getenv("CLTRAIN_UPDATE_REFERENCE")) {
    std::ofstream(kDir + "/mk_small.circle", std::ios::binary)
        .write(reinterpret_cast<const char*>(built.data()), static_cast<std::streamsize>(built.size()));
    return;
  }
  EXPECT_EQ(built, bytes_of(kDir + "/mk_small.circle")) << "the model writer changed: regenerate the references";
}

// The order is onert's: for mnist-kaggle as the helper's decoding of a marked model showed, and
// for mobilenetv2 (111 constants) the entry sizes of the checkpoint onert wrote.
TEST(OnertCheckpoint, OrderIsOnerts) {
  EXPECT_EQ(onert_checkpoint_order(make_named_model("mnist-kaggle", 1)),
            std::vector<int32_t>({12, 11, 9, 2, 15, 1, 4, 17, 5, 18, 20, 8, 21}));
  const Model mnv2 = make_named_model("mobilenetv2", 1);
  std::vector<uint64_t> sizes;
  for (int32_t t : onert_checkpoint_order(mnv2)) sizes.push_back(mnv2.tensors[static_cast<size_t>(t)].data.size());
  std::ifstream f(kDir + "/mobilenetv2_onert_sizes.txt");
  std::vector<uint64_t> want;
  uint64_t v;
  while (f >> v) want.push_back(v);
  ASSERT_EQ(want.size(), 111u);
  EXPECT_EQ(sizes, want);
}

class OnertCheckpointBoth : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

// onert's checkpoint after 5 steps resumes here: the next 5 steps' losses are onert's
// uninterrupted run's within 1e-6, and written back it is the same bytes as onert's file.
TEST_P(OnertCheckpointBoth, OnertsCheckpointResumesHere) {
  const auto& [opt, backend] = GetParam();
  const std::string ckpt = kDir + "/onert_" + opt + "_5.ckpt";
  auto e = engine(opt, backend);
  e->import_checkpoint(ckpt);
  EXPECT_EQ(e->position().steps, kSteps);
  const std::string out = ::testing::TempDir() + "cltrain_onert_" + opt + "_" + backend + ".ckpt";
  e->export_checkpoint(out);
  EXPECT_TRUE(bytes_of(out) == bytes_of(ckpt)) << "re-exported, onert's checkpoint is not the same bytes";
  std::remove(out.c_str());
  const std::vector<double> full = losses_of(kDir + "/onert_" + opt + "_full.txt");
  ASSERT_EQ(full.size(), 2u * kSteps);
  expect_losses_near(epoch(*e), std::vector<double>(full.begin() + kSteps, full.end()), "resumed from onert's");
}

// cltrain's checkpoint after 5 steps is laid out as the one onert imported (the same header,
// offsets and integer constant; the weights within 1e-6 of those it had), and onert's 5 steps
// from it continue this backend's uninterrupted run within 1e-6.
TEST_P(OnertCheckpointBoth, OnertResumesCltrainsCheckpoint) {
  const auto& [opt, backend] = GetParam();
  auto e = engine(opt, backend);
  epoch(*e);
  e->set_epochs_done(1);  // as the CLI that wrote it records the epoch it finished
  const std::string out = ::testing::TempDir() + "cltrain_own_" + opt + "_" + backend + ".ckpt";
  e->export_checkpoint(out);
  const std::vector<uint8_t> ours = bytes_of(out), imported = bytes_of(kDir + "/cltrain_" + opt + "_5.ckpt");
  std::remove(out.c_str());
  ASSERT_EQ(ours.size(), imported.size());
  const uint32_t length = u32(ours, 16), data_start = 20 + 4 * length;
  EXPECT_TRUE(std::equal(ours.begin(), ours.begin() + data_start, imported.begin())) << "header or offsets differ";
  const uint32_t other = u32(ours, 12);
  EXPECT_TRUE(std::equal(ours.begin() + other, ours.end(), imported.begin() + other)) << "training position differs";
  // Every weight block entry; the 8-byte one is the Reshape's int32 shape and must be exact.
  for (uint32_t i = 0; i < length; ++i) {
    const uint32_t at = u32(ours, 20 + 4 * i), end = i + 1 < length ? u32(ours, 24 + 4 * i) : u32(ours, 4);
    if (end - at == 8) {
      EXPECT_TRUE(std::equal(ours.begin() + at, ours.begin() + end, imported.begin() + at)) << "entry " << i;
      continue;
    }
    for (uint32_t k = at; k < end; k += 4) {
      float a, b;
      std::memcpy(&a, ours.data() + k, 4);
      std::memcpy(&b, imported.data() + k, 4);
      ASSERT_NEAR(a, b, 1e-6 * std::max(1.0f, std::fabs(b))) << "entry " << i << " at byte " << k;
    }
  }
  const std::vector<double> ours_next = epoch(*e);
  expect_losses_near(losses_of(kDir + "/onert_from_cltrain_" + opt + ".txt"), ours_next,
                     "onert resumed from cltrain's");
}

INSTANTIATE_TEST_SUITE_P(, OnertCheckpointBoth,
                         ::testing::Combine(::testing::Values("adam", "sgd"), ::testing::Values("cpu", "opencl")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

// Training only the last operators, a checkpoint onert wrote with every operator trained is
// refused with one line: its other weights differ from the model's.
TEST(OnertCheckpoint, neg_FrozenWeightThatDiffers) {
  auto e = Engine::from_file(kDir + "/mk_small.circle");
  Settings s = e->settings();
  s.batch_size = kBatch;
  s.backends = {"cpu"};
  s.cache_dir = "";
  s.num_trainable_ops = 2;
  e->set_settings(s);
  e->prepare();
  try {
    e->import_checkpoint(kDir + "/onert_adam_5.ckpt");
    FAIL() << "imported";
  } catch (const CheckpointError& err) {
    EXPECT_NE(std::string(err.what()).find("differs from the model's, and this session does not train it"),
              std::string::npos)
        << err.what();
  }
}

}  // namespace
}  // namespace cltrain
