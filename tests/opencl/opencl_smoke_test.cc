// Smoke test of the OpenCL plugin through the plugin ABI only: load, probe, create, a tiny
// training graph (FullyConnected 4->3 with ReLU, softmax, CCE loss, Adam) against a double
// precision reference computed here, the op filter and bad device indices. The full op suite
// lives elsewhere.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"

namespace {

// |got - want| <= 1e-5 * max(1, |want|): relative above magnitude 1, absolute below.
constexpr double kTolerance = 1e-5;

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], kTolerance * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
}

cltrain_step_desc fc_step(int activation) {
  cltrain_step_desc s{};
  s.op = CLTRAIN_OP_FULLY_CONNECTED;
  s.phase = CLTRAIN_PHASE_FORWARD;
  s.num_inputs = 3;
  s.inputs[0] = 0, s.inputs[1] = 1, s.inputs[2] = 2;
  s.num_outputs = 1;
  s.outputs[0] = 3;
  s.params.activation = activation;
  return s;
}

std::vector<cltrain_tensor_desc> fc_tensors() {
  std::vector<cltrain_tensor_desc> t(4);
  const int dims[4][2] = {{2, 4}, {3, 4}, {3, 0}, {2, 3}};
  for (int i = 0; i < 4; ++i) {
    t[i].rank = dims[i][1] ? 2 : 1;
    t[i].dims[0] = dims[i][0];
    t[i].dims[1] = dims[i][1];
    t[i].dtype = CLTRAIN_FLOAT32;
    t[i].first_step = t[i].last_step = -1;
  }
  return t;
}

class OpenCLPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(CLTRAIN_OPENCL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto entry = reinterpret_cast<cltrain_backend_entry_fn>(dlsym(handle_, CLTRAIN_BACKEND_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr) << dlerror();
    api_ = entry();
    ASSERT_NE(api_, nullptr);
    char err[512] = "";
    if (api_->probe && api_->probe(err, sizeof err) == CLTRAIN_UNAVAILABLE)
      GTEST_SKIP() << "OpenCL not available: " << err;
  }
  void TearDown() override {
    if (backend_) api_->destroy(backend_);
    // The plugin stays loaded: CLBlast and the OpenCL ICD do not all unload cleanly.
  }

  int supports_fc(int activation, const std::vector<cltrain_tensor_desc>& t) {
    const cltrain_step_desc s = fc_step(activation);
    return api_->supports(backend_, &s, t.data(), 1);
  }

  cltrain_status create(int device_index, std::string* err = nullptr) {
    cltrain_backend_config config{};
    config.struct_size = sizeof config;
    config.device_index = device_index;
    char buf[512] = "";
    const cltrain_status st = api_->create(&config, &backend_, buf, sizeof buf);
    if (err) *err = buf;
    return st;
  }

  void* handle_ = nullptr;
  const cltrain_backend_iface* api_ = nullptr;
  cltrain_backend* backend_ = nullptr;
};

// A graph desc built by hand; lifetimes from the steps that use each tensor.
struct TinyGraph {
  std::vector<cltrain_tensor_desc> tensors;
  std::vector<cltrain_step_desc> steps;
  std::vector<uint8_t> assigned;

