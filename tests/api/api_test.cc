// The C API (cltrain.h) as an application sees it: linked against libcltrain.so, nothing else of
// the runtime. Per-step losses equal the CLI's bitwise; misuse gives a status and a message.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api_fixture.h"

namespace {

using namespace api_test;

// mnist-kaggle, 20 steps of Adam at batch 8 through the C API and through the CLI (which trains
// the same batches in order with --no-shuffle, logging each step's loss): the same losses, bit for
// bit, on each backend.
class ApiMatchesCli : public ::testing::TestWithParam<const char*> {};

TEST_P(ApiMatchesCli, MnistKaggle20AdamSteps) {
  const int steps = 20, batch = 8;
  const std::string model = model_file("mnist-kaggle", batch);
  Session s = prepared(model, GetParam(), batch);
  ASSERT_EQ(backend_of(s.get()), GetParam()) << "backend " << GetParam() << " did not open";
  const Data d(static_cast<uint64_t>(steps * batch), 784, 10, 7);
  const std::vector<float> api = train_steps(s.get(), d, steps);

  const std::string dir = temp_dir(), tag = std::string(GetParam());
  write_floats(dir + "/x_" + tag + ".raw", d.x);
  write_floats(dir + "/y_" + tag + ".raw", d.y);
  const std::string log = dir + "/steps_" + tag + ".txt";
  run("CLTRAIN_STEP_LOG=" + log + " " + CLTRAIN_CLI + " " + model +
      " --batch_size 8 --epoch 1 --optimizer 2 --learning_rate 0.001 --loss 2 --no-shuffle --no-progress"
      " --backends " +
      tag + " --cache-dir " + CLTRAIN_TEST_CACHE_DIR + " --load_input:raw " + dir + "/x_" + tag +
      ".raw --load_expected:raw " + dir + "/y_" + tag + ".raw 2>&1");
  std::vector<float> cli;
  std::ifstream f(log);
  int epoch;
  unsigned long long step;
  double loss;
  while (f >> epoch >> step >> loss) cli.push_back(static_cast<float>(loss));  // %.9g: exact for a float
  expect_bitwise(api, cli);
}

INSTANTIATE_TEST_SUITE_P(Backends, ApiMatchesCli, ::testing::Values("cpu", "opencl"));

TEST(Api, VersionNamesTheApi) { EXPECT_NE(std::strstr(cltrain_version(), "API 5"), nullptr); }

// The caller's buffer may go right after the call: the session keeps its own copy.
TEST(Api, ModelBufferMayBeFreedAfterCreate) {
  std::vector<uint8_t> bytes = read_bytes(model_file("mlp", 4));
  cltrain_session* raw = nullptr;
  ASSERT_EQ(cltrain_session_create_from_buffer(bytes.data(), bytes.size(), "mlp buffer", &raw, nullptr, 0), CLTRAIN_OK);
  Session s(raw);
  std::fill(bytes.begin(), bytes.end(), 0xAB);
  bytes.clear();
  bytes.shrink_to_fit();
  ASSERT_EQ(cltrain_prepare(s.get()), CLTRAIN_OK) << cltrain_last_error(s.get());
  const Data d(4, 784, 10, 1);
  const std::vector<float> losses = train_steps(s.get(), d, 1);
  EXPECT_TRUE(std::isfinite(losses.at(0)));
}

// set_input keeps no pointer: the arrays may be temporaries gone before the step.
TEST(Api, InputsAreCopiedAtTheCall) {
  Session s = prepared(model_file("mlp", 4), "cpu", 4);
  const Data d(4, 784, 10, 3);
  {
    std::vector<float> x = d.x, y = d.y;
    ASSERT_EQ(cltrain_set_input(s.get(), x.data(), x.size()), CLTRAIN_OK);
    ASSERT_EQ(cltrain_set_expected(s.get(), y.data(), y.size()), CLTRAIN_OK);
    std::fill(x.begin(), x.end(), 1e30f);  // what the step would see if it read the caller's array
    std::fill(y.begin(), y.end(), -1e30f);
  }
  float loss = 0;
  ASSERT_EQ(cltrain_evaluate(s.get(), &loss, nullptr, 0), CLTRAIN_OK);
  Session t = prepared(model_file("mlp", 4), "cpu", 4);
  ASSERT_EQ(cltrain_set_input(t.get(), d.x.data(), d.x.size()), CLTRAIN_OK);
  ASSERT_EQ(cltrain_set_expected(t.get(), d.y.data(), d.y.size()), CLTRAIN_OK);
  float want = 0;
  ASSERT_EQ(cltrain_evaluate(t.get(), &want, nullptr, 0), CLTRAIN_OK);
  EXPECT_EQ(loss, want);
}

// A circle+ export carries the settings; a session on it reads them back.
TEST(Api, SettingsComeFromACirclePlusModel) {
  Session s = open(model_file("mlp", 4));
  cltrain_settings c = settings_of(s.get());
  c.batch_size = 4;
  c.optimizer = 1;
  c.learning_rate = 0.0125f;
  c.loss = 1;
  c.loss_reduction = 2;
  c.epochs = 7;
  c.num_trainable_ops = 1;
  c.backends = "cpu";
  ASSERT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK);
  ASSERT_EQ(cltrain_prepare(s.get()), CLTRAIN_OK) << cltrain_last_error(s.get());
  const std::string path = temp_dir() + "/plus.circle";
  ASSERT_EQ(cltrain_export_circleplus(s.get(), path.c_str()), CLTRAIN_OK) << cltrain_last_error(s.get());

