#include "training_graph.h"

#include <gtest/gtest.h>

#include "backend.h"
#include "model/builder.h"
#include "session.h"

namespace cltrain {
namespace {

TEST(TrainingGraph, MlpStepsAndRoles) {
  const Model m = make_named_model("mlp", 4);
  const TrainingGraph g = build_training_graph(m, TrainOptions{});
  ASSERT_EQ(g.num_forward, 3);
  EXPECT_EQ(g.loss_step, 3);
  EXPECT_EQ(g.steps[3].op, CLTRAIN_OP_LOSS_CCE);
  EXPECT_EQ(g.steps[4].op, CLTRAIN_OP_LOSS_CCE);
  EXPECT_EQ(g.steps[4].phase, CLTRAIN_PHASE_BACKWARD);
  // Four weights, each updated once with Adam (m and v are optimizer tensors).
  EXPECT_EQ(g.weights.size(), 4u);
  int updates = 0;
  for (const auto& s : g.steps) updates += s.op == CLTRAIN_OP_UPDATE_ADAM;
  EXPECT_EQ(updates, 4);
  int optimizer_tensors = 0;
  for (const auto& t : g.tensors) optimizer_tensors += t.role == CLTRAIN_ROLE_OPTIMIZER;
  EXPECT_EQ(optimizer_tensors, 8);
  // The first layer's backward computes no gradient for the model input.
  const auto& last = g.steps[g.steps.size() - 3];
  ASSERT_EQ(last.op, CLTRAIN_OP_FULLY_CONNECTED);
  ASSERT_EQ(last.phase, CLTRAIN_PHASE_BACKWARD);
  EXPECT_EQ(last.outputs[0], -1);
  // Each weight's update follows right after the step that completes its gradient.
  for (size_t s = 0; s < g.steps.size(); ++s) {
    if (g.steps[s].phase != CLTRAIN_PHASE_UPDATE) continue;
    const int32_t grad = g.steps[s].inputs[0];
    size_t producer = s;
    while (producer-- > 0) {
      bool writes = false;
      for (int i = 0; i < g.steps[producer].num_outputs; ++i) writes |= g.steps[producer].outputs[i] == grad;
      if (writes) break;
    }
    EXPECT_EQ(g.steps[producer].phase, CLTRAIN_PHASE_BACKWARD);
    EXPECT_LE(s - producer, 2u) << "update of " << g.name_of(g.steps[s].outputs[0]);
  }
}

TEST(TrainingGraph, SgdHasNoOptimizerTensors) {
  const Model m = make_named_model("mlp", 2);
  TrainOptions o;
  o.optimizer = CLTRAIN_OP_UPDATE_SGD;
  const TrainingGraph g = build_training_graph(m, o);
  for (const auto& t : g.tensors) EXPECT_NE(t.role, CLTRAIN_ROLE_OPTIMIZER);
}

TEST(Session, LifetimesOnCpu) {
  const Model m = make_named_model("mlp", 8);
  std::vector<std::unique_ptr<Backend>> backends;
  std::string why;
  backends.push_back(open_backend("cpu", default_backend_config(), &why));
  ASSERT_TRUE(backends[0]) << why;
  Session s(build_training_graph(m, TrainOptions{}), std::move(backends));
  s.prepare();
  const auto& tensors = s.backend_tensors()[0];
  const int32_t last = static_cast<int32_t>(s.graph().steps.size()) - 1;
  for (const auto& t : tensors) {
    if (t.first_step < 0) continue;
    if (t.persistent) {
      EXPECT_EQ(t.first_step, 0);
      EXPECT_EQ(t.last_step, last);
    }
    if (t.role == CLTRAIN_ROLE_GRADIENT) EXPECT_LE(t.last_step - t.first_step, 2) << t.name;
  }
  EXPECT_EQ(tensors[static_cast<size_t>(s.graph().input)].first_step, 0);
  EXPECT_EQ(tensors[static_cast<size_t>(s.graph().loss)].last_step, last);
  ASSERT_EQ(s.memory().size(), 1u);
  const auto& r = s.memory()[0].report;
  EXPECT_GE(r.pool_bytes, r.lower_bound);
  EXPECT_EQ(r.role_peak[CLTRAIN_ROLE_TRAINABLE], 101770u * 4);
  EXPECT_EQ(r.role_peak[CLTRAIN_ROLE_OPTIMIZER], 2 * 101770u * 4);
}

}  // namespace
}  // namespace cltrain
