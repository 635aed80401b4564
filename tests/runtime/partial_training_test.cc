// Fine-tuning the last operators: less memory planned, and every frozen weight bitwise unchanged
// in the exported model.
#include <gtest/gtest.h>

#include <cstring>

#include "backend.h"
#include "dataset.h"
#include "model/builder.h"
#include "model/export.h"
#include "trainer.h"

namespace cltrain {
namespace {

struct Trained {
  std::unique_ptr<Session> session;
  uint64_t pool_bytes = 0;
};

Trained train_cpu(const Model& model, int32_t trainable_ops, uint64_t samples) {
  std::string why;
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(open_backend("cpu", default_backend_config(), &why));
  TrainOptions o;
  o.num_trainable_ops = trainable_ops;
  Trained t;
  t.session = std::make_unique<Session>(build_training_graph(model, o), std::move(backends));
  t.session->prepare();
  t.pool_bytes = t.session->memory().at(0).report.pool_bytes;
  if (samples > 0) {
    Dataset data = load_fashion_mnist(kFashionMnistDir, true);
    data.truncate(samples);
    TrainerConfig c;
    c.epochs = 1;
    train(*t.session, data, Dataset{}, c, nullptr);
  }
  return t;
}

TEST(PartialTraining, LastTwoOpsOfMnistKaggle) {
  const Model original = load_model_from_memory(write_model(make_named_model("mnist-kaggle", 32), "circle"), "mk");
  const Trained full = train_cpu(original, -1, 0);
  Trained last2 = train_cpu(original, 2, 64);
  EXPECT_LT(last2.pool_bytes, full.pool_bytes);

  std::map<int32_t, std::vector<float>> weights;
  for (int32_t w : last2.session->graph().weights) weights[w] = last2.session->read_persistent(w);
  ASSERT_EQ(weights.size(), 2u);  // the last FullyConnected's weights and bias (Softmax has none)
  const Model exported = load_model_from_memory(export_with_weights(original, weights), "exported");
  ASSERT_EQ(exported.tensors.size(), original.tensors.size());
  int frozen = 0, changed = 0;
  for (size_t t = 0; t < original.tensors.size(); ++t) {
    if (!original.tensors[t].is_constant()) continue;
    if (weights.count(static_cast<int32_t>(t))) {
      changed += exported.tensors[t].data != original.tensors[t].data;
    } else {
      ++frozen;
      EXPECT_EQ(exported.tensors[t].data, original.tensors[t].data) << original.tensors[t].name;
    }
  }
  EXPECT_GE(frozen, 10);  // 4 convolutions and the first FullyConnected, weights and biases
  EXPECT_EQ(changed, 2);
}

}  // namespace
}  // namespace cltrain

namespace cltrain {
namespace {

// UP_1_2_PART trains output rows [0, O/2) of the weight and bias; the other rows stay bitwise.
TEST(PartialTraining, UpperHalfLeavesTheLowerRowsAlone) {
  const Model model = make_named_model("mlp", 32);
  std::string why;
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(open_backend("cpu", default_backend_config(), &why));
  TrainOptions o;
  o.op_ranks = {kRankUpperHalf, kRankNone, kRankNone};
  Session s(build_training_graph(model, o), std::move(backends));
  s.prepare();
  Dataset data = load_fashion_mnist(kFashionMnistDir, true);
  data.truncate(64);
  TrainerConfig c;
  c.epochs = 1;
  train(s, data, Dataset{}, c, nullptr);
  for (int32_t w : s.graph().weights) {
    const std::vector<float> now = s.read_persistent(w);
    const Tensor& t = model.tensors[static_cast<size_t>(w)];
    std::vector<float> before(now.size());
    std::memcpy(before.data(), t.data.data(), t.data.size());
    const size_t half = now.size() / 2;  // 128 rows: the upper half is the first 64
    size_t changed_upper = 0;
    for (size_t i = 0; i < half; ++i) changed_upper += now[i] != before[i];
    for (size_t i = half; i < now.size(); ++i) ASSERT_EQ(now[i], before[i]) << t.name << " element " << i;
    EXPECT_GT(changed_upper, half / 2) << t.name;
  }
  EXPECT_EQ(s.graph().weights.size(), 2u);
}

}  // namespace
}  // namespace cltrain
