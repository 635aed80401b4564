// Float16 storage (--storage fp16, CLTRAIN_FLOAT16): the host stores activations and back-prop
// tensors as float16 where every op touching one allows it; the OpenCL kernels load and store
// halves and the CPU backend rounds every float16 output after each step, so the two train bit
// for bit alike (the Numerics of cltrain_backend.h), in half the bytes for those tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "../../backend/cpu/half.h"
#include "model/builder.h"
#include "session_helpers.h"

namespace cltrain {
namespace {

std::unique_ptr<Session> session(const Model& m, bool opencl, bool half, uint64_t budget, std::string* why) {
  return prepared_session(m, opencl, budget, half, why);
}

uint64_t pools(const Session& s) { return pool_sum(s); }

// The number of float16 tensors backend b holds.
int halves(const Session& s, size_t b) {
  int n = 0;
  for (const cltrain_tensor_desc& t : s.backend_tensors()[b]) n += t.first_step >= 0 && t.dtype == CLTRAIN_FLOAT16;
  return n;
}

std::vector<float> losses(Session& s, int steps, int classes) {
  std::mt19937 rng(11);
  std::normal_distribution<float> u(0.0f, 1.0f);
  std::vector<float> in(s.input_elements()), out(s.prediction_elements(), 0.0f), got;
  for (int i = 1; i <= steps; ++i) {
    for (float& v : in) v = u(rng);
    std::fill(out.begin(), out.end(), 0.0f);
    for (int32_t n = 0; n < s.batch(); ++n)
      out[static_cast<size_t>(n) * classes + static_cast<size_t>(rng() % classes)] = 1.0f;
    got.push_back(s.train_step(in.data(), out.data(), nullptr));
  }
  return got;
}

// Every op that takes float16 storage, in the shapes that choose each of their kernels: strided,
// dilated and pointwise convolutions (with and without a bias and a fused activation, dx through
// a producer's ReLU), depthwise with vectors and with a multiplier, max pools that scatter and
// that gather, an average pool, a residual add (its gradient accumulated), a broadcast mul, mean,
// reshape and fully connected layers.
Model every_half_op_model() {
  ModelBuilder b(5);
  int x = b.input({2, 12, 12, 4});
  x = b.conv2d(x, 16, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU);
  int y = b.conv2d(x, 16, 1, 1, 1, CLTRAIN_PADDING_VALID, CLTRAIN_ACT_NONE);  // pointwise
  y = b.depthwise_conv2d(y, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU6);
  x = b.add(x, y, CLTRAIN_ACT_RELU);                    // residual: x is read twice, its gradient accumulated
  x = b.max_pool2d(x, 2, 2, 2, CLTRAIN_PADDING_VALID);  // scatter
  x = b.conv2d(x, 16, 3, 3, 2, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU);
  x = b.depthwise_conv2d(x, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_NONE, 2);  // multiplier 2
  x = b.conv2d(x, 8, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 2);         // dilated
  x = b.max_pool2d(x, 3, 3, 1, CLTRAIN_PADDING_SAME);                             // gather
  x = b.avg_pool2d(x, 2, 2, 1, CLTRAIN_PADDING_VALID);
  x = b.mul(x, b.mean(x, {1, 2}, true));  // broadcast
  int flat = b.reshape(x, {2, -1});
  flat = b.fully_connected(flat, 16, CLTRAIN_ACT_RELU);
  b.output(b.softmax(b.fully_connected(flat, 5, CLTRAIN_ACT_NONE)));
  return b.build();
}

void expect_opencl_is_cpu_bitwise(const Model& m, int classes) {
  std::string why;
  auto cpu = session(m, false, true, 0, &why);
  auto ocl = session(m, true, true, 0, &why);
  auto f32 = session(m, true, false, 0, &why);
  ASSERT_TRUE(cpu && ocl && f32) << why;
  for (const std::string& b : ocl->model_op_placement()) EXPECT_EQ(b, "opencl");
  EXPECT_GT(halves(*ocl, 0), 4);
  EXPECT_EQ(halves(*f32, 0), 0);
  EXPECT_LT(pools(*ocl), pools(*f32));
  const std::vector<float> a = losses(*cpu, 3, classes), o = losses(*ocl, 3, classes), f = losses(*f32, 3, classes);
  int rounded = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(o[i], a[i]) << "step " << i + 1;                            // bitwise
    rounded += o[i] != f[i];                                              // the roundings are there
    EXPECT_NEAR(o[i], f[i], 0.02 * std::fabs(f[i])) << "step " << i + 1;  // and small
  }
  EXPECT_GT(rounded, 0);
}

TEST(HalfStorage, OpenclIsCpuBitwiseOnEveryHalfOp) { expect_opencl_is_cpu_bitwise(every_half_op_model(), 5); }
TEST(HalfStorage, OpenclIsCpuBitwiseOnMnistKaggle) {
  expect_opencl_is_cpu_bitwise(make_named_model("mnist-kaggle", 4), 10);
}

// A RESHAPE copies bytes as they are: next to an op without float16 kernels (TRANSPOSE_CONV,
// RESIZE_BILINEAR) its input and output both stay float32, and every step still runs on OpenCL,
// bit for bit as the CPU (a convolution before them keeps its float16 tensors).
TEST(HalfStorage, ReshapeBesideAFloat32OpKeepsBothFloat32) {
  ModelBuilder b(12);
  int x = b.input({2, 6, 6, 2});
  x = b.conv2d(x, 4, 3, 3, 2, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU);  // [2,3,3,4]
  x = b.conv2d(x, 4, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU);  // float16 in and out
  x = b.conv2d(x, 4, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU);
  x = b.transpose_conv(x, 3, 3, 3, 2, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 6, 6);
  x = b.resize(CLTRAIN_OP_RESIZE_BILINEAR, x, 3, 3, false, true);
  x = b.reshape(x, {2, -1});
  x = b.fully_connected(x, 8, CLTRAIN_ACT_RELU);  // float16 hidden units
  b.output(b.softmax(b.fully_connected(x, 5, CLTRAIN_ACT_NONE)));
  expect_opencl_is_cpu_bitwise(b.build(), 5);
}

// Activations and back-prop tensors in half the bytes; weights, optimizer state, the model's
// input and prediction and the loss stay float32.
TEST(HalfStorage, OnlyActivationsAndBackPropAreHalved) {
  std::string why;
  auto s = session(make_named_model("mnist-kaggle", 32), true, true, 0, &why);
  ASSERT_TRUE(s) << why;
  const TrainingGraph& g = s->graph();
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const cltrain_tensor_desc& d = s->backend_tensors()[0][t];
    if (d.dtype != CLTRAIN_FLOAT16) continue;
    EXPECT_TRUE(d.role == CLTRAIN_ROLE_NON_CONST || d.role == CLTRAIN_ROLE_BACK_PROP ||
                d.role == CLTRAIN_ROLE_DISPOSABLE)
        << d.name;
    EXPECT_FALSE(d.persistent) << d.name;
    EXPECT_NE(static_cast<int32_t>(t), g.input);
    EXPECT_NE(static_cast<int32_t>(t), g.prediction);
    EXPECT_NE(static_cast<int32_t>(t), g.loss);
  }
  const cltrain_memory_report r = s->memory()[0].report;
  auto f32 = session(make_named_model("mnist-kaggle", 32), true, false, 0, &why);
  ASSERT_TRUE(f32) << why;
  const cltrain_memory_report q = f32->memory()[0].report;
  EXPECT_EQ(r.role_peak[CLTRAIN_ROLE_TRAINABLE], q.role_peak[CLTRAIN_ROLE_TRAINABLE]);
  EXPECT_EQ(r.role_peak[CLTRAIN_ROLE_OPTIMIZER], q.role_peak[CLTRAIN_ROLE_OPTIMIZER]);
  EXPECT_EQ(r.role_peak[CLTRAIN_ROLE_BACK_PROP] * 2, q.role_peak[CLTRAIN_ROLE_BACK_PROP]);
  EXPECT_LT(r.pool_bytes, q.pool_bytes * 4 / 5);
}

