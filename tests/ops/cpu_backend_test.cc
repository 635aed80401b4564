// The CPU backend's interface: what the ABI promises beyond the ops (planning, errors, sizes).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "backend.h"
#include "cltrain/cltrain_backend.h"
#include "cltrain/cltrain_cpu.h"

namespace cltrain {
namespace {

const cltrain_backend_iface* iface() { return cltrain_cpu_backend_iface(); }

// A two-tensor graph: x [2, 3] -> ReLU -> y, with the given lifetimes.
struct TinyGraph {
  std::vector<cltrain_tensor_desc> tensors;
  std::vector<cltrain_step_desc> steps;
  std::vector<uint8_t> assigned;
  TinyGraph() {
    cltrain_tensor_desc t{};
    t.rank = 2;
    t.dims[0] = 2;
    t.dims[1] = 3;
    t.dtype = CLTRAIN_FLOAT32;
    t.first_step = 0;
    t.last_step = 0;
    t.name = "x";
    tensors.push_back(t);
    t.name = "y";
    tensors.push_back(t);
    t.name = "unused";
    t.first_step = t.last_step = -1;
    tensors.push_back(t);
    cltrain_step_desc s{};
    s.op = CLTRAIN_OP_RELU;
    s.phase = CLTRAIN_PHASE_FORWARD;
    s.num_inputs = 1;
    s.inputs[0] = 0;
    s.num_outputs = 1;
    s.outputs[0] = 1;
    steps.push_back(s);
    assigned.push_back(1);
  }
  cltrain_graph_desc desc() const {
    return cltrain_graph(tensors.data(), static_cast<int32_t>(tensors.size()), steps.data(),
                         static_cast<int32_t>(steps.size()), assigned.data());
  }
};

struct Handle {
  cltrain_backend* b = nullptr;
  Handle() {
    char err[256];
    EXPECT_EQ(iface()->create(nullptr, &b, err, sizeof(err)), CLTRAIN_OK) << err;
  }
  ~Handle() { iface()->destroy(b); }
  std::string error() const { return iface()->last_error(b); }
};

TEST(CpuBackend, Interface) {
  const cltrain_backend_iface* i = iface();
  EXPECT_EQ(i->abi_version, CLTRAIN_BACKEND_ABI_VERSION);
  EXPECT_STREQ(i->name, "cpu");
  EXPECT_TRUE(i->probe && i->list_devices && i->create && i->destroy && i->device_name && i->supports && i->prepare &&
              i->run && i->write_tensor && i->read_tensor && i->sync && i->last_error && i->plan_offsets);
  char err[64] = "x";
  EXPECT_EQ(i->probe(err, sizeof(err)), CLTRAIN_OK);
  char buf[256];
  ASSERT_EQ(i->list_devices(buf, sizeof(buf)), CLTRAIN_OK);
  EXPECT_EQ(std::string(buf).rfind("cpu: host CPU, ", 0), 0u) << buf;
  EXPECT_NE(std::string(buf).find(" threads"), std::string::npos) << buf;
}

TEST(CpuBackend, OpensThroughTheHostLoader) {
  std::string why;
  auto b = open_backend("cpu", default_backend_config(), &why);
  ASSERT_TRUE(b) << why;
  EXPECT_EQ(b->name(), "cpu");
  EXPECT_FALSE(b->device_name().empty());
}

TEST(CpuBackend, PlansOnlyUsedTensorsAndReadsBackWhatWasWritten) {
  Handle h;
  TinyGraph g;
  const cltrain_graph_desc d = g.desc();
  cltrain_memory_report r{};
  r.struct_size = sizeof(r);
  ASSERT_EQ(iface()->prepare(h.b, &d, &r), CLTRAIN_OK) << h.error();
  EXPECT_EQ(r.num_tensors, 2u);
  EXPECT_EQ(r.role_peak[CLTRAIN_ROLE_NON_CONST], 48u);
  EXPECT_EQ(r.pool_bytes, 128u);  // two 24-byte tensors, 64-byte aligned
  int64_t off[3];
  ASSERT_EQ(iface()->plan_offsets(h.b, off, 3), CLTRAIN_OK);
  EXPECT_GE(off[0], 0);
  EXPECT_GE(off[1], 0);
  EXPECT_NE(off[0], off[1]);
  EXPECT_EQ(off[2], -1);
  const float x[6] = {-1, 2, -3, 4, 0, 0.5f};
  ASSERT_EQ(iface()->write_tensor(h.b, 0, x, sizeof(x)), CLTRAIN_OK);
  const int32_t step = 0;
  const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};
  ASSERT_EQ(iface()->run(h.b, &step, 1, &args), CLTRAIN_OK) << h.error();
  float y[6];
  ASSERT_EQ(iface()->read_tensor(h.b, 1, y, sizeof(y)), CLTRAIN_OK);
  const float want[6] = {0, 2, 0, 4, 0, 0.5f};
  EXPECT_EQ(std::memcmp(y, want, sizeof(y)), 0);
  EXPECT_EQ(iface()->sync(h.b), CLTRAIN_OK);
}

// ABI version 2: a host whose structs are shorter gets only what fits (struct_size); stats count
// the steps run (no device: no bytes, no waits) until reset; profiling times each step run.
TEST(CpuBackend, FillsOnlyWhatFitsAndCountsSteps) {
  Handle h;
  TinyGraph g;
  const cltrain_graph_desc d = g.desc();
  cltrain_memory_report r{};
  r.struct_size = offsetof(cltrain_memory_report, lower_bound);  // an older, shorter report
  r.lower_bound = r.num_tensors = 777;
  ASSERT_EQ(iface()->prepare(h.b, &d, &r), CLTRAIN_OK) << h.error();
  EXPECT_EQ(r.pool_bytes, 128u);
  EXPECT_EQ(r.lower_bound, 777u);
  EXPECT_EQ(r.num_tensors, 777u);
  const float x[6] = {-1, 2, -3, 4, 0, 0.5f};
  ASSERT_EQ(iface()->write_tensor(h.b, 0, x, sizeof(x)), CLTRAIN_OK);
  ASSERT_EQ(iface()->set_profiling(h.b, 1), CLTRAIN_OK);
  const int32_t step = 0;
  cltrain_run_args args{};
  args.struct_size = offsetof(cltrain_run_args, learning_rate);  // learning_rate unknown: 0
  args.iteration = 1;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(iface()->run(h.b, &step, 1, &args), CLTRAIN_OK) << h.error();
  cltrain_run_stats st{};
  st.struct_size = sizeof(st);
  ASSERT_EQ(iface()->stats(h.b, &st), CLTRAIN_OK);
  EXPECT_EQ(st.steps_run, 3u);
  EXPECT_EQ(st.launches, 3u);
  EXPECT_EQ(st.bytes_to_device + st.bytes_from_device + st.blocking_waits + st.buffer_allocations, 0u);
  const void* raw = nullptr;
  uint32_t row_size = 0;
  int32_t n = 0;
  ASSERT_EQ(iface()->profile(h.b, &raw, &row_size, &n), CLTRAIN_OK);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(row_size, sizeof(cltrain_kernel_profile));
  const auto* rows = static_cast<const cltrain_kernel_profile*>(raw);
  EXPECT_EQ(rows[0].step, 0);
  EXPECT_EQ(rows[0].calls, 3);
  EXPECT_GE(rows[0].ms, 0.0);
  ASSERT_EQ(iface()->reset_stats(h.b), CLTRAIN_OK);
  ASSERT_EQ(iface()->stats(h.b, &st), CLTRAIN_OK);
  EXPECT_EQ(st.steps_run, 0u);
  ASSERT_EQ(iface()->profile(h.b, &raw, &row_size, &n), CLTRAIN_OK);
  EXPECT_EQ(n, 0);
}

TEST(CpuBackend, neg_SizeMismatchAndUnplannedTensor) {
  Handle h;
  TinyGraph g;
  const cltrain_graph_desc d = g.desc();
  ASSERT_EQ(iface()->prepare(h.b, &d, nullptr), CLTRAIN_OK);
  float buf[8] = {};
  EXPECT_EQ(iface()->write_tensor(h.b, 0, buf, 20), CLTRAIN_INVALID);
  EXPECT_NE(h.error().find("24 bytes, not 20"), std::string::npos) << h.error();
  EXPECT_EQ(iface()->read_tensor(h.b, 1, buf, 32), CLTRAIN_INVALID);
  EXPECT_EQ(iface()->read_tensor(h.b, 2, buf, 24), CLTRAIN_INVALID);
  EXPECT_NE(h.error().find("not planned"), std::string::npos) << h.error();
  EXPECT_EQ(iface()->read_tensor(h.b, 7, buf, 24), CLTRAIN_INVALID);
  EXPECT_EQ(iface()->write_tensor(h.b, -1, buf, 24), CLTRAIN_INVALID);
}

TEST(CpuBackend, neg_UseBeforePrepareAndPrepareTwice) {
  Handle h;
  float buf[6] = {};
  EXPECT_EQ(iface()->write_tensor(h.b, 0, buf, sizeof(buf)), CLTRAIN_INVALID);
  const int32_t step = 0;
  const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};
  EXPECT_EQ(iface()->run(h.b, &step, 1, &args), CLTRAIN_INVALID);
  TinyGraph g;
  const cltrain_graph_desc d = g.desc();
  ASSERT_EQ(iface()->prepare(h.b, &d, nullptr), CLTRAIN_OK);
  EXPECT_EQ(iface()->prepare(h.b, &d, nullptr), CLTRAIN_INVALID);
}

