// Corrupted files (truncated, bytes changed) must be rejected with ModelError or load cleanly;
// nothing else may happen. Run under -DCLTRAIN_ASAN=ON to catch out-of-bounds reads.
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "test_util.h"

namespace cltrain {
namespace {

struct Tally {
  int rejected = 0, loaded = 0;
};

void try_load(const std::vector<uint8_t>& bytes, Tally& tally, const std::string& what) {
  try {
    Model m = load_model_from_memory(bytes, "fuzz.circle");
    ++tally.loaded;
    // What loads must also survive the next steps a user takes.
    set_batch_size(m, 3);
  } catch (const ModelError& e) {
    ++tally.rejected;
    const std::string msg = e.what();
    if (msg.find('\n') != std::string::npos) ADD_FAILURE() << what << ": multi-line message: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw something other than ModelError: " << e.what();
  }
}

// What the fuzz targets found (tests/fuzz/regressions): each refused in one line, or loaded.
TEST(ModelFuzz, neg_FuzzFindingsAreRefused) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(CLTRAIN_TEST_FUZZ_REGRESSIONS)) {
    if (e.path().extension() != ".tflite" && e.path().extension() != ".circle") continue;
    std::ifstream f(e.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    Tally tally;
    try_load(bytes, tally, e.path().filename().string());
    ++files;
  }
  EXPECT_GT(files, 0);
}

TEST(ModelFuzz, neg_TruncateEveryLength) {
  for (const char* fmt : {"circle", "tflite"}) {
    const std::vector<uint8_t> full = write_model(test::tiny_model(), fmt);
    Tally tally;
    for (size_t n = 0; n < full.size(); ++n)
      try_load(std::vector<uint8_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)), tally,
               std::string(fmt) + " truncated to " + std::to_string(n));
    EXPECT_GT(tally.rejected, 0);
  }
}

TEST(ModelFuzz, neg_ChangeEveryByte) {
  // The every-op model puts each option table and the axes/paddings operands under the flips.
  for (const Model& model : {test::tiny_model(), test::every_op_model()}) {
    const std::vector<uint8_t> full = write_model(model, "circle");
    Tally tally;
    for (size_t i = 0; i < full.size(); ++i) {
      for (uint8_t mask : {0x01, 0x10, 0x80, 0xff}) {
        std::vector<uint8_t> b = full;
        b[i] ^= mask;
        try_load(b, tally, "byte " + std::to_string(i) + " ^ " + std::to_string(mask));
      }
    }
    EXPECT_GT(tally.rejected, 0);
    EXPECT_GT(tally.loaded, 0);  // flips inside weights still load
  }
}

// Every option and constant operand of the every-op model set to values at the edges of int32.
TEST(ModelFuzz, neg_ExtremeOptionValues) {
  const std::vector<uint8_t> full = write_model(test::every_op_model(), "tflite");
  const int32_t values[] = {0, -1, 1, 2, 7, INT32_MAX, INT32_MIN, 1 << 30, -(1 << 30)};
  Tally tally;
  for (int32_t v : values) {
    for (int field = 0; field < 9; ++field) {
      const std::vector<uint8_t> b = test::edit_raw(full, [&](fb::ModelT& m) {
        for (auto& op : m.subgraphs[0]->operators) {
          auto& o = op->builtin_options;
          if (auto* c = o.AsConv2DOptions()) {
            int32_t* f[] = {&c->stride_w, &c->stride_h, &c->dilation_w_factor, &c->dilation_h_factor};
            if (field < 4) *f[field] = v;
          } else if (auto* d = o.AsDepthwiseConv2DOptions()) {
            int32_t* f[] = {&d->stride_w, &d->stride_h, &d->dilation_w_factor, &d->dilation_h_factor,
                            &d->depth_multiplier};
            if (field < 5) *f[field] = v;
          } else if (auto* p = o.AsPool2DOptions()) {
            int32_t* f[] = {&p->stride_w, &p->stride_h, &p->filter_width, &p->filter_height};
            if (field >= 4 && field < 8) *f[field - 4] = v;
          } else if (auto* c2 = o.AsConcatenationOptions()) {
            if (field == 8) c2->axis = v;
          }
        }
        // The int32 constants (axes, paddings, reshape target): every value at once.
        for (auto& t : m.subgraphs[0]->tensors) {
          if (t->type != fb::TensorType::INT32 || field != 8) continue;
          auto& data = m.buffers[t->buffer]->data;
          for (size_t i = 0; i + 4 <= data.size(); i += 4) std::memcpy(data.data() + i, &v, 4);
        }
      });
      try_load(b, tally, "value " + std::to_string(v) + " in field " + std::to_string(field));
    }
  }
  EXPECT_GT(tally.rejected, 0);
}

// CLTRAIN_FUZZ_ROUNDS=100000 for a longer run.
TEST(ModelFuzz, neg_RandomDamage) {
  const char* env = std::getenv("CLTRAIN_FUZZ_ROUNDS");
  const int rounds = env ? std::atoi(env) : 1000;
  const std::vector<uint8_t> models[] = {
      write_model(test::tiny_model(), "circle"), write_model(make_named_model("mlp", 2), "tflite"),
      write_model(test::every_op_model(), "circle"), write_model(make_named_model("cnn-tiny", 2), "tflite")};
  std::mt19937 rng(1234);
  Tally tally;
  for (int round = 0; round < rounds; ++round) {
    std::vector<uint8_t> b = models[round % 4];
    const int changes = 1 + static_cast<int>(rng() % 8);
    for (int c = 0; c < changes; ++c) {
      // Mostly the tables at the start of the file (flatbuffers are built back to front, and
      // write_model adds the weights first, so they end up last).
      const size_t span = rng() % 4 ? std::min<size_t>(b.size(), 2048) : b.size();
      const size_t pos = rng() % span;
      if (rng() % 2) {
        b[pos] = static_cast<uint8_t>(rng());
      } else {  // small offsets and counts are more likely to point somewhere plausible
        const uint32_t v = rng() % 64;
        std::memcpy(b.data() + std::min(pos, b.size() - 4), &v, 4);
      }
    }
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    try_load(b, tally, "round " + std::to_string(round));
  }
  EXPECT_GT(tally.rejected, 0);
}

}  // namespace
}  // namespace cltrain