  int tensor(const char* name, std::vector<int> dims, cltrain_role role, const std::vector<float>* data = nullptr) {
    cltrain_tensor_desc t{};
    t.name = name;
    t.rank = static_cast<int32_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) t.dims[i] = dims[i];
    t.dtype = CLTRAIN_FLOAT32;
    t.role = role;
    t.first_step = t.last_step = -1;
    t.persistent = role == CLTRAIN_ROLE_TRAINABLE || role == CLTRAIN_ROLE_OPTIMIZER;
    if (data) {
      t.data = data->data();
      t.data_bytes = data->size() * sizeof(float);
    }
    tensors.push_back(t);
    return static_cast<int>(tensors.size()) - 1;
  }
  int step(cltrain_op op, cltrain_phase phase, std::vector<int> in, std::vector<int> out,
           cltrain_op_params params = {}) {
    cltrain_step_desc s{};
    s.op = op;
    s.phase = phase;
    s.model_op = -1;
    s.num_inputs = static_cast<int32_t>(in.size());
    for (size_t i = 0; i < in.size(); ++i) s.inputs[i] = in[i];
    s.num_outputs = static_cast<int32_t>(out.size());
    for (size_t i = 0; i < out.size(); ++i) s.outputs[i] = out[i];
    s.params = params;
    steps.push_back(s);
    assigned.push_back(1);
    return static_cast<int>(steps.size()) - 1;
  }
  // The host writes `host_written` before step 0 and reads `host_read` after the last step.
  void set_lifetimes(const std::vector<int>& host_written, const std::vector<int>& host_read) {
    const int last = static_cast<int>(steps.size()) - 1;
    auto touch = [&](int id, int s) {
      if (id < 0) return;
      auto& t = tensors[id];
      t.first_step = t.first_step < 0 ? s : std::min(t.first_step, s);
      t.last_step = std::max(t.last_step, s);
    };
    for (int s = 0; s <= last; ++s) {
      for (int i = 0; i < steps[s].num_inputs; ++i) touch(steps[s].inputs[i], s);
      for (int i = 0; i < steps[s].num_outputs; ++i) touch(steps[s].outputs[i], s);
    }
    for (int id : host_written) touch(id, 0);
    for (int id : host_read) touch(id, last);
    for (auto& t : tensors)
      if (t.persistent) t.first_step = 0, t.last_step = last;
  }
  cltrain_graph_desc desc() const {
    cltrain_graph_desc g{};
    g.struct_size = sizeof g;
    g.num_tensors = static_cast<int32_t>(tensors.size());
    g.tensors = tensors.data();
    g.num_steps = static_cast<int32_t>(steps.size());
    g.steps = steps.data();
    g.assigned = assigned.data();
    return g;
  }
};

using Matrix = std::vector<std::vector<double>>;

// The reference: one iteration of the tiny model in double precision.
struct Reference {
  Matrix W;
  std::vector<double> b;
  Matrix mW, vW;
  std::vector<double> mb, vb;
  Matrix y, s, dx, dW;
  std::vector<double> db;
  double loss = 0;

  void iterate(const Matrix& x, const Matrix& e, int t, double lr, double b1, double b2, double eps) {
    const size_t N = x.size(), M = W.size(), K = W[0].size();
    y.assign(N, std::vector<double>(M));
    s = y;
    for (size_t n = 0; n < N; ++n) {
      for (size_t m = 0; m < M; ++m) {
        double z = b[m];
        for (size_t k = 0; k < K; ++k) z += x[n][k] * W[m][k];
        y[n][m] = std::max(z, 0.0);
      }
      const double mx = *std::max_element(y[n].begin(), y[n].end());
      double sum = 0;
      for (size_t m = 0; m < M; ++m) sum += s[n][m] = std::exp(y[n][m] - mx);
      for (size_t m = 0; m < M; ++m) s[n][m] /= sum;
    }
    loss = 0;
    Matrix dz(N, std::vector<double>(M));
    for (size_t n = 0; n < N; ++n) {
      std::vector<double> ds(M);
      double dot = 0;
      for (size_t m = 0; m < M; ++m) {
        const double p = std::clamp(s[n][m], 1e-7, 1 - 1e-7);
        loss += -e[n][m] * std::log(p) / N;
        ds[m] = -e[n][m] / p / N;
        dot += ds[m] * s[n][m];
      }
      for (size_t m = 0; m < M; ++m) dz[n][m] = y[n][m] > 0 ? s[n][m] * (ds[m] - dot) : 0.0;
    }
    dW.assign(M, std::vector<double>(K, 0.0));
    db.assign(M, 0.0);
    dx.assign(N, std::vector<double>(K, 0.0));
    for (size_t n = 0; n < N; ++n)
      for (size_t m = 0; m < M; ++m) {
        db[m] += dz[n][m];
        for (size_t k = 0; k < K; ++k) {
          dW[m][k] += dz[n][m] * x[n][k];
          dx[n][k] += dz[n][m] * W[m][k];
        }
      }
    const double step = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    auto adam = [&](double& w, double& m, double& v, double g) {
      m = b1 * m + (1 - b1) * g;
      v = b2 * v + (1 - b2) * g * g;
      w -= step * m / (std::sqrt(v) + eps);
    };
    for (size_t m = 0; m < M; ++m) {
      for (size_t k = 0; k < K; ++k) adam(W[m][k], mW[m][k], vW[m][k], dW[m][k]);
      adam(b[m], mb[m], vb[m], db[m]);
    }
  }
};

