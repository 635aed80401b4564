// Model-level tests: mlp trained on the first 1,000 Fashion-MNIST images gives the same per-epoch
// losses on every backend arrangement.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "backend.h"
#include "dataset.h"
#include "memory_plan.h"
#include "model/builder.h"
#include "session.h"
#include "test_util.h"
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
// OpenCL then the CPU, or the CPU alone; nothing if the OpenCL plugin cannot run here.
std::optional<std::vector<std::unique_ptr<Backend>>> open_backends(bool with_opencl, std::string* why) {
  std::vector<std::unique_ptr<Backend>> backends;
  if (with_opencl) {
    auto b = open_plugin_file(CLTRAIN_OPENCL_PLUGIN, default_backend_config(), why);
    if (!b) return std::nullopt;
    backends.push_back(std::move(b));
  }
  backends.push_back(open_backend("cpu", default_backend_config(), why));
  return backends;
}

std::optional<Run> train_model(const std::string& name, int epochs, uint64_t samples, bool with_opencl,
                               std::string* why) {
  Model model = make_named_model(name, 32);
  auto backends = open_backends(with_opencl, why);
  if (!backends) return std::nullopt;
  Session session(build_training_graph(model, TrainOptions{}), std::move(*backends));
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

namespace cltrain {
namespace {

// Five steps of the every-op model (tests/model/test_util.h: every model op of the descriptors
// once, a new element-wise op included without an edit here) on fixed data, on OpenCL then the
// CPU, or on the CPU alone: the per-step losses, and where each operator ran.
std::optional<Run> train_every_op(bool with_opencl, std::string* why) {
  auto backends = open_backends(with_opencl, why);
  if (!backends) return std::nullopt;
  Session session(build_training_graph(test::every_op_model(), TrainOptions{}), std::move(*backends));
  session.prepare();
  std::vector<float> input(session.input_elements()), expected(session.prediction_elements(), 0.0f);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(static_cast<int>(i * 37 % 19) - 9) / 9.0f;
  const size_t classes = expected.size() / static_cast<size_t>(session.batch());
  for (size_t n = 0; n < static_cast<size_t>(session.batch()); ++n) expected[n * classes + n % classes] = 1.0f;
  Run run;
  for (int64_t it = 1; it <= 5; ++it) run.losses.push_back(session.train_step(input.data(), expected.data(), nullptr));
  run.placement = session.model_op_placement();
  return run;
}

// Five steps of the embedding model (test_util.h: int32 ids through GATHER) on fixed ids, the
// losses and the table after them; ids 9 and 10 are never read.
struct EmbeddingRun {
  Run run;
  std::vector<float> table_before, table_after;
  bool has_squares = false;  // the graph has Adam's sum of squared rows for the table
};

std::optional<EmbeddingRun> train_embedding(bool with_opencl, int32_t optimizer, std::string* why) {
  auto backends = open_backends(with_opencl, why);
  if (!backends) return std::nullopt;
  TrainOptions options;
  options.optimizer = optimizer;
  options.learning_rate = 0.05f;
  TrainingGraph graph = build_training_graph(test::embedding_model(), options);
  int32_t table = -1;
  EmbeddingRun r;
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const std::string name = graph.name_of(static_cast<int32_t>(t));
    if (name == "embedding/table") table = static_cast<int32_t>(t);
    if (name == "gradsq/embedding/table") r.has_squares = true;
  }
  if (table < 0) {
    *why = "no embedding/table in the graph";
    return std::nullopt;
  }
  EXPECT_EQ(graph.tensors[static_cast<size_t>(graph.input)].dtype, CLTRAIN_INT32);
  Session session(std::move(graph), std::move(*backends));
  session.prepare();
  const std::vector<int32_t> ids = {3, 1, 4, 1, 5, 0, 2, 6, 5, 3};  // 1, 3, 5 twice; 7 and 8 once below
  std::vector<float> input(ids.size()), expected(session.prediction_elements(), 0.0f);
  expected[0] = expected[3 + 2] = 1.0f;
  r.table_before = session.read_persistent(table);
  for (int64_t it = 1; it <= 5; ++it) {
    std::vector<int32_t> step_ids = ids;
    step_ids[static_cast<size_t>(it) % ids.size()] = it % 2 ? 7 : 8;
    std::memcpy(input.data(), step_ids.data(), step_ids.size() * sizeof(int32_t));  // the ids' bits
    r.run.losses.push_back(session.train_step(input.data(), expected.data(), nullptr));
  }
  r.table_after = session.read_persistent(table);
  r.run.placement = session.model_op_placement();
  return r;
}

// Token ids through GATHER train on OpenCL as on the CPU, bit for bit on POCL; the rows no id
// reads keep their bits (SGD: a zero gradient; Adam: zero moments), the others move; Adam's v
// takes the sum of squared rows (as Keras), SGD needs none.
TEST(TrainEmbedding, OpenclMatchesCpuAndUnreadRowsStay) {
  for (int32_t opt : {CLTRAIN_OP_UPDATE_SGD, CLTRAIN_OP_UPDATE_ADAM}) {
    SCOPED_TRACE(opt == CLTRAIN_OP_UPDATE_SGD ? "sgd" : "adam");
    std::string why;
    auto cpu = train_embedding(false, opt, &why);
    ASSERT_TRUE(cpu) << why;
    auto cl = train_embedding(true, opt, &why);
    ASSERT_TRUE(cl) << why;
    EXPECT_EQ(cpu->has_squares, opt == CLTRAIN_OP_UPDATE_ADAM);
    for (size_t i = 0; i < cl->run.placement.size(); ++i) EXPECT_EQ(cl->run.placement[i], "opencl") << "operator " << i;
    EXPECT_LT(cpu->run.losses.back(), cpu->run.losses.front());
    for (size_t i = 0; i < cl->run.losses.size(); ++i)
      EXPECT_EQ(cl->run.losses[i], cpu->run.losses[i]) << "step " << i + 1;
    EXPECT_TRUE(cl->table_after == cpu->table_after);
    const size_t width = 4;
    for (size_t row = 0; row < 11; ++row) {
      bool same = true;
      for (size_t j = 0; j < width; ++j)
        same = same && cpu->table_after[row * width + j] == cpu->table_before[row * width + j];
      EXPECT_EQ(same, row >= 9) << "row " << row;
    }
  }
}

// Every op trained together, each on OpenCL, gives the CPU's losses: bit for bit on POCL.
TEST(TrainEveryOp, OpenclMatchesCpu) {
  std::string why;
  auto cpu = train_every_op(false, &why);
  ASSERT_TRUE(cpu) << why;
  auto cl = train_every_op(true, &why);
  if (!cl && why.find("not available") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_TRUE(cl) << why;
  for (size_t i = 0; i < cl->placement.size(); ++i) EXPECT_EQ(cl->placement[i], "opencl") << "operator " << i;
  ASSERT_EQ(cl->losses.size(), cpu->losses.size());
  EXPECT_LT(cpu->losses.back(), cpu->losses.front());
  for (size_t i = 0; i < cl->losses.size(); ++i) EXPECT_EQ(cl->losses[i], cpu->losses[i]) << "step " << i + 1;
}

}  // namespace
}  // namespace cltrain

namespace cltrain {
namespace {

// CLTRAIN_OPENCL_POISON=1 fills a fresh pool with NaNs (as a GPU's fresh memory may hold
// anything; POCL's reads as zeros): a tensor no step has written yet reads as NaN, and the
// trainings still match the CPU bitwise, so no kernel reads bytes nobody wrote (a NaN would reach
// the loss: NaN times a zero weight is NaN).
class Poisoned : public ::testing::Test {
 protected:
  void SetUp() override { setenv("CLTRAIN_OPENCL_POISON", "1", 1); }
  void TearDown() override { unsetenv("CLTRAIN_OPENCL_POISON"); }
};

TEST_F(Poisoned, FreshActivationReadsAsNaN) {
  std::string why;
  auto backends = open_backends(true, &why);
  ASSERT_TRUE(backends) << why;
  Session session(build_training_graph(make_named_model("mlp", 2), TrainOptions{}), std::move(*backends));
  session.prepare();
  ASSERT_EQ(session.backend_name(0), "opencl");
  const auto& tensors = session.backend_tensors()[0];
  const std::vector<int64_t> offsets = session.backend(0).plan_offsets(static_cast<int32_t>(tensors.size()));
  int32_t activation = -1;
  for (size_t t = 0; t < tensors.size(); ++t)
    if (tensors[t].role == CLTRAIN_ROLE_NON_CONST && !tensors[t].data && t < offsets.size() && offsets[t] >= 0)
      activation = static_cast<int32_t>(t);
  ASSERT_GE(activation, 0);
  std::vector<float> v(tensor_elements(tensors[static_cast<size_t>(activation)]));
  session.backend(0).read(activation, v.data(), v.size() * sizeof(float));
  EXPECT_TRUE(std::isnan(v[0])) << v[0];
}

TEST_F(Poisoned, MlpMatchesCpu) {
  std::string why;
  auto cpu = train_mlp(false, &why);
  ASSERT_TRUE(cpu) << why;
  auto cl = train_mlp(true, &why);
  ASSERT_TRUE(cl) << why;
  expect_same_losses(*cl, *cpu);
}
TEST_F(Poisoned, BranchedMatchesCpu) { expect_opencl_matches_cpu("branched", 2, 512); }
TEST_F(Poisoned, CnnTinyMatchesCpu) { expect_opencl_matches_cpu("cnn-tiny", 2, 256); }
TEST_F(Poisoned, MnistKaggleMatchesCpu) { expect_opencl_matches_cpu("mnist-kaggle", 2, 64); }
// The GPU path: CLBlast's GEMM kernels and their temporary buffers.
TEST_F(Poisoned, CnnTinyOnClblastMatchesCpu) {
  setenv("CLTRAIN_OPENCL_GEMM", "clblast", 1);
  expect_opencl_matches_cpu("cnn-tiny", 2, 256);
  unsetenv("CLTRAIN_OPENCL_GEMM");
}

}  // namespace
}  // namespace cltrain
