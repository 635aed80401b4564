// The plan's schedules (plan.h): decided once at prepare, replayed by every run. On one backend a
// step is one run between the host's writes and reads; with the optimizer's updates off OpenCL the
// weights they write go back to OpenCL at the end of the step, so the next step and the host read
// current values from either holder.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <set>
#include <vector>

#include "backend.h"
#include "model/builder.h"
#include "session.h"

namespace cltrain {
namespace {

using Kinds = std::vector<ScheduleAction::Kind>;

Kinds kinds(const Schedule& s) {
  Kinds k;
  for (const ScheduleAction& a : s.actions) k.push_back(a.kind);
  return k;
}

std::vector<int32_t> range(int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::unique_ptr<Session> mlp_session(bool with_opencl, std::string* why) {
  std::vector<std::unique_ptr<Backend>> backends;
  if (with_opencl) {
    auto b = open_plugin_file(CLTRAIN_OPENCL_PLUGIN, default_backend_config(), why);
    if (!b) return nullptr;
    backends.push_back(std::move(b));
  }
  backends.push_back(open_backend("cpu", default_backend_config(), why));
  TrainOptions o;
  o.optimizer = CLTRAIN_OP_UPDATE_ADAM;
  auto s = std::make_unique<Session>(build_training_graph(make_named_model("mlp", 4), o), std::move(backends));
  s->prepare();
  return s;
}

TEST(Schedule, OneBackendRunsEachModeOnce) {
  std::string why;
  auto s = mlp_session(false, &why);
  ASSERT_TRUE(s) << why;
  const TrainingGraph& g = s->graph();
  using A = ScheduleAction;
  const Schedule& train = s->plan().schedule(RunMode::kTrain);
  // The steps up to the checks, the host's reads, the gate on the finite flag, the updates.
  ASSERT_EQ(kinds(train), (Kinds{A::kWrite, A::kWrite, A::kRun, A::kRead, A::kRead, A::kGate, A::kRun}));
  EXPECT_EQ(train.actions[0].tensor, g.input);
  EXPECT_EQ(train.actions[1].tensor, g.expected);
  const int32_t first_update = train.actions[5].step;
  EXPECT_EQ(g.steps[static_cast<size_t>(first_update)].phase, CLTRAIN_PHASE_UPDATE);
  EXPECT_EQ(g.steps[static_cast<size_t>(first_update) - 1].op, CLTRAIN_OP_CHECK_FINITE);
  EXPECT_EQ(train.actions[2].steps, range(first_update));
  EXPECT_EQ(train.actions[3].tensor, g.loss);
  EXPECT_EQ(train.actions[4].tensor, g.prediction);
  EXPECT_EQ(train.actions[5].tensor, g.finite_flag);
  std::vector<int32_t> updates;
  for (int32_t k = first_update; k < static_cast<int32_t>(g.steps.size()); ++k) updates.push_back(k);
  EXPECT_EQ(train.actions[6].steps, updates);
  const Schedule& eval = s->plan().schedule(RunMode::kEvaluate);
  ASSERT_EQ(kinds(eval), (Kinds{A::kWrite, A::kWrite, A::kRun, A::kRead, A::kRead}));
  EXPECT_EQ(eval.actions[2].steps, range(g.loss_step + 1));
  const Schedule& predict = s->plan().schedule(RunMode::kPredict);
  ASSERT_EQ(kinds(predict), (Kinds{A::kWrite, A::kRun, A::kRead}));
  EXPECT_EQ(predict.actions[1].steps, range(g.num_forward));
}

// Adam filtered off OpenCL: the forward and backward run there, the updates on the CPU. The
// train schedule ends with a copy of each weight the CPU updated to OpenCL (which reads it); three
// steps then train as on the CPU alone, and the weights read back (from OpenCL, the first holder)
// are the updated ones.
TEST(Schedule, UpdatesOffOpenclCopyTheWeightsBackAtTheEnd) {
  std::string why;
  auto cpu = mlp_session(false, &why);
  ASSERT_TRUE(cpu) << why;
  setenv("CLTRAIN_OPENCL_OP_FILTER", "^Adam", 1);
  auto mixed = mlp_session(true, &why);
  unsetenv("CLTRAIN_OPENCL_OP_FILTER");
  if (!mixed && why.find("not available") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_TRUE(mixed) << why;
  const TrainingGraph& g = mixed->graph();
  const Schedule& train = mixed->plan().schedule(RunMode::kTrain);
  std::set<int32_t> copied_back;
  for (size_t i = train.actions.size(); i-- > 0 && train.actions[i].kind == ScheduleAction::kCopy;) {
    EXPECT_EQ(train.actions[i].from, 1);  // the CPU
    EXPECT_EQ(train.actions[i].to, 0);    // OpenCL
    copied_back.insert(train.actions[i].tensor);
  }
  EXPECT_EQ(copied_back, std::set<int32_t>(g.weights.begin(), g.weights.end()));
  for (const ScheduleAction& a : mixed->plan().schedule(RunMode::kPredict).actions)
    EXPECT_NE(a.kind, ScheduleAction::kCopy) << "prediction copies tensor " << a.tensor;

  const uint64_t in = cpu->input_elements(), out = cpu->prediction_elements();
  std::vector<float> x(in), y(out, 0.0f);
  for (int step = 1; step <= 3; ++step) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i + 11 * step));
    for (size_t r = 0; r < 4; ++r) y[r * (out / 4) + (r + step) % (out / 4)] = 1.0f;
    const float want = cpu->train_step(x.data(), y.data(), nullptr);
    const float got = mixed->train_step(x.data(), y.data(), nullptr);
    EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << "step " << step;
    std::fill(y.begin(), y.end(), 0.0f);
  }
  for (int32_t w : g.weights) {
    const std::vector<float> a = mixed->read_persistent(w), b = cpu->read_persistent(w);
    ASSERT_EQ(a.size(), b.size());
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
    EXPECT_LT(worst, 1e-5) << g.name_of(w);
  }
}

}  // namespace
}  // namespace cltrain