std::vector<double> flat(const Matrix& m) {
  std::vector<double> v;
  for (const auto& r : m) v.insert(v.end(), r.begin(), r.end());
  return v;
}

std::vector<float> to_float(const Matrix& m) {
  std::vector<float> v;
  for (const auto& r : m)
    for (double d : r) v.push_back(static_cast<float>(d));
  return v;
}

TEST_F(OpenCLPlugin, AbiVersionAndName) {
  EXPECT_EQ(api_->abi_version, CLTRAIN_BACKEND_ABI_VERSION);
  EXPECT_STREQ(api_->name, "opencl");
  for (auto fn : {(void*)api_->probe, (void*)api_->list_devices, (void*)api_->create, (void*)api_->destroy,
                  (void*)api_->device_name, (void*)api_->supports, (void*)api_->prepare, (void*)api_->run,
                  (void*)api_->write_tensor, (void*)api_->read_tensor, (void*)api_->sync,
                  (void*)api_->last_error, (void*)api_->plan_offsets})
    EXPECT_NE(fn, nullptr);
  // Only the entry point is exported.
  EXPECT_EQ(dlsym(handle_, "_ZN7cltrain12plan_memoryERKSt6vectorINS_8PlanItemESaIS1_EEm"), nullptr);
}

TEST_F(OpenCLPlugin, ProbeAndListDevices) {
  char err[512] = "x";
  EXPECT_EQ(api_->probe(err, sizeof err), CLTRAIN_OK);
  EXPECT_STREQ(err, "");
  char list[4096] = "";
  ASSERT_EQ(api_->list_devices(list, sizeof list), CLTRAIN_OK);
  EXPECT_NE(std::string(list).find("[0] "), std::string::npos) << list;
  EXPECT_NE(std::string(list).find("compute units"), std::string::npos) << list;
  EXPECT_NE(std::string(list).find("(default)"), std::string::npos) << list;
}

TEST_F(OpenCLPlugin, CreatesOnTheDefaultDevice) {
  std::string err;
  ASSERT_EQ(create(-1, &err), CLTRAIN_OK) << err;
  ASSERT_NE(backend_, nullptr);
  const std::string name = api_->device_name(backend_);
  EXPECT_NE(name.find(": "), std::string::npos) << name;
  EXPECT_NE(name.find("OpenCL"), std::string::npos) << name;
}

TEST_F(OpenCLPlugin, neg_DeviceIndexOutOfRange) {
  std::string err;
  EXPECT_EQ(create(999, &err), CLTRAIN_ERROR);
  EXPECT_EQ(backend_, nullptr);
  EXPECT_NE(err.find("999"), std::string::npos) << err;
  EXPECT_NE(err.find("device(s) found"), std::string::npos) << err;

  setenv("CLTRAIN_OPENCL_DEVICE", "77", 1);
  const cltrain_status st = create(-1, &err);
  unsetenv("CLTRAIN_OPENCL_DEVICE");
  EXPECT_EQ(st, CLTRAIN_ERROR);
  EXPECT_NE(err.find("CLTRAIN_OPENCL_DEVICE"), std::string::npos) << err;
}