TEST(CpuBackend, neg_StepOutsideALifetime) {
  Handle h;
  TinyGraph g;
  g.tensors[1].first_step = 1;  // y starts after the step that writes it
  g.tensors[1].last_step = 1;
  g.steps.push_back(g.steps[0]);
  g.assigned.push_back(0);
  const cltrain_graph_desc d = g.desc();
  EXPECT_EQ(iface()->prepare(h.b, &d, nullptr), CLTRAIN_INVALID);
  EXPECT_NE(h.error().find("outside its lifetime"), std::string::npos) << h.error();
}

TEST(CpuBackend, neg_BadShapes) {
  Handle h;
  TinyGraph g;
  g.tensors[1].dims[1] = 4;  // y has 8 elements, x 6
  const cltrain_graph_desc d = g.desc();
  EXPECT_EQ(iface()->prepare(h.b, &d, nullptr), CLTRAIN_INVALID);
  EXPECT_NE(h.error().find("ReLU forward"), std::string::npos) << h.error();
  const cltrain_graph_desc whole = g.desc();
  EXPECT_EQ(iface()->supports(h.b, &whole, 0, 1), 0);
}

TEST(CpuBackend, neg_UnassignedStepAndBadRunArgs) {
  Handle h;
  TinyGraph g;
  g.assigned[0] = 0;
  const cltrain_graph_desc d = g.desc();
  ASSERT_EQ(iface()->prepare(h.b, &d, nullptr), CLTRAIN_OK);
  const int32_t step = 0;
  const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};
  EXPECT_EQ(iface()->run(h.b, &step, 1, &args), CLTRAIN_INVALID);
  EXPECT_NE(h.error().find("not assigned"), std::string::npos) << h.error();
  EXPECT_EQ(iface()->run(h.b, &step, 1, nullptr), CLTRAIN_INVALID);
}

