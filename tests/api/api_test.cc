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

#include "cltrain/cltrain.h"

namespace {

std::string temp_dir() {
  static const std::string dir = [] {
    std::string d = ::testing::TempDir() + "cltrain_api_" + std::to_string(getpid());
    EXPECT_EQ(std::system(("mkdir -p " + d).c_str()), 0);
    return d;
  }();
  return dir;
}

std::string run(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << out;
  return out;
}

// A named model written by the CLI (make-model), once per test program.
std::string model_file(const std::string& name, int batch) {
  const std::string path = temp_dir() + "/" + name + "_" + std::to_string(batch) + ".circle";
  if (access(path.c_str(), F_OK) != 0)
    run(std::string(CLTRAIN_CLI) + " make-model " + name + " -o " + path + " --batch_size " + std::to_string(batch));
  return path;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void write_floats(const std::string& path, const std::vector<float>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
}

// Samples of random inputs in [0, 1) and one-hot expected outputs.
struct Data {
  std::vector<float> x, y;
  Data(uint64_t samples, uint64_t in, uint64_t out, uint32_t seed) : x(samples * in), y(samples * out, 0.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (float& v : x) v = u(rng);
    for (uint64_t s = 0; s < samples; ++s) y[s * out + rng() % out] = 1.0f;
  }
};

struct SessionDeleter {
  void operator()(cltrain_session* s) const { cltrain_session_destroy(s); }
};
using Session = std::unique_ptr<cltrain_session, SessionDeleter>;

Session open(const std::string& path) {
  cltrain_session* s = nullptr;
  char err[512];
  EXPECT_EQ(cltrain_session_create(path.c_str(), &s, err, sizeof err), CLTRAIN_OK) << err;
  return Session(s);
}

cltrain_settings settings_of(cltrain_session* s) {
  cltrain_settings c{};
  c.struct_size = sizeof c;
  EXPECT_EQ(cltrain_get_settings(s, &c), CLTRAIN_OK) << cltrain_last_error(s);
  return c;
}

// A session on model, prepared on backend at batch with Adam (lr 0.001, CCE); no cache, so that
// a test does not depend on what an earlier run left.
Session prepared(const std::string& model, const char* backend, int batch) {
  Session s = open(model);
  cltrain_settings c = settings_of(s.get());
  c.batch_size = batch;
  c.optimizer = 2;
  c.learning_rate = 0.001f;
  c.loss = 2;
  c.backends = backend;
  c.cache_dir = CLTRAIN_TEST_CACHE_DIR;
  EXPECT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK) << cltrain_last_error(s.get());
  EXPECT_EQ(cltrain_prepare(s.get()), CLTRAIN_OK) << cltrain_last_error(s.get());
  return s;
}

std::string backend_of(cltrain_session* s) {
  cltrain_backend_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(cltrain_get_backend(s, 0, &info), CLTRAIN_OK) << cltrain_last_error(s);
  return info.name ? info.name : "";
}

// The losses of `steps` steps over data, a batch at a time in order.
std::vector<float> train_steps(cltrain_session* s, const Data& d, int steps) {
  int32_t batch = 0;
  uint64_t in = 0, out = 0;
  EXPECT_EQ(cltrain_get_shape(s, &batch, &in, &out), CLTRAIN_OK);
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    const uint64_t b = static_cast<uint64_t>(batch);
    EXPECT_EQ(cltrain_set_input(s, d.x.data() + i * b * in, b * in), CLTRAIN_OK) << cltrain_last_error(s);
    EXPECT_EQ(cltrain_set_expected(s, d.y.data() + i * b * out, b * out), CLTRAIN_OK) << cltrain_last_error(s);
    float loss = 0;
    EXPECT_EQ(cltrain_train_step(s, &loss), CLTRAIN_OK) << cltrain_last_error(s);
    losses.push_back(loss);
  }
  return losses;
}

void expect_bitwise(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    EXPECT_EQ(a, b) << "step " << i + 1 << ": " << got[i] << " vs " << want[i];
  }
}

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

TEST(Api, VersionNamesTheApi) { EXPECT_NE(std::strstr(cltrain_version(), "API 1"), nullptr); }

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
TEST(Api, ResetOptimizerTrainsAsANewSession) {
  const std::string model = model_file("mlp", 4);
  const Data first(12, 784, 10, 21), next(8, 784, 10, 22);
  for (const char* backend : {"cpu", "opencl"}) {
    SCOPED_TRACE(backend);
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