TEST_F(OpenCLPlugin, SupportsTheListedOpsOnly) {
  ASSERT_EQ(create(-1), CLTRAIN_OK);
  const auto t = fc_tensors();
  EXPECT_EQ(supports_fc(CLTRAIN_ACT_RELU, t), 1);
  EXPECT_EQ(supports_fc(CLTRAIN_ACT_NONE, t), 1);
  EXPECT_EQ(supports_fc(CLTRAIN_ACT_TANH, t), 0);
  cltrain_step_desc bad = fc_step(CLTRAIN_ACT_NONE);
  bad.op = CLTRAIN_OP_COUNT;
  EXPECT_EQ(api_->supports(backend_, &bad, t.data(), 1), 0);
}

TEST_F(OpenCLPlugin, OpFilterRefusesMatchingOps) {
  setenv("CLTRAIN_OPENCL_OP_FILTER", "FullyConnected", 1);
  const cltrain_status st = create(-1);
  unsetenv("CLTRAIN_OPENCL_OP_FILTER");
  ASSERT_EQ(st, CLTRAIN_OK);
  const auto t = fc_tensors();
  EXPECT_EQ(supports_fc(CLTRAIN_ACT_RELU, t), 0);
  cltrain_step_desc relu{};
  relu.op = CLTRAIN_OP_RELU;
  relu.num_inputs = relu.num_outputs = 1;
  relu.inputs[0] = 3, relu.outputs[0] = 3;
  EXPECT_EQ(api_->supports(backend_, &relu, t.data(), 1), 1);
}

TEST_F(OpenCLPlugin, neg_InvalidOpFilterFiltersNothing) {
  setenv("CLTRAIN_OPENCL_OP_FILTER", "(Fully", 1);
  const cltrain_status st = create(-1);
  unsetenv("CLTRAIN_OPENCL_OP_FILTER");
  ASSERT_EQ(st, CLTRAIN_OK);
  const auto t = fc_tensors();
  EXPECT_EQ(supports_fc(CLTRAIN_ACT_RELU, t), 1);
  EXPECT_NE(std::string(api_->last_error(backend_)).find("CLTRAIN_OPENCL_OP_FILTER"), std::string::npos);
}