  Session r = open(path);
  const cltrain_settings got = settings_of(r.get());
  EXPECT_EQ(got.batch_size, 4);
  EXPECT_EQ(got.optimizer, 1);
  EXPECT_EQ(got.learning_rate, 0.0125f);
  EXPECT_EQ(got.loss, 1);
  EXPECT_EQ(got.loss_reduction, 2);
  EXPECT_EQ(got.epochs, 7);
  EXPECT_EQ(got.num_trainable_ops, -2);  // the operators the model lists
}

// A caller built against an older, shorter cltrain_settings: the members it lacks keep their values.
TEST(Api, ShorterSettingsStructKeepsTheRest) {
  Session s = open(model_file("mlp", 4));
  cltrain_settings c = settings_of(s.get());
  c.cache_dir = "";
  ASSERT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK);
  cltrain_settings old = settings_of(s.get());
  old.struct_size = static_cast<uint32_t>(offsetof(cltrain_settings, epochs));
  old.learning_rate = 0.5f;
  old.epochs = 99;  // beyond the struct the caller knows: ignored
  ASSERT_EQ(cltrain_set_settings(s.get(), &old), CLTRAIN_OK);
  const cltrain_settings got = settings_of(s.get());
  EXPECT_EQ(got.learning_rate, 0.5f);
  EXPECT_EQ(got.epochs, c.epochs);
  ASSERT_NE(got.cache_dir, nullptr);
  EXPECT_STREQ(got.cache_dir, "");
}

TEST(Api, WeightsReadAndWrittenByName) {
  Session s = prepared(model_file("mlp", 4), "cpu", 4);
  // The mlp's first FullyConnected weights: find a constant by trying the names the builder gives.
  const char* name = "fc1/weights";
  uint64_t n = 0;
  ASSERT_EQ(cltrain_weight_elements(s.get(), name, &n), CLTRAIN_OK) << cltrain_last_error(s.get());
  ASSERT_GT(n, 0u);
  std::vector<float> w(n, 0.0f);
  for (uint64_t i = 0; i < n; ++i) w[i] = 0.001f * static_cast<float>(i % 7);
  ASSERT_EQ(cltrain_set_weight(s.get(), name, w.data(), n), CLTRAIN_OK) << cltrain_last_error(s.get());
  std::vector<float> back(n);
  ASSERT_EQ(cltrain_get_weight(s.get(), name, back.data(), n), CLTRAIN_OK);
  EXPECT_EQ(back, w);
  train_steps(s.get(), Data(4, 784, 10, 2), 1);
  ASSERT_EQ(cltrain_get_weight(s.get(), name, back.data(), n), CLTRAIN_OK);
  EXPECT_NE(back, w) << "a step left the weight as it was";
}

