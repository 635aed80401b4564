// The C API's weights as a federated client uses them: the weights training updates, by name,
// and an optimizer that starts afresh (cltrain.flower's fit).
#include <string>
#include <vector>

#include "api_fixture.h"

namespace {

using namespace api_test;

// The weights training updates, by name: all four of the mlp's, or the last FullyConnected's two
// when only the last two operators (it and the softmax) train; an index out of range is refused.
TEST(Api, TrainedWeightNamesFollowTheTrainableOperators) {
  const std::string model = model_file("mlp", 4);
  auto names_of = [](cltrain_session* s) {
    int32_t n = -1;
    EXPECT_EQ(cltrain_num_trained_weights(s, &n), CLTRAIN_OK) << cltrain_last_error(s);
    std::vector<std::string> names;
    for (int32_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      EXPECT_EQ(cltrain_trained_weight_name(s, i, &name), CLTRAIN_OK) << cltrain_last_error(s);
      names.emplace_back(name ? name : "");
    }
    const char* name = nullptr;
    EXPECT_EQ(cltrain_trained_weight_name(s, n, &name), CLTRAIN_INVALID);
    return names;
  };
  Session all = prepared(model, "cpu", 4);
  const std::vector<std::string> names = names_of(all.get());
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], "fc1/weights");
  for (const std::string& n : names) {
    uint64_t count = 0;
    EXPECT_EQ(cltrain_weight_elements(all.get(), n.c_str(), &count), CLTRAIN_OK) << n;
  }
  Session last = open(model);
  cltrain_settings c = settings_of(last.get());
  c.batch_size = 4;
  c.backends = "cpu";
  c.num_trainable_ops = 2;
  ASSERT_EQ(cltrain_set_settings(last.get(), &c), CLTRAIN_OK);
  ASSERT_EQ(cltrain_prepare(last.get()), CLTRAIN_OK) << cltrain_last_error(last.get());
  const std::vector<std::string> tail = names_of(last.get());
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0], names[2]);
  EXPECT_EQ(tail[1], names[3]);
  Session unprepared = open(model);
  int32_t n = 0;
  EXPECT_EQ(cltrain_num_trained_weights(unprepared.get(), &n), CLTRAIN_INVALID);
}

// After reset_optimizer a session trains as a new session started from its weights: the same
// losses and weights, bit for bit, and its position starts again at 0 (on both backends).
// One test per backend, named after it: .ci/sanitize's leak pass leaves out the ones with
// "opencl" in their name (LeakSanitizer's stop-the-world crashes now and then with POCL's threads).
class ResetOptimizer : public ::testing::TestWithParam<const char*> {};

TEST_P(ResetOptimizer, TrainsAsANewSession) {
  const std::string model = model_file("mlp", 4);
  const Data first(12, 784, 10, 21), next(8, 784, 10, 22);
  const char* backend = GetParam();
  Session a = prepared(model, backend, 4);
  train_steps(a.get(), first, 3);
  ASSERT_EQ(cltrain_set_epochs_done(a.get(), 1), CLTRAIN_OK);
  ASSERT_EQ(cltrain_reset_optimizer(a.get()), CLTRAIN_OK) << cltrain_last_error(a.get());
  int64_t steps = -1;
  int32_t epochs = -1;
  ASSERT_EQ(cltrain_get_position(a.get(), &steps, &epochs), CLTRAIN_OK);
  EXPECT_EQ(steps, 0);
  EXPECT_EQ(epochs, 0);
  Session b = prepared(model, backend, 4);
  int32_t n = 0;
  ASSERT_EQ(cltrain_num_trained_weights(a.get(), &n), CLTRAIN_OK);
  std::vector<std::string> names;
  for (int32_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    ASSERT_EQ(cltrain_trained_weight_name(a.get(), i, &name), CLTRAIN_OK);
    names.emplace_back(name);
  }
  auto weight = [](cltrain_session* s, const std::string& name) {
    uint64_t count = 0;
    EXPECT_EQ(cltrain_weight_elements(s, name.c_str(), &count), CLTRAIN_OK);
    std::vector<float> w(count);
    EXPECT_EQ(cltrain_get_weight(s, name.c_str(), w.data(), count), CLTRAIN_OK);
    return w;
  };
  for (const std::string& name : names) {
    const std::vector<float> w = weight(a.get(), name);
    ASSERT_EQ(cltrain_set_weight(b.get(), name.c_str(), w.data(), w.size()), CLTRAIN_OK);
  }
  expect_bitwise(train_steps(a.get(), next, 2), train_steps(b.get(), next, 2));
  for (const std::string& name : names) expect_bitwise(weight(a.get(), name), weight(b.get(), name));
}

INSTANTIATE_TEST_SUITE_P(Api, ResetOptimizer, ::testing::Values("cpu", "opencl"));

}  // namespace
