// Transactional steps through the C API: a batch holding one NaN sample, mid-training, is not
// applied. The weights and the optimizer state after it are those before it, bit for bit (the
// checkpoint, which holds both and the step count, is the same file); the session stays usable,
// and the next good steps give the losses of a run that never saw the bad batch. With
// on_nonfinite SKIP the step returns OK and is counted. One test per backend (see
// api_weights_test.cc on the "opencl" names).
#include <limits>

#include "api_fixture.h"

namespace api_test {
namespace {

class NonFinite : public ::testing::TestWithParam<const char*> {};

Session prepared_with(const std::string& model, const char* backend, int32_t on_nonfinite) {
  Session s = open(model);
  cltrain_settings c = settings_of(s.get());
  c.batch_size = 4;
  c.optimizer = CLTRAIN_OPTIMIZER_ADAM;
  c.learning_rate = 0.001f;
  c.loss = CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY;
  c.backends = backend;
  c.cache_dir = CLTRAIN_TEST_CACHE_DIR;
  c.on_nonfinite = on_nonfinite;
  EXPECT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK) << cltrain_last_error(s.get());
  EXPECT_EQ(cltrain_prepare(s.get()), CLTRAIN_OK) << cltrain_last_error(s.get());
  return s;
}

std::vector<uint8_t> checkpoint_bytes(cltrain_session* s, const std::string& name) {
  const std::string path = temp_dir() + "/" + name;
  EXPECT_EQ(cltrain_export_checkpoint(s, path.c_str()), CLTRAIN_OK) << cltrain_last_error(s);
  return read_bytes(path);
}

// One step on the batch of data d at `batch`, with sample 2's element 100 set to NaN.
cltrain_status bad_step(cltrain_session* s, const Data& d, float* loss) {
  std::vector<float> x(d.x.begin(), d.x.begin() + 4 * 784);
  x[2 * 784 + 100] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(cltrain_set_input(s, x.data(), x.size()), CLTRAIN_OK);
  EXPECT_EQ(cltrain_set_expected(s, d.y.data(), 4 * 10), CLTRAIN_OK);
  return cltrain_train_step(s, loss);
}

TEST_P(NonFinite, ABadBatchLeavesWeightsAndOptimizerStateAsTheyWere) {
  const std::string model = model_file("mlp", 4);
  const char* backend = GetParam();
  const Data first(8, 784, 10, 31), bad(4, 784, 10, 32), next(12, 784, 10, 33);
  for (const int32_t mode : {CLTRAIN_NONFINITE_STOP, CLTRAIN_NONFINITE_SKIP}) {
    SCOPED_TRACE(mode == CLTRAIN_NONFINITE_STOP ? "stop" : "skip");
    Session a = prepared_with(model, backend, mode), clean = prepared_with(model, backend, mode);
    train_steps(a.get(), first, 2);
    train_steps(clean.get(), first, 2);
    const std::vector<uint8_t> before = checkpoint_bytes(a.get(), "before.ckpt");
    float loss = 0;
    const cltrain_status st = bad_step(a.get(), bad, &loss);
    const std::string line = cltrain_last_error(a.get());
    int64_t skipped = -1;
    ASSERT_EQ(cltrain_get_skipped_steps(a.get(), &skipped), CLTRAIN_OK);
    if (mode == CLTRAIN_NONFINITE_STOP) {
      EXPECT_EQ(st, CLTRAIN_ERROR);
      EXPECT_NE(line.find("the loss became NaN"), std::string::npos) << line;
      EXPECT_NE(line.find("not applied"), std::string::npos) << line;
      EXPECT_EQ(line.find('\n'), std::string::npos) << line;
      EXPECT_EQ(skipped, 0);
    } else {
      EXPECT_EQ(st, CLTRAIN_OK) << line;
      EXPECT_TRUE(std::isnan(loss)) << loss;
      EXPECT_EQ(skipped, 1);
    }
    EXPECT_EQ(checkpoint_bytes(a.get(), "after.ckpt"), before) << "weights, Adam's m, v or t changed";
    int64_t steps = 0;
    ASSERT_EQ(cltrain_get_position(a.get(), &steps, nullptr), CLTRAIN_OK);
    EXPECT_EQ(steps, 2);
    // The next good batches train as if the bad one had never come.
    expect_bitwise(train_steps(a.get(), next, 3), train_steps(clean.get(), next, 3));
    EXPECT_EQ(checkpoint_bytes(a.get(), "a.ckpt"), checkpoint_bytes(clean.get(), "clean.ckpt"));
  }
}

INSTANTIATE_TEST_SUITE_P(Api, NonFinite, ::testing::Values("cpu", "opencl"));

TEST(Api, neg_OnNonfiniteTakesStopOrSkip) {
  Session s = open(model_file("mlp", 4));
  cltrain_settings c = settings_of(s.get());
  c.on_nonfinite = 2;
  EXPECT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_INVALID);
  EXPECT_NE(std::string(cltrain_last_error(s.get())).find("on_nonfinite"), std::string::npos);
}

}  // namespace
}  // namespace api_test