// A checkpoint after 3 steps, imported into a fresh session: its position and the next step's
// loss are those of the session that went on.
TEST(Api, CheckpointResumesBitwise) {
  const std::string model = model_file("mlp", 4);
  const Data d(16, 784, 10, 5);
  Session a = prepared(model, "cpu", 4);
  train_steps(a.get(), d, 3);
  const std::string ckpt = temp_dir() + "/api.ckpt";
  ASSERT_EQ(cltrain_set_epochs_done(a.get(), 2), CLTRAIN_OK);
  ASSERT_EQ(cltrain_export_checkpoint(a.get(), ckpt.c_str()), CLTRAIN_OK) << cltrain_last_error(a.get());
  Session b = prepared(model, "cpu", 4);
  ASSERT_EQ(cltrain_import_checkpoint(b.get(), ckpt.c_str()), CLTRAIN_OK) << cltrain_last_error(b.get());
  int64_t steps = 0;
  int32_t epochs = 0;
  ASSERT_EQ(cltrain_get_position(b.get(), &steps, &epochs), CLTRAIN_OK);
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(epochs, 2);
  const Data next(4, 784, 10, 6);
  expect_bitwise(train_steps(b.get(), next, 1), train_steps(a.get(), next, 1));
}

// predict gives the outputs a train step reports for the same batch before it updates.
TEST(Api, PredictGivesTheStepsOutputs) {
  Session s = prepared(model_file("mlp", 4), "cpu", 4);
  const Data d(4, 784, 10, 8);
  std::vector<float> predicted(40), stepped(40);
  ASSERT_EQ(cltrain_predict(s.get(), d.x.data(), d.x.size(), predicted.data(), predicted.size()), CLTRAIN_OK)
      << cltrain_last_error(s.get());
  ASSERT_EQ(cltrain_set_input(s.get(), d.x.data(), d.x.size()), CLTRAIN_OK);
  ASSERT_EQ(cltrain_set_expected(s.get(), d.y.data(), d.y.size()), CLTRAIN_OK);
  float loss = 0;
  ASSERT_EQ(cltrain_train_step_outputs(s.get(), &loss, stepped.data(), stepped.size()), CLTRAIN_OK);
  EXPECT_EQ(predicted, stepped);
  float sum = 0;
  for (int i = 0; i < 10; ++i) sum += predicted[static_cast<size_t>(i)];
  EXPECT_NEAR(sum, 1.0f, 1e-5f);  // softmax
}

// A budget 5% under the plan: prepare recomputes to fit and says so; one below the least is
// CLTRAIN_OUT_OF_MEMORY with the least in the last error.
TEST(Api, MemoryBudgetFitsAndReportsTheRepeats) {
  Session free_run = prepared(model_file("mnist-kaggle", 4), "cpu", 4);
  cltrain_backend_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(cltrain_get_backend(free_run.get(), 0, &info), CLTRAIN_OK);
  cltrain_budget_info none{};
  none.struct_size = sizeof none;
  ASSERT_EQ(cltrain_get_budget(free_run.get(), &none), CLTRAIN_OK);
  EXPECT_EQ(none.budget, 0u);
  EXPECT_EQ(none.recomputed_steps, 0);
  for (const uint64_t budget : {info.pool_bytes / 100 * 99, uint64_t{1000}}) {
    Session s = open(model_file("mnist-kaggle", 4));
    cltrain_settings c = settings_of(s.get());
    c.batch_size = 4;
    c.backends = "cpu";
    c.memory_budget = budget;
    ASSERT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK) << cltrain_last_error(s.get());
    if (budget == 1000) {
      EXPECT_EQ(cltrain_prepare(s.get()), CLTRAIN_OUT_OF_MEMORY);
      EXPECT_NE(std::strstr(cltrain_last_error(s.get()), "below the least this model trains in"), nullptr)
          << cltrain_last_error(s.get());
      continue;
    }
    ASSERT_EQ(cltrain_prepare(s.get()), CLTRAIN_OK) << cltrain_last_error(s.get());
    cltrain_budget_info b{};
    b.struct_size = sizeof b;
    ASSERT_EQ(cltrain_get_budget(s.get(), &b), CLTRAIN_OK);
    EXPECT_EQ(b.budget, budget);
    EXPECT_EQ(b.unbudgeted_pool, info.pool_bytes);
    EXPECT_GT(b.recomputed_steps, 0);
    EXPECT_GT(b.extra_flops, 0u);
    cltrain_backend_info tight{};
    tight.struct_size = sizeof tight;
    ASSERT_EQ(cltrain_get_backend(s.get(), 0, &tight), CLTRAIN_OK);
    EXPECT_LE(tight.pool_bytes, budget);
  }
}

