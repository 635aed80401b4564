// What the C API's tests share: named models written by the CLI, random data, sessions prepared
// on a backend, steps over data, and bitwise comparison. Header-only, included by each test file.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cltrain/cltrain.h"

namespace api_test {

inline std::string temp_dir() {
  static const std::string dir = [] {
    std::string d = ::testing::TempDir() + "cltrain_api_" + std::to_string(getpid());
    EXPECT_EQ(std::system(("mkdir -p " + d).c_str()), 0);
    return d;
  }();
  return dir;
}

inline std::string run(const std::string& cmd) {
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
inline std::string model_file(const std::string& name, int batch) {
  const std::string path = temp_dir() + "/" + name + "_" + std::to_string(batch) + ".circle";
  if (access(path.c_str(), F_OK) != 0)
    run(std::string(CLTRAIN_CLI) + " make-model " + name + " -o " + path + " --batch_size " + std::to_string(batch));
  return path;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

inline void write_floats(const std::string& path, const std::vector<float>& v) {
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

inline Session open(const std::string& path) {
  cltrain_session* s = nullptr;
  char err[512];
  EXPECT_EQ(cltrain_session_create(path.c_str(), &s, err, sizeof err), CLTRAIN_OK) << err;
  return Session(s);
}

inline cltrain_settings settings_of(cltrain_session* s) {
  cltrain_settings c{};
  c.struct_size = sizeof c;
  EXPECT_EQ(cltrain_get_settings(s, &c), CLTRAIN_OK) << cltrain_last_error(s);
  return c;
}

// A session on model, prepared on backend at batch with Adam (lr 0.001, CCE); no cache, so that
// a test does not depend on what an earlier run left. tweak (may be empty) changes the settings
// before they are set.
inline Session prepared(const std::string& model, const char* backend, int batch,
                        const std::function<void(cltrain_settings&)>& tweak = {}) {
  Session s = open(model);
  cltrain_settings c = settings_of(s.get());
  c.batch_size = batch;
  c.optimizer = 2;
  c.learning_rate = 0.001f;
  c.loss = 2;
  c.backends = backend;
  c.cache_dir = CLTRAIN_TEST_CACHE_DIR;
  if (tweak) tweak(c);
  EXPECT_EQ(cltrain_set_settings(s.get(), &c), CLTRAIN_OK) << cltrain_last_error(s.get());
  EXPECT_EQ(cltrain_prepare(s.get()), CLTRAIN_OK) << cltrain_last_error(s.get());
  return s;
}

inline std::string backend_of(cltrain_session* s) {
  cltrain_backend_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(cltrain_get_backend(s, 0, &info), CLTRAIN_OK) << cltrain_last_error(s);
  return info.name ? info.name : "";
}

// The losses of `steps` steps over data, a batch at a time in order.
inline std::vector<float> train_steps(cltrain_session* s, const Data& d, int steps) {
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

inline void expect_bitwise(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    EXPECT_EQ(a, b) << "step " << i + 1 << ": " << got[i] << " vs " << want[i];
  }
}

}  // namespace api_test