// With a memory budget too: the repeats compute the same halves.
TEST(HalfStorage, WithinABudgetTheLossesStayBitwise) {
  std::string why;
  // Batch 32: at 8, fc's gradient, held until the updates' check, sets the peak and no repeat
  // lowers it.
  const Model m = make_named_model("mnist-kaggle", 32);
  auto free_run = session(m, true, true, 0, &why);
  ASSERT_TRUE(free_run) << why;
  const uint64_t budget = pools(*free_run) / 100 * 97;
  auto tight = session(m, true, true, budget, &why);
  ASSERT_TRUE(tight) << why;
  EXPECT_LE(pools(*tight), budget);
  EXPECT_FALSE(tight->budget().recomputed.empty());
  const std::vector<float> a = losses(*free_run, 3, 10), b = losses(*tight, 3, 10);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i + 1;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(HalfStorage, CpuRoundsToTheNearestHalfTiesToEven) {
  using cpu::round_to_half;
  EXPECT_EQ(round_to_half(1.0f), 1.0f);
  EXPECT_EQ(round_to_half(1.0f + 0x1p-11f), 1.0f);                // tie: to the even 1
  EXPECT_EQ(round_to_half(1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);  // tie: to the even 1 + 2^-9
  EXPECT_EQ(round_to_half(1.0f + 0x1p-11f + 0x1p-20f), 1.0f + 0x1p-10f);
  EXPECT_EQ(round_to_half(-3.14159265f), -3.140625f);
  EXPECT_EQ(round_to_half(65504.0f), 65504.0f);  // the largest half
  EXPECT_EQ(round_to_half(65519.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to_half(65520.0f)));  // the tie above it: Inf
  EXPECT_TRUE(std::isinf(round_to_half(-1e30f)) && round_to_half(-1e30f) < 0);
  EXPECT_EQ(round_to_half(0x1p-14f), 0x1p-14f);    // the smallest normal
  EXPECT_EQ(round_to_half(0x1p-24f), 0x1p-24f);    // the smallest subnormal
  EXPECT_EQ(round_to_half(0x1p-25f), 0.0f);        // tie: to the even 0
  EXPECT_EQ(round_to_half(0x1.8p-24f), 0x1p-23f);  // tie: to the even 2
  EXPECT_EQ(round_to_half(0x1.4p-24f), 0x1p-24f);
  EXPECT_EQ(round_to_half(0x1.fffffep-15f), 0x1p-14f);  // a subnormal rounds up to normal
  EXPECT_TRUE(std::signbit(round_to_half(-0x1p-30f)));  // -0 keeps its sign
  EXPECT_TRUE(std::isnan(round_to_half(from_bits(0x7fc00001u))));
  // Every value a half holds is kept as it is.
  for (uint32_t e = 1; e < 31; ++e)
    for (uint32_t m = 0; m < 1024; m += 37) {
      const float v = std::ldexp(1.0f + static_cast<float>(m) / 1024.0f, static_cast<int>(e) - 15);
      EXPECT_EQ(round_to_half(v), v);
    }
}

}  // namespace
}  // namespace cltrain