TEST(Api, MemoryReportAndPlacement) {
  Session s = prepared(model_file("mlp", 4), "opencl", 4);
  int32_t backends = 0;
  ASSERT_EQ(cltrain_num_backends(s.get(), &backends), CLTRAIN_OK);
  ASSERT_GE(backends, 1);
  cltrain_backend_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(cltrain_get_backend(s.get(), 0, &info), CLTRAIN_OK);
  EXPECT_STREQ(info.name, "opencl");
  EXPECT_GT(std::strlen(info.device), 0u);
  EXPECT_GT(info.lower_bound, 0u);
  EXPECT_GE(info.pool_bytes, info.lower_bound);
  EXPECT_GT(info.role_peak[1], 0u);  // trainable weights
  int32_t ops = 0;
  ASSERT_EQ(cltrain_num_operators(s.get(), &ops), CLTRAIN_OK);
  ASSERT_GT(ops, 0);
  for (int32_t op = 0; op < ops; ++op) {
    const char* b = nullptr;
    ASSERT_EQ(cltrain_operator_backend(s.get(), op, &b), CLTRAIN_OK);
    EXPECT_STREQ(b, "opencl") << "op " << op;
  }
}

// Sessions in different threads at once train as they do one after another.
TEST(Api, SessionsInTwoThreads) {
  const std::string model = model_file("mlp", 4);
  const Data d(20, 784, 10, 9);
  std::vector<float> alone[2];
  for (int t = 0; t < 2; ++t) {
    Session s = prepared(model, t ? "opencl" : "cpu", 4);
    alone[t] = train_steps(s.get(), d, 5);
  }
  std::vector<float> together[2];
  std::thread threads[2];
  for (int t = 0; t < 2; ++t)
    threads[t] = std::thread([&, t] {
      Session s = prepared(model, t ? "opencl" : "cpu", 4);
      together[t] = train_steps(s.get(), d, 5);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 2; ++t) expect_bitwise(together[t], alone[t]);
}

// ---- misuse: each a status and a message, never a crash ----

TEST(Api, neg_NullSession) {
  float loss;
  cltrain_settings c{};
  c.struct_size = sizeof c;
  EXPECT_EQ(cltrain_prepare(nullptr), CLTRAIN_INVALID);
  EXPECT_EQ(cltrain_get_settings(nullptr, &c), CLTRAIN_INVALID);
  EXPECT_EQ(cltrain_set_input(nullptr, &loss, 1), CLTRAIN_INVALID);
  EXPECT_EQ(cltrain_train_step(nullptr, &loss), CLTRAIN_INVALID);
  EXPECT_EQ(cltrain_export_circle(nullptr, "x.circle"), CLTRAIN_INVALID);
  EXPECT_EQ(cltrain_warning(nullptr, 0), nullptr);
  EXPECT_EQ(cltrain_rewrite(nullptr, 0), nullptr);
  EXPECT_NE(std::strstr(cltrain_last_error(nullptr), "NULL"), nullptr);
  cltrain_session_destroy(nullptr);
  char err[256];
  EXPECT_EQ(cltrain_session_create("x.circle", nullptr, err, sizeof err), CLTRAIN_INVALID);
  EXPECT_NE(std::strstr(err, "out is NULL"), nullptr) << err;
  cltrain_session* s = reinterpret_cast<cltrain_session*>(1);
  EXPECT_EQ(cltrain_session_create(nullptr, &s, err, sizeof err), CLTRAIN_INVALID);
  EXPECT_EQ(s, nullptr);
}

void expect_failure(cltrain_session* s, cltrain_status got, cltrain_status want, const char* words) {
  EXPECT_EQ(got, want) << cltrain_last_error(s);
  const std::string line = cltrain_last_error(s);
  EXPECT_NE(line.find(words), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
}

// storage: 0 float32, 1 fp16 (read back as set); anything else is one line, the settings kept.
TEST(Api, neg_StorageTakesZeroOrOne) {
  Session s = open(model_file("mlp", 4));
  cltrain_settings c = settings_of(s.get());
  c.storage = 1;
  ASSERT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK) << cltrain_last_error(s.get());
  EXPECT_EQ(settings_of(s.get()).storage, 1);
  c.storage = 2;
  expect_failure(s.get(), cltrain_set_settings(s.get(), &c), CLTRAIN_INVALID,
                 "storage is 2; it takes 0 (float32) or 1 (fp16)");
  EXPECT_EQ(settings_of(s.get()).storage, 1);
}

TEST(Api, neg_WrongBufferSize) {
  Session s = prepared(model_file("mlp", 4), "cpu", 4);
  std::vector<float> x(4 * 784 - 1), out(39);
  expect_failure(s.get(), cltrain_set_input(s.get(), x.data(), x.size()), CLTRAIN_INVALID,
                 "3135 floats given, the batch takes 3136");
  expect_failure(s.get(), cltrain_set_expected(s.get(), x.data(), 41), CLTRAIN_INVALID, "41 floats given");
  x.resize(4 * 784);
  expect_failure(s.get(), cltrain_predict(s.get(), x.data(), x.size(), out.data(), out.size()), CLTRAIN_INVALID,
                 "room for 39");
  expect_failure(s.get(), cltrain_set_input(s.get(), nullptr, x.size()), CLTRAIN_INVALID, "NULL");
  std::vector<float> w(5);
  expect_failure(s.get(), cltrain_get_weight(s.get(), "fc1/weights", w.data(), w.size()), CLTRAIN_INVALID, "elements");
  expect_failure(s.get(), cltrain_get_weight(s.get(), "no such tensor", w.data(), w.size()), CLTRAIN_INVALID,
                 "no such tensor");
  cltrain_settings zero{};
  expect_failure(s.get(), cltrain_get_settings(s.get(), &zero), CLTRAIN_INVALID, "struct_size");
  // A failed call does not stop the session.
  std::vector<float> y(40, 0.0f);
  EXPECT_EQ(cltrain_set_input(s.get(), x.data(), x.size()), CLTRAIN_OK);
  EXPECT_EQ(cltrain_set_expected(s.get(), y.data(), y.size()), CLTRAIN_OK);
  EXPECT_STREQ(cltrain_last_error(s.get()), "");
}

// A converted Keras Embedding model takes int32 token ids: its input type says so, the int32
// calls train and predict it, and the float calls refuse it in one line (and the int32 calls a
// float model). Per backend (the sanitizer's leak pass leaves the OpenCL one out); the OpenCL
// case also gives the CPU's losses, bitwise on POCL.
class Int32Ids : public ::testing::TestWithParam<const char*> {};

std::vector<float> train_ids(const char* backend) {
  const std::string model = std::string(CLTRAIN_TEST_KERAS_DATA) + "/embedding_pool.tflite";
  std::vector<int32_t> ids(8 * 6);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i * 7 % 20);
  ids[5] = -1;  // counts from the end, as Keras' index guard makes it
  std::vector<float> y(8 * 4, 0.0f), out(8 * 4), losses;
  for (size_t n = 0; n < 8; ++n) y[n * 4 + n % 4] = 1.0f;
  Session s = prepared(model, backend, 8);
  EXPECT_EQ(backend_of(s.get()), backend);
  int32_t type = -1;
  EXPECT_EQ(cltrain_get_input_type(s.get(), &type), CLTRAIN_OK) << cltrain_last_error(s.get());
  EXPECT_EQ(type, CLTRAIN_INPUT_INT32);
  std::vector<float> x(ids.size());
  expect_failure(s.get(), cltrain_set_input(s.get(), x.data(), x.size()), CLTRAIN_INVALID,
                 "is int32 (token ids): give it with the int32 calls");
  expect_failure(s.get(), cltrain_predict(s.get(), x.data(), x.size(), out.data(), out.size()), CLTRAIN_INVALID,
                 "int32 (token ids)");
  expect_failure(s.get(), cltrain_set_input_int32(s.get(), ids.data(), ids.size() - 1), CLTRAIN_INVALID,
                 "47 ids given, the batch takes 48");
  std::vector<int32_t> bad = ids;
  bad[9] = 20;
  expect_failure(s.get(), cltrain_set_input_int32(s.get(), bad.data(), bad.size()), CLTRAIN_INVALID,
                 "id 20 at element 9 is outside the embedding table's 20 rows (ids -20 to 19)");
  bad[9] = -21;
  expect_failure(s.get(), cltrain_predict_int32(s.get(), bad.data(), bad.size(), out.data(), out.size()),
                 CLTRAIN_INVALID, "id -21 at element 9");
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(cltrain_set_input_int32(s.get(), ids.data(), ids.size()), CLTRAIN_OK) << cltrain_last_error(s.get());
    EXPECT_EQ(cltrain_set_expected(s.get(), y.data(), y.size()), CLTRAIN_OK);
    float loss = 0;
    EXPECT_EQ(cltrain_train_step(s.get(), &loss), CLTRAIN_OK) << cltrain_last_error(s.get());
    losses.push_back(loss);
  }
  EXPECT_EQ(cltrain_predict_int32(s.get(), ids.data(), ids.size(), out.data(), out.size()), CLTRAIN_OK)
      << cltrain_last_error(s.get());
  for (size_t n = 0; n < 8; ++n) {
    float sum = 0;
    for (size_t k = 0; k < 4; ++k) sum += out[n * 4 + k];
    EXPECT_NEAR(sum, 1.0f, 1e-5f) << "sample " << n;  // a softmax
  }
  EXPECT_LT(losses.back(), losses.front());
  return losses;
}

