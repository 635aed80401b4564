// Model-level tests: mlp trained on the first 1,000 Fashion-MNIST images gives the same per-epoch
// losses on every backend arrangement.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>

#include "backend.h"
#include "dataset.h"
#include "model/builder.h"
#include "session.h"
#include "trainer.h"

namespace cltrain {
namespace {

struct Run {
  std::vector<double> losses;
  std::vector<std::string> placement;
};

// Trains a builder model for `epochs` epochs at batch 32 (Adam, lr 0.001, CCE) on the first
// `samples` Fashion-MNIST images, on OpenCL then the CPU, or on the CPU alone. Returns nothing if
// the OpenCL plugin is not available here.
std::optional<Run> train_model(const std::string& name, int epochs, uint64_t samples, bool with_opencl,
                               std::string* why) {
  Model model = make_named_model(name, 32);
  std::vector<std::unique_ptr<Backend>> backends;
  if (with_opencl) {
    auto b = open_plugin_file(CLTRAIN_OPENCL_PLUGIN, default_backend_config(), why);
    if (!b) return std::nullopt;
    backends.push_back(std::move(b));
  }
  backends.push_back(open_backend("cpu", default_backend_config(), why));
  Session session(build_training_graph(model, TrainOptions{}), std::move(backends));
  session.prepare();
  Dataset data = load_fashion_mnist(kFashionMnistDir, true);
  data.truncate(samples);
  TrainerConfig config;
  config.epochs = epochs;
  Run run;
  for (const auto& e : train(session, data, Dataset{}, config, nullptr)) run.losses.push_back(e.loss);
  run.placement = session.model_op_placement();
  return run;
}

std::optional<Run> train_mlp(bool with_opencl, std::string* why) {
  return train_model("mlp", 3, 1000, with_opencl, why);
}

void expect_same_losses(const Run& a, const Run& b) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_NEAR(a.losses[i], b.losses[i], 1e-4 * std::abs(b.losses[i])) << "epoch " << i + 1;
}

TEST(TrainMlp, CpuLossFalls) {
  std::string why;
  auto cpu = train_mlp(false, &why);
  ASSERT_TRUE(cpu) << why;
  ASSERT_EQ(cpu->losses.size(), 3u);
  EXPECT_LT(cpu->losses[2], cpu->losses[0]);
  EXPECT_LT(cpu->losses[0], 2.3);
}

TEST(TrainMlp, OpenclMatchesCpu) {
  std::string why;
  auto cpu = train_mlp(false, &why);
  ASSERT_TRUE(cpu) << why;
  auto cl = train_mlp(true, &why);
  if (!cl && why.find("not available") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_TRUE(cl) << why;
  for (const auto& p : cl->placement) EXPECT_EQ(p, "opencl");
  expect_same_losses(*cl, *cpu);
}

TEST(TrainMlp, FullyConnectedForcedOffOpencl) {
  std::string why;
  auto cpu = train_mlp(false, &why);
  ASSERT_TRUE(cpu) << why;
  setenv("CLTRAIN_OPENCL_OP_FILTER", "FullyConnected", 1);
  auto mixed = train_mlp(true, &why);
  unsetenv("CLTRAIN_OPENCL_OP_FILTER");
  if (!mixed && why.find("not available") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_TRUE(mixed) << why;
  ASSERT_EQ(mixed->placement.size(), 3u);
  EXPECT_EQ(mixed->placement[0], "cpu");
  EXPECT_EQ(mixed->placement[1], "cpu");
  EXPECT_EQ(mixed->placement[2], "opencl");  // Softmax stays on OpenCL: tensors cross backends
  expect_same_losses(*mixed, *cpu);
}

// A residual Add and a tensor read by two ops: back-prop accumulation on both backends.
// Trains `name` on the CPU (its loss must fall) and on OpenCL with every operator there; the
// per-epoch losses must agree.
void expect_opencl_matches_cpu(const std::string& name, int epochs, uint64_t samples) {
  std::string why;
  auto cpu = train_model(name, epochs, samples, false, &why);
  ASSERT_TRUE(cpu) << why;
  EXPECT_LT(cpu->losses.back(), cpu->losses.front());
  auto cl = train_model(name, epochs, samples, true, &why);
  if (!cl && why.find("not available") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_TRUE(cl) << why;
  for (size_t i = 0; i < cl->placement.size(); ++i) EXPECT_EQ(cl->placement[i], "opencl") << "operator " << i;
  expect_same_losses(*cl, *cpu);
}

TEST(TrainBranched, OpenclMatchesCpu) { expect_opencl_matches_cpu("branched", 2, 512); }

// Max pools from their argmax (2x2/2: each window scatters), the ReLU derivatives that pools and
// convs apply for their producers, conv dx in place over x: as the CPU computes them.
TEST(TrainMnistKaggle, OpenclMatchesCpu) { expect_opencl_matches_cpu("mnist-kaggle", 2, 64); }

// A Pad folded into its depthwise conv (SAME), the conv's ReLU6 derivative applied by the
// depthwise backward in place, max pool 3x3/1 from its argmax (overlapping windows gather).
TEST(TrainCnnTiny, OpenclMatchesCpu) { expect_opencl_matches_cpu("cnn-tiny", 2, 256); }

}  // namespace
}  // namespace cltrain
