// Checkpoints: a resumed run ends with the same weights as an uninterrupted one; a bad
// checkpoint is refused with one line; an interrupted write leaves the old file whole.
#include "checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "backend.h"
#include "dataset.h"
#include "model/builder.h"
#include "trainer.h"

namespace cltrain {
namespace {

const Model& mlp_model() {
  static const Model m = make_named_model("mlp", 32);
  return m;
}

std::unique_ptr<Session> mlp_session(bool opencl, const TrainOptions& options, std::string* why) {
  std::vector<std::unique_ptr<Backend>> backends;
  if (opencl) {
    auto b = open_plugin_file(CLTRAIN_OPENCL_PLUGIN, default_backend_config(), why);
    if (!b) return nullptr;
    backends.push_back(std::move(b));
  }
  backends.push_back(open_backend("cpu", default_backend_config(), why));
  auto s = std::make_unique<Session>(build_training_graph(mlp_model(), options), std::move(backends));
  s->prepare();
  return s;
}

const Dataset& small_data() {
  static const Dataset d = [] {
    Dataset x = load_fashion_mnist(kFashionMnistDir, true);
    x.truncate(320);
    return x;
  }();
  return d;
}

std::vector<std::vector<float>> weights_of(Session& s) {
  std::vector<std::vector<float>> out;
  for (int32_t w : s.graph().weights) out.push_back(s.read_persistent(w));
  return out;
}

void resume_gives_same_weights(bool opencl) {
  std::string why;
  TrainerConfig two;
  two.epochs = 2;
  auto straight = mlp_session(opencl, TrainOptions{}, &why);
  if (!straight && opencl && why.find("not available") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_TRUE(straight) << why;
  train(*straight, small_data(), Dataset{}, two, nullptr);

  TrainerConfig one = two;
  one.epochs = 1;
  auto first = mlp_session(opencl, TrainOptions{}, &why);
  const auto r = train(*first, small_data(), Dataset{}, one, nullptr);
  const auto bytes = make_checkpoint(*first, mlp_model(), {static_cast<uint32_t>(r[0].steps), 1});

  auto resumed = mlp_session(opencl, TrainOptions{}, &why);
  const TrainingPosition pos = load_checkpoint(*resumed, mlp_model(), bytes, "ckpt");
  EXPECT_EQ(pos.epoch, 1u);
  EXPECT_EQ(pos.step, static_cast<uint32_t>(r[0].steps));
  TrainerConfig rest = two;
  rest.epochs_done = static_cast<int32_t>(pos.epoch);
  EXPECT_EQ(resumed->iterations(), static_cast<int64_t>(pos.step));  // Adam's t goes on from the checkpoint
  train(*resumed, small_data(), Dataset{}, rest, nullptr);

  const auto a = weights_of(*straight), b = weights_of(*resumed);
  ASSERT_EQ(a.size(), b.size());
  for (size_t t = 0; t < a.size(); ++t)
    for (size_t i = 0; i < a[t].size(); ++i) {
      if (opencl) {
        ASSERT_NEAR(a[t][i], b[t][i], 1e-6 * std::max(1.0f, std::abs(a[t][i]))) << "tensor " << t << " element " << i;
      } else {
        ASSERT_EQ(a[t][i], b[t][i]) << "tensor " << t << " element " << i;  // bitwise on the CPU
      }
    }
}

TEST(Checkpoint, ResumeGivesSameWeightsOnCpu) { resume_gives_same_weights(false); }
TEST(Checkpoint, ResumeGivesSameWeightsOnOpencl) { resume_gives_same_weights(true); }

TEST(Checkpoint, RoundTripKeepsEveryByte) {
  std::string why;
  auto s = mlp_session(false, TrainOptions{}, &why);
  TrainerConfig c;
  c.epochs = 1;
  train(*s, small_data(), Dataset{}, c, nullptr);
  const auto bytes = make_checkpoint(*s, mlp_model(), {10, 1});
  auto t = mlp_session(false, TrainOptions{}, &why);
  load_checkpoint(*t, mlp_model(), bytes, "ckpt");
  EXPECT_EQ(make_checkpoint(*t, mlp_model(), {10, 1}), bytes);
  EXPECT_EQ(bytes[0] | (bytes[1] << 8), 429);
}

class CheckpointNeg : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    session_ = mlp_session(false, TrainOptions{}, &why);
    ASSERT_TRUE(session_) << why;
    good_ = make_checkpoint(*session_, mlp_model(), {0, 0});
  }
  std::string error_of(const std::vector<uint8_t>& bytes) {
    try {
      load_checkpoint(*session_, mlp_model(), bytes, "c.ckpt");
    } catch (const CheckpointError& e) {
      return e.what();
    }
    return "";
  }
  std::unique_ptr<Session> session_;
  std::vector<uint8_t> good_;
};

TEST_F(CheckpointNeg, neg_MismatchedModel) {
  std::string why;
  TrainOptions partial;
  partial.num_trainable_ops = 2;  // trains 2 tensors, not 4
  auto other = mlp_session(false, partial, &why);
  // Its first FullyConnected has no Adam state, and is its initial value, which this session trains.
  const std::string e = error_of(make_checkpoint(*other, mlp_model(), {0, 0}));
  EXPECT_NE(e.find("has no Adam state for 'fc1/"), std::string::npos) << e;
}

TEST_F(CheckpointNeg, neg_Truncated) {
  for (size_t keep : {size_t{0}, size_t{10}, size_t{100}, good_.size() / 2, good_.size() - 1}) {
    auto b = good_;
    b.resize(keep);
    const std::string e = error_of(b);
    EXPECT_NE(e.find("truncated"), std::string::npos) << keep << ": " << e;
  }
}

TEST_F(CheckpointNeg, neg_WrongMagic) {
  auto b = good_;
  b[0] ^= 0xff;
  EXPECT_NE(error_of(b).find("not a checkpoint"), std::string::npos);
}

TEST_F(CheckpointNeg, neg_TensorOfWrongSize) {
  auto b = good_;
  // Move the second weight's offset: the first weight then seems to hold 4 bytes more.
  uint32_t off = b[24] | (b[25] << 8) | (b[26] << 16) | (static_cast<uint32_t>(b[27]) << 24);
  off += 4;
  for (int i = 0; i < 4; ++i) b[24 + i] = static_cast<uint8_t>(off >> (8 * i));
  const std::string e = error_of(b);
  EXPECT_NE(e.find("the model needs"), std::string::npos) << e;
}

// A value that is not finite in any entry is refused before anything is written: the first
// weight's new values do not reach the session when the last one holds a NaN.
TEST_F(CheckpointNeg, neg_NonFiniteValueChangesNothing) {
  auto b = good_;
  auto get = [&](size_t at) {
    return static_cast<uint32_t>(b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) |
                                 (static_cast<uint32_t>(b[at + 3]) << 24));
  };
  const uint32_t count = get(16);
  ASSERT_GE(count, 2u);
  const uint32_t first = get(20), last = get(20 + 4 * (count - 1));
  float v;
  std::memcpy(&v, b.data() + first, 4);
  v += 1.0f;
  std::memcpy(b.data() + first, &v, 4);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(b.data() + last, &nan, 4);
  const std::string e = error_of(b);
  EXPECT_NE(e.find("holds NaN at element 0"), std::string::npos) << e;
  EXPECT_EQ(make_checkpoint(*session_, mlp_model(), {0, 0}), good_) << "a refused checkpoint changed the session";
}

// A writer killed at any moment leaves either the old file or the new one, never a mix.
TEST(AtomicWrite, KilledWriteLeavesOldFileWhole) {
  const std::string path = ::testing::TempDir() + "cltrain_atomic_" + std::to_string(getpid());
  const std::vector<uint8_t> old_bytes(1 << 20, 0xAB), new_bytes(64 << 20, 0xCD);
  save_file_atomic(path, old_bytes);
  for (int delay_us : {0, 2000, 20000}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      save_file_atomic(path, new_bytes);
      _exit(0);
    }
    usleep(static_cast<useconds_t>(delay_us));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    std::ifstream f(path, std::ios::binary);
    const std::vector<uint8_t> now((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(now == old_bytes || now == new_bytes) << "a partial file of " << now.size() << " bytes";
    if (now == new_bytes) save_file_atomic(path, old_bytes);
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace cltrain