TEST_P(Int32Ids, TrainAndFloatCallsAreRefused) {
  const std::vector<float> losses = train_ids(GetParam());
  if (std::string(GetParam()) == "opencl") expect_bitwise(losses, train_ids("cpu"));
  Session f = prepared(model_file("mlp", 4), "cpu", 4);
  int32_t type = -1;
  ASSERT_EQ(cltrain_get_input_type(f.get(), &type), CLTRAIN_OK);
  EXPECT_EQ(type, CLTRAIN_INPUT_FLOAT32);
  std::vector<int32_t> mlp_ids(4 * 784);
  expect_failure(f.get(), cltrain_set_input_int32(f.get(), mlp_ids.data(), mlp_ids.size()), CLTRAIN_INVALID,
                 "is float32: give it with the float calls");
}

INSTANTIATE_TEST_SUITE_P(Api, Int32Ids, ::testing::Values("cpu", "opencl"));

TEST(Api, neg_SetInputBeforePrepare) {
  Session s = open(model_file("mlp", 4));
  std::vector<float> x(4 * 784);
  expect_failure(s.get(), cltrain_set_input(s.get(), x.data(), x.size()), CLTRAIN_INVALID, "before prepare");
  float loss;
  expect_failure(s.get(), cltrain_train_step(s.get(), &loss), CLTRAIN_INVALID, "before prepare");
  expect_failure(s.get(), cltrain_export_checkpoint(s.get(), "x.ckpt"), CLTRAIN_INVALID, "before prepare");
}