TEST_F(OpenCLPlugin, TinyGraphMatchesDoubleReference) {
  ASSERT_EQ(create(-1), CLTRAIN_OK);
  const Matrix x = {{0.5, -1.0, 1.5, 2.0}, {-0.3, 0.8, 0.2, -1.2}};
  const Matrix e = {{1, 0, 0}, {0, 0, 1}};
  Reference ref;
  ref.W = {{0.1, -0.2, 0.3, 0.4}, {-0.5, 0.6, -0.1, 0.2}, {0.25, 0.15, -0.35, 0.05}};
  ref.b = {0.1, -0.05, 0.2};
  ref.mW = ref.vW = Matrix(3, std::vector<double>(4, 0.0));
  ref.mb = ref.vb = std::vector<double>(3, 0.0);
  const std::vector<float> W0 = to_float(ref.W), b0 = to_float({ref.b});
  const float lr = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-7f;

  TinyGraph g;
  const int tx = g.tensor("x", {2, 4}, CLTRAIN_ROLE_NON_CONST);
  const int tW = g.tensor("W", {3, 4}, CLTRAIN_ROLE_TRAINABLE, &W0);
  const int tb = g.tensor("b", {3}, CLTRAIN_ROLE_TRAINABLE, &b0);
  const int ty = g.tensor("y", {2, 3}, CLTRAIN_ROLE_NON_CONST);
  const int ts = g.tensor("s", {2, 3}, CLTRAIN_ROLE_NON_CONST);
  const int te = g.tensor("e", {2, 3}, CLTRAIN_ROLE_NON_CONST);
  const int tloss = g.tensor("loss", {1}, CLTRAIN_ROLE_NON_CONST);
  const int tds = g.tensor("ds", {2, 3}, CLTRAIN_ROLE_BACK_PROP);
  const int tdy = g.tensor("dy", {2, 3}, CLTRAIN_ROLE_BACK_PROP);
  const int tdx = g.tensor("dx", {2, 4}, CLTRAIN_ROLE_BACK_PROP);
  const int tdW = g.tensor("dW", {3, 4}, CLTRAIN_ROLE_GRADIENT);
  const int tdb = g.tensor("db", {3}, CLTRAIN_ROLE_GRADIENT);
  const int tmW = g.tensor("mW", {3, 4}, CLTRAIN_ROLE_OPTIMIZER);
  const int tvW = g.tensor("vW", {3, 4}, CLTRAIN_ROLE_OPTIMIZER);
  const int tmb = g.tensor("mb", {3}, CLTRAIN_ROLE_OPTIMIZER);
  const int tvb = g.tensor("vb", {3}, CLTRAIN_ROLE_OPTIMIZER);
  cltrain_op_params fc{}, sm{}, cce{}, adam{};
  fc.activation = CLTRAIN_ACT_RELU;
  sm.beta = 1.0f;
  cce.reduction = CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE;
  adam.learning_rate = 0.5f;  // overridden by run_args below
  adam.beta1 = b1, adam.beta2 = b2, adam.epsilon = eps;
  g.step(CLTRAIN_OP_FULLY_CONNECTED, CLTRAIN_PHASE_FORWARD, {tx, tW, tb}, {ty}, fc);
  g.step(CLTRAIN_OP_SOFTMAX, CLTRAIN_PHASE_FORWARD, {ty}, {ts}, sm);
  g.step(CLTRAIN_OP_LOSS_CCE, CLTRAIN_PHASE_FORWARD, {ts, te}, {tloss}, cce);
  g.step(CLTRAIN_OP_LOSS_CCE, CLTRAIN_PHASE_BACKWARD, {ts, te}, {tds}, cce);
  g.step(CLTRAIN_OP_SOFTMAX, CLTRAIN_PHASE_BACKWARD, {ts, tds}, {tdy}, sm);
  g.step(CLTRAIN_OP_FULLY_CONNECTED, CLTRAIN_PHASE_BACKWARD, {tx, tW, ty, tdy}, {tdx, tdW, tdb}, fc);
  g.step(CLTRAIN_OP_UPDATE_ADAM, CLTRAIN_PHASE_UPDATE, {tdW}, {tW, tmW, tvW}, adam);
  g.step(CLTRAIN_OP_UPDATE_ADAM, CLTRAIN_PHASE_UPDATE, {tdb}, {tb, tmb, tvb}, adam);
  g.set_lifetimes({tx, te}, {tloss, tdx});

  for (const auto& s : g.steps) EXPECT_EQ(api_->supports(backend_, &s, g.tensors.data(), 1), 1);
  const cltrain_graph_desc desc = g.desc();
  cltrain_memory_report report{};
  ASSERT_EQ(api_->prepare(backend_, &desc, &report), CLTRAIN_OK) << api_->last_error(backend_);
  EXPECT_EQ(report.num_tensors, g.tensors.size());
  EXPECT_GE(report.pool_bytes, report.lower_bound);
  EXPECT_EQ(report.role_peak[CLTRAIN_ROLE_TRAINABLE], 15u * 4);
  EXPECT_EQ(report.role_peak[CLTRAIN_ROLE_OPTIMIZER], 30u * 4);
  std::vector<int64_t> offsets(g.tensors.size(), -2);
  ASSERT_EQ(api_->plan_offsets(backend_, offsets.data(), static_cast<int32_t>(offsets.size())), CLTRAIN_OK);
  for (int64_t o : offsets) {
    EXPECT_GE(o, 0);
    EXPECT_EQ(o % 64, 0);
  }

  auto read = [&](int id, size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(api_->read_tensor(backend_, id, v.data(), n * sizeof(float)), CLTRAIN_OK) << api_->last_error(backend_);
    return v;
  };
  const std::vector<float> xf = to_float(x), ef = to_float(e);
  for (int t = 1; t <= 2; ++t) {
    SCOPED_TRACE("iteration " + std::to_string(t));
    ASSERT_EQ(api_->write_tensor(backend_, tx, xf.data(), xf.size() * 4), CLTRAIN_OK);
    ASSERT_EQ(api_->write_tensor(backend_, te, ef.data(), ef.size() * 4), CLTRAIN_OK);
    ref.iterate(x, e, t, lr, b1, b2, eps);
    const cltrain_run_args args{t, lr};
    // Forward, then read what later steps may overwrite; then backward; then the updates.
    const int32_t fwd[] = {0, 1, 2}, bwd[] = {3, 4, 5}, upd[] = {6, 7};
    ASSERT_EQ(api_->run(backend_, fwd, 3, &args), CLTRAIN_OK) << api_->last_error(backend_);
    expect_close(read(ty, 6), flat(ref.y), "y");
    expect_close(read(ts, 6), flat(ref.s), "softmax");
    expect_close(read(tloss, 1), {ref.loss}, "loss");
    ASSERT_EQ(api_->run(backend_, bwd, 3, &args), CLTRAIN_OK) << api_->last_error(backend_);
    expect_close(read(tdx, 8), flat(ref.dx), "dx");
    expect_close(read(tdW, 12), flat(ref.dW), "dW");
    expect_close(read(tdb, 3), ref.db, "db");
    ASSERT_EQ(api_->run(backend_, upd, 2, &args), CLTRAIN_OK) << api_->last_error(backend_);
    ASSERT_EQ(api_->sync(backend_), CLTRAIN_OK);
    expect_close(read(tW, 12), flat(ref.W), "W after Adam");
    expect_close(read(tb, 3), ref.b, "b after Adam");
    expect_close(read(tmW, 12), flat(ref.mW), "Adam m of W");
    expect_close(read(tvb, 3), ref.vb, "Adam v of b");
  }

  // Misuse is refused with CLTRAIN_INVALID and a message.
  std::vector<float> small(2);
  EXPECT_EQ(api_->write_tensor(backend_, tx, small.data(), 8), CLTRAIN_INVALID);
  EXPECT_NE(std::string(api_->last_error(backend_)).find("'x'"), std::string::npos) << api_->last_error(backend_);
  EXPECT_EQ(api_->read_tensor(backend_, 99, small.data(), 8), CLTRAIN_INVALID);
  const int32_t adam_step[] = {6};
  const cltrain_run_args no_t{0, 0.0f};
  EXPECT_EQ(api_->run(backend_, adam_step, 1, &no_t), CLTRAIN_INVALID);
  EXPECT_NE(std::string(api_->last_error(backend_)).find("iteration"), std::string::npos);
}