TEST(CpuBackend, neg_InitialDataOfTheWrongSize) {
  Handle h;
  TinyGraph g;
  const float w[5] = {};
  g.tensors[0].data = w;
  g.tensors[0].data_bytes = sizeof(w);
  const cltrain_graph_desc d = g.desc();
  EXPECT_EQ(iface()->prepare(h.b, &d, nullptr), CLTRAIN_INVALID);
  EXPECT_NE(h.error().find("initial data"), std::string::npos) << h.error();
}

TEST(CpuBackend, neg_OldGraphStruct) {
  Handle h;
  TinyGraph g;
  cltrain_graph_desc d = g.desc();
  d.struct_size = 8;
  EXPECT_EQ(iface()->prepare(h.b, &d, nullptr), CLTRAIN_INVALID);
}

TEST(CpuBackend, neg_AdamNeedsAOneBasedIteration) {
  Handle h;
  TinyGraph g;
  for (auto& t : g.tensors) t.first_step = 0, t.last_step = 0;
  cltrain_step_desc& s = g.steps[0];
  s.op = CLTRAIN_OP_UPDATE_ADAM;
  s.phase = CLTRAIN_PHASE_UPDATE;
  s.num_outputs = 3;
  s.outputs[0] = 1;
  s.outputs[1] = 2;
  s.outputs[2] = 0;  // reuses x as v: only the iteration matters here
  s.inputs[0] = 0;
  s.params.beta1 = 0.9f;
  s.params.beta2 = 0.999f;
  const cltrain_graph_desc d = g.desc();
  ASSERT_EQ(iface()->prepare(h.b, &d, nullptr), CLTRAIN_OK) << h.error();
  const int32_t step = 0;
  const cltrain_run_args args{sizeof(cltrain_run_args), 0, 0.0f};
  EXPECT_EQ(iface()->run(h.b, &step, 1, &args), CLTRAIN_ERROR);
  EXPECT_NE(h.error().find("iteration 0"), std::string::npos) << h.error();
}

TEST(CpuBackend, SupportsEveryOpOfTheList) {
  // supports() is capability: a well-formed step of each op for float32. The op suite covers
  // this per case; here only the rejection of what is outside the list.
  Handle h;
  TinyGraph g;
  const cltrain_step_desc step = g.steps[0];
  auto supports = [&](const cltrain_step_desc& s) {
    const cltrain_graph_desc d =
        cltrain_graph(g.tensors.data(), static_cast<int32_t>(g.tensors.size()), &s, 1, nullptr);
    return iface()->supports(h.b, &d, 0, 1);
  };
  cltrain_step_desc s = step;
  EXPECT_EQ(supports(s), 1);
  s.op = CLTRAIN_OP_COUNT;
  EXPECT_EQ(supports(s), 0);
  s = step;
  s.phase = CLTRAIN_PHASE_UPDATE;
  EXPECT_EQ(supports(s), 0);
  g.tensors[0].dtype = CLTRAIN_INT32;
  EXPECT_EQ(supports(step), 0);
  EXPECT_NE(h.error().find("float32"), std::string::npos) << h.error();
}

}  // namespace
}  // namespace cltrain
