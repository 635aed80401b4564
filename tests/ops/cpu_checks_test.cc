// What the CPU backend refuses in supports(), with one line that says why: shapes that do not
// fit the op's definition, and steps the ABI allows but that cannot be run as given.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend.h"
#include "cltrain/cltrain_backend.h"
#include "cltrain/cltrain_cpu.h"

namespace cltrain {
namespace {

struct Step {
  std::vector<cltrain_tensor_desc> tensors;
  cltrain_step_desc step{};

  int32_t tensor(std::vector<int32_t> dims) {
    cltrain_tensor_desc t{};
    t.rank = static_cast<int32_t>(dims.size());
    std::copy(dims.begin(), dims.end(), t.dims);
    t.dtype = CLTRAIN_FLOAT32;
    t.first_step = t.last_step = 0;
    tensors.push_back(t);
    return static_cast<int32_t>(tensors.size() - 1);
  }
  void set(int32_t op, int32_t phase, std::vector<int32_t> in, std::vector<int32_t> out) {
    step.op = op;
    step.phase = phase;
    step.num_inputs = static_cast<int32_t>(in.size());
    step.num_outputs = static_cast<int32_t>(out.size());
    std::copy(in.begin(), in.end(), step.inputs);
    std::copy(out.begin(), out.end(), step.outputs);
  }
  // "" if the CPU backend supports the step, else its reason.
  std::string refusal() const {
    const cltrain_backend_iface* i = cltrain_cpu_backend_iface();
    cltrain_backend* b = nullptr;
    char err[256];
    EXPECT_EQ(i->create(nullptr, &b, err, sizeof(err)), CLTRAIN_OK);
    const cltrain_graph_desc g = cltrain_graph(tensors.data(), static_cast<int32_t>(tensors.size()), &step, 1, nullptr);
    const int ok = i->supports(b, &g, 0, 1);
    std::string why = ok ? "" : i->last_error(b);
    if (!ok && why.empty()) why = "(no reason)";
    i->destroy(b);
    return why;
  }
};

cltrain_op_params conv_params(int32_t padding) {
  cltrain_op_params p{};
  p.padding = padding;
  p.stride_h = p.stride_w = p.dilation_h = p.dilation_w = 1;
  return p;
}

TEST(CpuChecks, neg_ConvOutputOfTheWrongShape) {
  Step s;
  const int32_t x = s.tensor({1, 5, 5, 2}), w = s.tensor({3, 3, 3, 2}), y = s.tensor({1, 5, 5, 3});
  s.set(CLTRAIN_OP_CONV_2D, CLTRAIN_PHASE_FORWARD, {x, w, -1}, {y});
  s.step.params = conv_params(CLTRAIN_PADDING_SAME);
  EXPECT_EQ(s.refusal(), "");
  s.step.params = conv_params(CLTRAIN_PADDING_VALID);  // VALID gives 3x3
  EXPECT_NE(s.refusal().find("is not [1x3x3x3]"), std::string::npos) << s.refusal();
  s.step.params.dilation_h = 0;
  EXPECT_NE(s.refusal().find("dilation height 0"), std::string::npos) << s.refusal();
}

TEST(CpuChecks, neg_DepthwiseMultiplierThatDoesNotMatchTheFilter) {
  Step s;
  const int32_t x = s.tensor({1, 4, 4, 3}), w = s.tensor({1, 3, 3, 6}), y = s.tensor({1, 4, 4, 6});
  s.set(CLTRAIN_OP_DEPTHWISE_CONV_2D, CLTRAIN_PHASE_FORWARD, {x, w, -1}, {y});
  s.step.params = conv_params(CLTRAIN_PADDING_SAME);
  s.step.params.depth_multiplier = 2;
  EXPECT_EQ(s.refusal(), "");
  s.step.params.depth_multiplier = 3;
  EXPECT_NE(s.refusal().find("depth multiplier 3"), std::string::npos) << s.refusal();
}

TEST(CpuChecks, neg_PoolWithAFusedActivation) {
  Step s;
  const int32_t x = s.tensor({1, 4, 4, 3}), y = s.tensor({1, 2, 2, 3});
  s.set(CLTRAIN_OP_MAX_POOL_2D, CLTRAIN_PHASE_FORWARD, {x}, {y});
  s.step.params.padding = CLTRAIN_PADDING_VALID;
  s.step.params.filter_h = s.step.params.filter_w = s.step.params.stride_h = s.step.params.stride_w = 2;
  EXPECT_EQ(s.refusal(), "");
  s.step.params.activation = CLTRAIN_ACT_RELU;  // its backward has no y to take the derivative from
  EXPECT_NE(s.refusal().find("only NONE"), std::string::npos) << s.refusal();
}

TEST(CpuChecks, neg_MaxPoolArgmaxOfTheWrongTypeOrWindow) {
  Step s;
  const int32_t x = s.tensor({1, 4, 4, 3}), y = s.tensor({1, 2, 2, 3}), am = s.tensor({1, 2, 2, 3});
  s.tensors[static_cast<size_t>(am)].dtype = CLTRAIN_UINT8;
  s.set(CLTRAIN_OP_MAX_POOL_2D, CLTRAIN_PHASE_FORWARD, {x}, {y, am});
  s.step.params.padding = CLTRAIN_PADDING_VALID;
  s.step.params.filter_h = s.step.params.filter_w = s.step.params.stride_h = s.step.params.stride_w = 2;
  EXPECT_EQ(s.refusal(), "");
  s.tensors[static_cast<size_t>(am)].dtype = CLTRAIN_FLOAT32;  // the argmax is one byte per output
  EXPECT_NE(s.refusal().find("is not uint8"), std::string::npos) << s.refusal();
  s.tensors[static_cast<size_t>(am)].dtype = CLTRAIN_UINT8;
  s.tensors[static_cast<size_t>(y)].dtype = CLTRAIN_UINT8;  // but y is float
  EXPECT_NE(s.refusal().find("is not float32"), std::string::npos) << s.refusal();
  s.tensors[static_cast<size_t>(y)].dtype = CLTRAIN_FLOAT32;
  // A window of more than 256 positions has no byte for its argmax.
  const int32_t bx = s.tensor({1, 17, 17, 1}), by = s.tensor({1, 1, 1, 1}), bam = s.tensor({1, 1, 1, 1});
  s.tensors[static_cast<size_t>(bam)].dtype = CLTRAIN_UINT8;
  s.set(CLTRAIN_OP_MAX_POOL_2D, CLTRAIN_PHASE_FORWARD, {bx}, {by, bam});
  s.step.params.filter_h = s.step.params.filter_w = s.step.params.stride_h = s.step.params.stride_w = 17;
  EXPECT_NE(s.refusal().find("at most 256"), std::string::npos) << s.refusal();
  // The backward needs x or the argmax, and y for a dx_activation.
  const int32_t dy = s.tensor({1, 2, 2, 3}), dx = s.tensor({1, 4, 4, 3});
  s.set(CLTRAIN_OP_MAX_POOL_2D, CLTRAIN_PHASE_BACKWARD, {-1, dy, -1, -1}, {dx});
  s.step.params.filter_h = s.step.params.filter_w = s.step.params.stride_h = s.step.params.stride_w = 2;
  EXPECT_NE(s.refusal().find("needs x or argmax"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_MAX_POOL_2D, CLTRAIN_PHASE_BACKWARD, {-1, dy, am, -1}, {dx});
  EXPECT_EQ(s.refusal(), "");
  s.step.params.dx_activation = CLTRAIN_ACT_RELU;
  EXPECT_NE(s.refusal().find("for dx_activation"), std::string::npos) << s.refusal();
}

TEST(CpuChecks, neg_ConvDxActivationWithoutX) {
  Step s;
  const int32_t x = s.tensor({1, 5, 5, 2}), w = s.tensor({3, 3, 3, 2}), dy = s.tensor({1, 5, 5, 3});
  const int32_t dx = s.tensor({1, 5, 5, 2});
  s.set(CLTRAIN_OP_CONV_2D, CLTRAIN_PHASE_BACKWARD, {x, w, -1, dy}, {dx, -1, -1});
  s.step.params = conv_params(CLTRAIN_PADDING_SAME);
  s.step.params.dx_activation = CLTRAIN_ACT_RELU6;
  EXPECT_EQ(s.refusal(), "");
  s.step.inputs[0] = -1;  // the mask comes from x
  EXPECT_NE(s.refusal().find("dx_activation needs x"), std::string::npos) << s.refusal();
  s.step.inputs[0] = x;
  s.step.params.dx_activation = 77;
  EXPECT_NE(s.refusal().find("dx_activation 77"), std::string::npos) << s.refusal();
}

TEST(CpuChecks, neg_OperandsThatDoNotBroadcast) {
  Step s;
  const int32_t a = s.tensor({2, 3}), b = s.tensor({3, 2}), y = s.tensor({2, 3});
  s.set(CLTRAIN_OP_ADD, CLTRAIN_PHASE_FORWARD, {a, b}, {y});
  EXPECT_NE(s.refusal().find("does not broadcast"), std::string::npos) << s.refusal();
  const int32_t c = s.tensor({2, 1}), big = s.tensor({4, 3});
  s.set(CLTRAIN_OP_ADD, CLTRAIN_PHASE_FORWARD, {a, c}, {big});  // y larger than the broadcast shape
  EXPECT_NE(s.refusal(), "");
}

TEST(CpuChecks, neg_DivBackwardWithoutItsDivisor) {
  Step s;
  const int32_t a = s.tensor({2, 3}), b = s.tensor({2, 3}), dy = s.tensor({2, 3}), da = s.tensor({2, 3}),
                db = s.tensor({2, 3});
  s.set(CLTRAIN_OP_DIV, CLTRAIN_PHASE_BACKWARD, {-1, b, -1, dy}, {da, -1});
  EXPECT_EQ(s.refusal(), "");
  s.set(CLTRAIN_OP_DIV, CLTRAIN_PHASE_BACKWARD, {-1, -1, -1, dy}, {da, -1});
  EXPECT_NE(s.refusal().find("b is missing"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_DIV, CLTRAIN_PHASE_BACKWARD, {-1, b, -1, dy}, {da, db});
  EXPECT_NE(s.refusal().find("a is missing"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_ADD, CLTRAIN_PHASE_BACKWARD, {-1, -1, -1, dy}, {da, db});  // ADD reads neither
  EXPECT_EQ(s.refusal(), "");
  (void)a;
}

// MAXIMUM and MINIMUM send the gradient by comparing a and b: either gradient needs both.
TEST(CpuChecks, neg_MaximumBackwardWithoutBothOperands) {
  Step s;
  const int32_t a = s.tensor({2, 3}), b = s.tensor({1, 3}), dy = s.tensor({2, 3}), da = s.tensor({2, 3}),
                db = s.tensor({1, 3});
  for (int32_t op : {CLTRAIN_OP_MAXIMUM, CLTRAIN_OP_MINIMUM}) {
    s.set(op, CLTRAIN_PHASE_BACKWARD, {a, b, -1, dy}, {da, db});
    EXPECT_EQ(s.refusal(), "");
    s.set(op, CLTRAIN_PHASE_BACKWARD, {a, -1, -1, dy}, {da, -1});
    EXPECT_NE(s.refusal().find("b is missing"), std::string::npos) << s.refusal();
    s.set(op, CLTRAIN_PHASE_BACKWARD, {-1, b, -1, dy}, {-1, db});
    EXPECT_NE(s.refusal().find("a is missing"), std::string::npos) << s.refusal();
  }
}

// A comparison is forward only (no gradient flows through its 0/1 mask), with ADD's broadcasting.
TEST(CpuChecks, neg_ComparisonBackwardOrOperandsThatDoNotBroadcast) {
  Step s;
  const int32_t a = s.tensor({2, 3}), b = s.tensor({1, 3}), c = s.tensor({2, 4}), y = s.tensor({2, 3}),
                dy = s.tensor({2, 3}), da = s.tensor({2, 3});
  for (int32_t op : {CLTRAIN_OP_GREATER, CLTRAIN_OP_GREATER_EQUAL, CLTRAIN_OP_LESS, CLTRAIN_OP_LESS_EQUAL,
                     CLTRAIN_OP_EQUAL, CLTRAIN_OP_NOT_EQUAL}) {
    s.set(op, CLTRAIN_PHASE_FORWARD, {a, b}, {y});
    EXPECT_EQ(s.refusal(), "");
    s.set(op, CLTRAIN_PHASE_FORWARD, {a, c}, {y});
    EXPECT_NE(s.refusal().find("does not broadcast"), std::string::npos) << s.refusal();
    s.set(op, CLTRAIN_PHASE_BACKWARD, {a, b, -1, dy}, {da, -1});
    EXPECT_NE(s.refusal().find("backward"), std::string::npos) << s.refusal();
  }
}

// SUM over an axis the input does not have, as MEAN.
TEST(CpuChecks, neg_SumOverAnAxisOutsideTheRank) {
  Step s;
  const int32_t x = s.tensor({2, 3}), y = s.tensor({2, 1});
  s.set(CLTRAIN_OP_SUM, CLTRAIN_PHASE_FORWARD, {x}, {y});
  s.step.params.axes_mask = 0b10;
  s.step.params.keep_dims = 1;
  EXPECT_EQ(s.refusal(), "");
  s.step.params.axes_mask = 0b1000;
  EXPECT_NE(s.refusal().find("outside"), std::string::npos) << s.refusal();
}

// ACCUMULATE_BOX: a must be the box the cuts leave of acc, and the step is a backward one.
TEST(CpuChecks, neg_AccumulateBoxThatIsNotTheBox) {
  Step s;
  const int32_t a = s.tensor({2, 4}), acc = s.tensor({2, 16}), wide = s.tensor({2, 5});
  s.set(CLTRAIN_OP_ACCUMULATE_BOX, CLTRAIN_PHASE_BACKWARD, {a}, {acc});
  s.step.params.pad_before[1] = 4;
  s.step.params.pad_after[1] = 8;
  EXPECT_EQ(s.refusal(), "");
  s.set(CLTRAIN_OP_ACCUMULATE_BOX, CLTRAIN_PHASE_BACKWARD, {wide}, {acc});
  EXPECT_NE(s.refusal().find("box"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_ACCUMULATE_BOX, CLTRAIN_PHASE_FORWARD, {a}, {acc});
  EXPECT_NE(s.refusal(), "");
  s.set(CLTRAIN_OP_ACCUMULATE_BOX, CLTRAIN_PHASE_BACKWARD, {a}, {acc});
  s.step.params.pad_after[1] = 20;  // cuts more than acc holds
  EXPECT_NE(s.refusal(), "");
}

// The fused recurrent cells: gate parts that are not a permutation, gates that are not four
// (three) parts of the state, a prior gradient of the wrong size.
TEST(CpuChecks, neg_RecurrentCellsWithBadPartsOrShapes) {
  Step s;
  const int32_t z = s.tensor({2, 12}), c = s.tensor({2, 3}), h = s.tensor({2, 3}), dz = s.tensor({2, 12});
  const int32_t odd = s.tensor({2, 10}), dc = s.tensor({2, 3}), dcp = s.tensor({2, 3});
  s.set(CLTRAIN_OP_LSTM_CELL_STATE, CLTRAIN_PHASE_FORWARD, {z, c}, {h});
  for (int k = 0; k < 4; ++k) s.step.params.perm[k] = k;
  EXPECT_EQ(s.refusal(), "");
  s.step.params.perm[3] = 1;  // two gates in one part
  EXPECT_NE(s.refusal().find("permutation"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_LSTM_CELL_OUTPUT, CLTRAIN_PHASE_FORWARD, {odd, c}, {h});
  for (int k = 0; k < 4; ++k) s.step.params.perm[k] = k;
  EXPECT_NE(s.refusal().find("four parts"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_LSTM_CELL_OUTPUT, CLTRAIN_PHASE_BACKWARD, {z, c, dc, dz}, {dz, dcp});  // dc_in is the state's
  for (int k = 0; k < 4; ++k) s.step.params.perm[k] = k;
  EXPECT_NE(s.refusal().find("prior gradient"), std::string::npos) << s.refusal();
  const int32_t xp = s.tensor({2, 9}), hp = s.tensor({2, 9}), wide = s.tensor({2, 12});
  s.set(CLTRAIN_OP_GRU_CELL, CLTRAIN_PHASE_FORWARD, {xp, hp, c}, {h});
  for (int k = 0; k < 6; ++k) s.step.params.perm[k] = k % 3;
  EXPECT_EQ(s.refusal(), "");
  s.step.params.perm[4] = 0;  // the state projection's reset part is its update part
  EXPECT_NE(s.refusal().find("permutation"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_GRU_CELL, CLTRAIN_PHASE_FORWARD, {xp, wide, c}, {h});
  for (int k = 0; k < 6; ++k) s.step.params.perm[k] = k % 3;
  EXPECT_NE(s.refusal().find("state projection"), std::string::npos) << s.refusal();
}

TEST(CpuChecks, neg_AccumulateFcGradsWithShapesThatDoNotFit) {
  Step s;
  const int32_t x = s.tensor({8, 5}), dz = s.tensor({8, 12}), dw = s.tensor({12, 5}), db = s.tensor({12});
  const int32_t short_x = s.tensor({7, 5}), narrow_db = s.tensor({11}), flat_dw = s.tensor({60});
  s.set(CLTRAIN_OP_ACCUMULATE_FC_GRADS, CLTRAIN_PHASE_BACKWARD, {x, dz}, {dw, db});
  EXPECT_EQ(s.refusal(), "");
  s.set(CLTRAIN_OP_ACCUMULATE_FC_GRADS, CLTRAIN_PHASE_BACKWARD, {-1, dz}, {-1, db});  // db alone needs no x
  EXPECT_EQ(s.refusal(), "");
  s.set(CLTRAIN_OP_ACCUMULATE_FC_GRADS, CLTRAIN_PHASE_BACKWARD, {short_x, dz}, {dw, db});  // 7 rows against 8
  EXPECT_NE(s.refusal().find("do not fit"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_ACCUMULATE_FC_GRADS, CLTRAIN_PHASE_BACKWARD, {x, dz}, {dw, narrow_db});
  EXPECT_NE(s.refusal().find("does not fit"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_ACCUMULATE_FC_GRADS, CLTRAIN_PHASE_BACKWARD, {x, dz}, {flat_dw, -1});
  EXPECT_NE(s.refusal().find("must be [M, K]"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_ACCUMULATE_FC_GRADS, CLTRAIN_PHASE_BACKWARD, {x, dz}, {-1, -1});
  EXPECT_NE(s.refusal().find("neither"), std::string::npos) << s.refusal();
}

TEST(CpuChecks, neg_MeanOverAnAxisOutsideTheRank) {
  Step s;
  const int32_t x = s.tensor({2, 3}), y = s.tensor({2});
  s.set(CLTRAIN_OP_MEAN, CLTRAIN_PHASE_FORWARD, {x}, {y});
  s.step.params.axes_mask = 0b10;
  EXPECT_EQ(s.refusal(), "");
  s.step.params.axes_mask = 0b100;
  EXPECT_NE(s.refusal().find("outside"), std::string::npos) << s.refusal();
}

TEST(CpuChecks, neg_NegativePadding) {
  Step s;
  const int32_t x = s.tensor({2, 3}), y = s.tensor({2, 3});
  s.set(CLTRAIN_OP_PAD, CLTRAIN_PHASE_FORWARD, {x}, {y});
  s.step.params.pad_before[1] = -1;
  s.step.params.pad_after[1] = 1;
  EXPECT_NE(s.refusal().find("negative"), std::string::npos) << s.refusal();
}

// The backward of CONCATENATION learns an input's extent only from its dx: one absent dx is
// what the others leave; two absent before a present one leave its place in dy unknown.
TEST(CpuChecks, neg_ConcatenationGradientsThatCannotBePlaced) {
  Step s;
  const int32_t dy = s.tensor({2, 6}), d0 = s.tensor({2, 1}), d2 = s.tensor({2, 3});
  s.step.params.axis = 1;
  s.set(CLTRAIN_OP_CONCATENATION, CLTRAIN_PHASE_BACKWARD, {dy}, {d0, -1, d2});
  EXPECT_EQ(s.refusal(), "");
  s.set(CLTRAIN_OP_CONCATENATION, CLTRAIN_PHASE_BACKWARD, {dy}, {-1, -1, d2});
  EXPECT_NE(s.refusal().find("unknown"), std::string::npos) << s.refusal();
  s.set(CLTRAIN_OP_CONCATENATION, CLTRAIN_PHASE_BACKWARD, {dy}, {d2, -1, -1});  // absent ones last: fine
  EXPECT_EQ(s.refusal(), "");
  s.set(CLTRAIN_OP_CONCATENATION, CLTRAIN_PHASE_BACKWARD, {dy}, {d2, d2, d0});  // 7 > 6
  EXPECT_NE(s.refusal().find("longer"), std::string::npos) << s.refusal();
}

}  // namespace
}  // namespace cltrain