TEST_F(OpenCLPlugin, neg_UnplannedTensorIsRefused) {
  ASSERT_EQ(create(-1), CLTRAIN_OK);
  TinyGraph g;
  const int tx = g.tensor("x", {4}, CLTRAIN_ROLE_NON_CONST);
  const int ty = g.tensor("y", {4}, CLTRAIN_ROLE_NON_CONST);
  const int unused = g.tensor("elsewhere", {4}, CLTRAIN_ROLE_NON_CONST);
  g.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_FORWARD, {tx}, {ty});
  g.set_lifetimes({tx}, {ty});
  const cltrain_graph_desc desc = g.desc();
  ASSERT_EQ(api_->prepare(backend_, &desc, nullptr), CLTRAIN_OK) << api_->last_error(backend_);
  const std::vector<float> in = {-1, 2, -3, 4};
  std::vector<float> out(4);
  ASSERT_EQ(api_->write_tensor(backend_, tx, in.data(), 16), CLTRAIN_OK);
  const int32_t steps[] = {0};
  ASSERT_EQ(api_->run(backend_, steps, 1, nullptr), CLTRAIN_OK) << api_->last_error(backend_);
  ASSERT_EQ(api_->read_tensor(backend_, ty, out.data(), 16), CLTRAIN_OK);
  EXPECT_EQ(out, (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(api_->read_tensor(backend_, unused, out.data(), 16), CLTRAIN_INVALID);
  EXPECT_NE(std::string(api_->last_error(backend_)).find("not planned"), std::string::npos);
}

}  // namespace
