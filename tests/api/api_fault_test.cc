// Device faults (CLTRAIN_OPENCL_FAULT, the OpenCL plugin's test hook) through the C API: the Nth
// kernel enqueue or tensor read of a training session fails as a failing device's would. The failed
// step returns CLTRAIN_ERROR with one line. Where it failed before its updates ran (forward,
// backward, the checks, the host's reads) the weights and the optimizer state are the last good
// step's: the checkpoint exported then is the clean run's after the steps before, and training
// goes on as the clean run (the fault fires once). Where it failed while its updates ran, exports
// are refused in one line (never a half-updated model), and resuming from a checkpoint goes on;
// with periodic checkpoints the session restores the newest itself and trains on. A
// buffer that cannot be allocated at prepare leaves the training to the CPU with one warning.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "api_fixture.h"

namespace api_test {
namespace {

// CLTRAIN_OPENCL_FAULT's bytes, put into the environment once before main (putenv keeps this
// buffer): each FaultEnv writes its value in place and empties it after (the plugin reads an
// empty value as no fault). setenv and unsetenv would rebuild the environment while POCL's worker
// threads of earlier sessions call getenv: CI saw that crash under ASan.
char g_fault_env[64] = "CLTRAIN_OPENCL_FAULT=";
constexpr size_t kFaultName = sizeof("CLTRAIN_OPENCL_FAULT=") - 1;
const bool g_fault_env_put = putenv(g_fault_env) == 0;

struct FaultEnv {
  explicit FaultEnv(const std::string& v) {
    EXPECT_TRUE(g_fault_env_put);
    std::snprintf(g_fault_env + kFaultName, sizeof g_fault_env - kFaultName, "%s", v.c_str());
  }
  ~FaultEnv() { g_fault_env[kFaultName] = '\0'; }
};

std::vector<uint8_t> checkpoint_of(cltrain_session* s, const std::string& name, cltrain_status* st) {
  const std::string path = temp_dir() + "/" + name;
  std::remove(path.c_str());
  *st = cltrain_export_checkpoint(s, path.c_str());
  return *st == CLTRAIN_OK ? read_bytes(path) : std::vector<uint8_t>();
}

cltrain_status step(cltrain_session* s, const Data& d, int i, float* loss) {
  EXPECT_EQ(cltrain_set_input(s, d.x.data() + i * 4 * 784, 4 * 784), CLTRAIN_OK);
  EXPECT_EQ(cltrain_set_expected(s, d.y.data() + i * 4 * 10, 4 * 10), CLTRAIN_OK);
  return cltrain_train_step(s, loss);
}

TEST(Faults, EnqueueAndReadFaultsKeepTheLastGoodWeights_opencl) {
  const std::string model = model_file("mlp", 4);
  const Data d(24, 784, 10, 41);
  // The clean run: losses and checkpoints after 0..5 steps.
  Session clean = prepared(model, "opencl", 4);
  ASSERT_EQ(backend_of(clean.get()), "opencl");
  std::vector<std::vector<uint8_t>> good;
  std::vector<float> losses;
  cltrain_status st;
  for (int i = 0; i <= 5; ++i) {
    good.push_back(checkpoint_of(clean.get(), "clean.ckpt", &st));
    ASSERT_EQ(st, CLTRAIN_OK);
    if (i < 5) {
      float loss = 0;
      ASSERT_EQ(step(clean.get(), d, i, &loss), CLTRAIN_OK);
      losses.push_back(loss);
    }
  }
  int intact = 0, refused = 0, restored = 0;
  for (const std::string kind : {"enqueue", "read"}) {
    for (int n = 1; n <= (kind == "read" ? 4 : 60); n += (kind == "read" ? 1 : 3)) {
      SCOPED_TRACE(kind + ":" + std::to_string(n));
      Session s = [&] {
        const FaultEnv env(kind + ":" + std::to_string(n));
        return prepared(model, "opencl", 4);
      }();
      int failed = -1;
      std::string line;
      for (int i = 0; i < 3 && failed < 0; ++i) {
        float loss = 0;
        if (step(s.get(), d, i, &loss) != CLTRAIN_OK) {
          failed = i;
          line = cltrain_last_error(s.get());
        } else {
          EXPECT_EQ(loss, losses[static_cast<size_t>(i)]) << "step " << i + 1;
        }
      }
      ASSERT_GE(failed, 0) << "no step failed";
      EXPECT_EQ(line.find('\n'), std::string::npos) << line;
      EXPECT_NE(line.find("CL_OUT_OF_RESOURCES"), std::string::npos) << line;
      const std::vector<uint8_t> after = checkpoint_of(s.get(), "after.ckpt", &st);
      if (st != CLTRAIN_OK) {  // failed during its updates
        ++refused;
        EXPECT_EQ(kind, "enqueue");
        EXPECT_NE(std::string(cltrain_last_error(s.get())).find("partly updated"), std::string::npos)
            << cltrain_last_error(s.get());
        float loss = 0;
        EXPECT_NE(step(s.get(), d, failed, &loss), CLTRAIN_OK) << "trained on half-updated weights";
        // Resuming from the last good checkpoint goes on as the clean run.
        const std::string path = temp_dir() + "/good.ckpt";
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(good[static_cast<size_t>(failed)].data()),
                   static_cast<std::streamsize>(good[static_cast<size_t>(failed)].size()));
        Session r = prepared(model, "opencl", 4);
        ASSERT_EQ(cltrain_import_checkpoint(r.get(), path.c_str()), CLTRAIN_OK) << cltrain_last_error(r.get());
        ASSERT_EQ(step(r.get(), d, failed, &loss), CLTRAIN_OK) << cltrain_last_error(r.get());
        EXPECT_EQ(loss, losses[static_cast<size_t>(failed)]);
        if (failed == 0) continue;  // no checkpoint before the first step
        // With a checkpoint after every step, the session restores the newest one by itself: the
        // last good weights export, and training goes on as the clean run.
        Session c = [&] {
          const FaultEnv env(kind + ":" + std::to_string(n));
          const std::string dir = temp_dir() + "/periodic";
          std::filesystem::remove_all(dir);
          return prepared(model, "opencl", 4, [&](cltrain_settings& c) {
            c.checkpoint_every = 1;
            c.checkpoint_dir = dir.c_str();
          });
        }();
        for (int i = 0; i < failed; ++i)
          ASSERT_EQ(step(c.get(), d, i, &loss), CLTRAIN_OK) << cltrain_last_error(c.get());
        ASSERT_NE(step(c.get(), d, failed, &loss), CLTRAIN_OK);
        const std::string rolled = cltrain_last_error(c.get());
        EXPECT_EQ(rolled.find('\n'), std::string::npos) << rolled;
        EXPECT_NE(rolled.find("back at optimizer step " + std::to_string(failed) + " from "), std::string::npos)
            << rolled;
        EXPECT_EQ(checkpoint_of(c.get(), "rolled.ckpt", &st), good[static_cast<size_t>(failed)])
            << "the restored weights are not the last good step's";
        ASSERT_EQ(st, CLTRAIN_OK) << cltrain_last_error(c.get());
        for (int i = failed; i < failed + 2; ++i) {
          ASSERT_EQ(step(c.get(), d, i, &loss), CLTRAIN_OK) << cltrain_last_error(c.get());
          EXPECT_EQ(loss, losses[static_cast<size_t>(i)]) << "step " << i + 1 << " after the restore";
        }
        ++restored;
        continue;
      }
      ++intact;
      EXPECT_EQ(after, good[static_cast<size_t>(failed)])
          << "the weights after the failed step " << failed + 1 << " are not those before it";
      for (int i = failed; i < failed + 2; ++i) {
        float loss = 0;
        ASSERT_EQ(step(s.get(), d, i, &loss), CLTRAIN_OK) << cltrain_last_error(s.get());
        EXPECT_EQ(loss, losses[static_cast<size_t>(i)]) << "step " << i + 1 << " after the fault";
      }
    }
  }
  EXPECT_GT(intact, 0);
  EXPECT_GT(refused, 0);
  EXPECT_GT(restored, 0);
}

TEST(Faults, AllocationFaultAtPrepareTrainsOnTheCpu_opencl) {
  const std::string model = model_file("mlp", 4);
  const FaultEnv env("alloc:1");
  Session s = prepared(model, "opencl", 4);
  EXPECT_EQ(backend_of(s.get()), "cpu");
  std::string warnings;
  for (int32_t i = 0; const char* w = cltrain_warning(s.get(), i); ++i) warnings += std::string(w) + "\n";
  EXPECT_NE(warnings.find("training on the CPU backend instead"), std::string::npos) << warnings;
  const Data d(4, 784, 10, 42);
  float loss = 0;
  EXPECT_EQ(step(s.get(), d, 0, &loss), CLTRAIN_OK) << cltrain_last_error(s.get());
}

}  // namespace
}  // namespace api_test