TEST(Api, neg_StepBeforeAnyInput) {
  Session s = prepared(model_file("mlp", 4), "cpu", 4);
  float loss;
  expect_failure(s.get(), cltrain_train_step(s.get(), &loss), CLTRAIN_INVALID, "before set_input");
  std::vector<float> x(4 * 784);
  ASSERT_EQ(cltrain_set_input(s.get(), x.data(), x.size()), CLTRAIN_OK);
  expect_failure(s.get(), cltrain_train_step(s.get(), &loss), CLTRAIN_INVALID, "set_expected");
}

TEST(Api, neg_SecondPrepare) {
  Session s = prepared(model_file("mlp", 4), "cpu", 4);
  expect_failure(s.get(), cltrain_prepare(s.get()), CLTRAIN_INVALID, "already");
  cltrain_settings c = settings_of(s.get());
  expect_failure(s.get(), cltrain_set_settings(s.get(), &c), CLTRAIN_INVALID, "after prepare");
  const Data d(4, 784, 10, 4);
  EXPECT_EQ(train_steps(s.get(), d, 1).size(), 1u);  // still usable
}

TEST(Api, neg_ExportToUnwritablePath) {
  Session s = prepared(model_file("mlp", 4), "cpu", 4);
  const std::string file = temp_dir() + "/plain_file";
  std::ofstream(file) << "x";
  const std::string bad = file + "/under_a_file.circle";  // not a directory, even for root
  expect_failure(s.get(), cltrain_export_circle(s.get(), bad.c_str()), CLTRAIN_ERROR, "under_a_file.circle");
  expect_failure(s.get(), cltrain_export_checkpoint(s.get(), bad.c_str()), CLTRAIN_ERROR, "under_a_file.circle");
  expect_failure(s.get(), cltrain_import_checkpoint(s.get(), (temp_dir() + "/none.ckpt").c_str()), CLTRAIN_ERROR,
                 "none.ckpt");
}

