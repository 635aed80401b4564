// flops_of_step: the counts of flops.h's convention on small hand-checked steps, and every op of
// the list counted on a real training graph.
#include <gtest/gtest.h>

#include <vector>

#include "../opencl/plugin_fixture.h"
#include "flops.h"
#include "model/builder.h"
#include "training_graph.h"

namespace cltrain {
namespace {

using cltrain_test::TinyGraph;
constexpr cltrain_role kAct = CLTRAIN_ROLE_NON_CONST;

TEST(Flops, FullyConnectedCountsMultiplyAddsTwice) {
  TinyGraph g;
  const int x = g.tensor("x", {4, 3}, kAct), w = g.tensor("W", {5, 3}, kAct), b = g.tensor("b", {5}, kAct);
  const int y = g.tensor("y", {4, 5}, kAct), dy = g.tensor("dy", {4, 5}, kAct), dx = g.tensor("dx", {4, 3}, kAct);
  const int dw = g.tensor("dW", {5, 3}, kAct), db = g.tensor("db", {5}, kAct);
  cltrain_step_desc& fwd = g.steps[g.step(CLTRAIN_OP_FULLY_CONNECTED, CLTRAIN_PHASE_FORWARD, {x, w, b}, {y})];
  EXPECT_EQ(flops_of_step(fwd, g.tensors), 2u * 4 * 5 * 3 + 4 * 5);  // products, bias
  fwd.params.activation = CLTRAIN_ACT_RELU;
  EXPECT_EQ(flops_of_step(fwd, g.tensors), 2u * 4 * 5 * 3 + 4 * 5 + 4 * 5);
  cltrain_step_desc& bwd =
      g.steps[g.step(CLTRAIN_OP_FULLY_CONNECTED, CLTRAIN_PHASE_BACKWARD, {x, w, -1, dy}, {dx, dw, db})];
  EXPECT_EQ(flops_of_step(bwd, g.tensors), 2u * 60 + 2u * 60 + 20);  // dx, dW, db
  bwd.outputs[0] = -1;                                               // dx not asked for
  EXPECT_EQ(flops_of_step(bwd, g.tensors), 2u * 60 + 20);
}

TEST(Flops, ConvolutionCountsOnlyTapsInsideTheInput) {
  // x [2, 4, 4, 3], W [8, 3, 3, 3], SAME, stride 1: per axis (output, tap) pairs inside the
  // input are 2 + 3 + 3 + 2 = 10, so 100 of the 144 window positions.
  TinyGraph g;
  const int x = g.tensor("x", {2, 4, 4, 3}, kAct), w = g.tensor("W", {8, 3, 3, 3}, kAct);
  const int b = g.tensor("b", {8}, kAct), y = g.tensor("y", {2, 4, 4, 8}, kAct);
  cltrain_op_params p{};
  p.padding = CLTRAIN_PADDING_SAME;
  p.stride_h = p.stride_w = p.dilation_h = p.dilation_w = 1;
  cltrain_step_desc& s = g.steps[g.step(CLTRAIN_OP_CONV_2D, CLTRAIN_PHASE_FORWARD, {x, w, b}, {y}, p)];
  EXPECT_EQ(flops_of_step(s, g.tensors), 2u * 2 * 8 * 3 * 100 + 2 * 4 * 4 * 8);
  s.params.padding = CLTRAIN_PADDING_VALID;  // 2 x 2 outputs, every tap inside
  EXPECT_EQ(flops_of_step(s, g.tensors), 2u * 2 * 8 * 3 * (2 * 3) * (2 * 3) + 2 * 4 * 4 * 8);
  // Backward, SAME: dx and dW each the forward's products, db a sum over y; the producer's ReLU
  // derivative (dx_activation) once per element of dx.
  const int dy = g.tensor("dy", {2, 4, 4, 8}, kAct), dx = g.tensor("dx", {2, 4, 4, 3}, kAct);
  const int dw = g.tensor("dW", {8, 3, 3, 3}, kAct), db = g.tensor("db", {8}, kAct);
  cltrain_step_desc& bwd = g.steps[g.step(CLTRAIN_OP_CONV_2D, CLTRAIN_PHASE_BACKWARD, {x, w, -1, dy}, {dx, dw, db}, p)];
  EXPECT_EQ(flops_of_step(bwd, g.tensors), 2 * (2u * 2 * 8 * 3 * 100) + 2 * 4 * 4 * 8);
  bwd.params.dx_activation = CLTRAIN_ACT_RELU;
  EXPECT_EQ(flops_of_step(bwd, g.tensors), 2 * (2u * 2 * 8 * 3 * 100) + 2 * 4 * 4 * 8 + 2 * 4 * 4 * 3);
}

TEST(Flops, UpdatesCountPerUpdatedElement) {
  TinyGraph g;
  const int grad = g.tensor("g", {6, 4}, kAct), w = g.tensor("W", {6, 4}, CLTRAIN_ROLE_TRAINABLE);
  const int m = g.tensor("m", {12}, CLTRAIN_ROLE_OPTIMIZER), v = g.tensor("v", {12}, CLTRAIN_ROLE_OPTIMIZER);
  cltrain_step_desc& adam = g.steps[g.step(CLTRAIN_OP_UPDATE_ADAM, CLTRAIN_PHASE_UPDATE, {grad}, {w, m, v})];
  EXPECT_EQ(flops_of_step(adam, g.tensors), 12u * 24);
  adam.params.update_count = 12;  // half the rows
  EXPECT_EQ(flops_of_step(adam, g.tensors), 12u * 12);
  const int sgd = g.step(CLTRAIN_OP_UPDATE_SGD, CLTRAIN_PHASE_UPDATE, {grad}, {w});
  EXPECT_EQ(flops_of_step(g.steps[static_cast<size_t>(sgd)], g.tensors), 2u * 24);
}

// Every step of a real training graph has a count, and only data movement counts nothing.
TEST(Flops, EveryStepOfMobileNetV2) {
  const Model m = make_named_model("mobilenetv2", 2);
  TrainOptions o;
  const TrainingGraph g = build_training_graph(m, o);
  uint64_t total = 0;
  for (const cltrain_step_desc& s : g.steps) {
    const uint64_t f = flops_of_step(s, g.tensors);
    const bool free = s.op == CLTRAIN_OP_RESHAPE || s.op == CLTRAIN_OP_PAD || s.op == CLTRAIN_OP_CONCATENATION ||
                      s.op == CLTRAIN_OP_FILL;  // the finite flag's 0
    if (free)
      EXPECT_EQ(f, 0u) << cltrain_op_name(s.op);
    else
      EXPECT_GT(f, 0u) << cltrain_op_name(s.op) << " phase " << s.phase;
    total += f;
  }
  EXPECT_EQ(total, flops_of_steps(g.steps, g.tensors, 0, g.steps.size()));
  // Forward alone: MobileNetV2 at 224x224 is about 0.3 G multiply-adds per image.
  const double forward = static_cast<double>(flops_of_steps(g.steps, g.tensors, 0, static_cast<size_t>(g.num_forward)));
  EXPECT_GT(forward / 2, 2 * 0.25e9);
  EXPECT_LT(forward / 2, 2 * 0.40e9);
}

}  // namespace
}  // namespace cltrain