TEST(Api, neg_CorruptModelBuffer) {
  std::vector<uint8_t> bytes = read_bytes(model_file("mlp", 4));
  cltrain_session* s = reinterpret_cast<cltrain_session*>(1);
  char err[512];
  std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 3));
  EXPECT_EQ(cltrain_session_create_from_buffer(truncated.data(), truncated.size(), "cut.circle", &s, err, sizeof err),
            CLTRAIN_ERROR);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::strstr(err, "model error: cut.circle"), nullptr) << err;
  bytes[4] = 'X';  // the file identifier
  EXPECT_EQ(cltrain_session_create_from_buffer(bytes.data(), bytes.size(), "id.circle", &s, err, sizeof err),
            CLTRAIN_ERROR);
  EXPECT_NE(std::strstr(err, "identifier"), nullptr) << err;
  EXPECT_EQ(cltrain_session_create_from_buffer(nullptr, 10, "null", &s, err, sizeof err), CLTRAIN_INVALID);
  char tiny[8];  // a short error buffer gets a cut, terminated line
  EXPECT_EQ(cltrain_session_create_from_buffer(truncated.data(), truncated.size(), "cut.circle", &s, tiny, sizeof tiny),
            CLTRAIN_ERROR);
  EXPECT_EQ(std::strlen(tiny), sizeof tiny - 1);
}

TEST(Api, neg_BadSettingsRefusedAtPrepare) {
  Session s = open(model_file("mlp", 4));
  cltrain_settings c = settings_of(s.get());
  c.learning_rate = NAN;
  c.backends = "cpu";
  ASSERT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK);
  expect_failure(s.get(), cltrain_prepare(s.get()), CLTRAIN_INVALID, "learning rate");
  c.learning_rate = 0.001f;
  c.optimizer = 3;
  ASSERT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK);  // a failed prepare leaves it unprepared
  expect_failure(s.get(), cltrain_prepare(s.get()), CLTRAIN_INVALID, "optimizer 3");
  c.optimizer = 2;
  c.train_config = "/nonexistent/train.cfg";
  expect_failure(s.get(), cltrain_set_settings(s.get(), &c), CLTRAIN_ERROR, "train.cfg");
  EXPECT_EQ(settings_of(s.get()).optimizer, 3) << "a failed set_settings changed the settings";
}

TEST(Api, neg_NonFiniteLossIsAnError) {
  Session s = open(model_file("mlp", 4));
  cltrain_settings c = settings_of(s.get());
  c.batch_size = 4;
  c.optimizer = 1;
  c.learning_rate = 1e30f;
  c.loss = 1;
  c.backends = "cpu";
  ASSERT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK);
  ASSERT_EQ(cltrain_prepare(s.get()), CLTRAIN_OK);
  const Data d(4, 784, 10, 1);
  ASSERT_EQ(cltrain_set_input(s.get(), d.x.data(), d.x.size()), CLTRAIN_OK);
  ASSERT_EQ(cltrain_set_expected(s.get(), d.y.data(), d.y.size()), CLTRAIN_OK);
  cltrain_status st = CLTRAIN_OK;
  float loss = 0;
  for (int i = 0; i < 10 && st == CLTRAIN_OK; ++i) st = cltrain_train_step(s.get(), &loss);
  expect_failure(s.get(), st, CLTRAIN_ERROR, "training error: the loss became");
}

}  // namespace
