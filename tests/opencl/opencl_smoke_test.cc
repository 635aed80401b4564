// Smoke test of the OpenCL plugin through the plugin ABI only: load, probe, create, a tiny
// training graph (FullyConnected 4->3 with ReLU, softmax, CCE loss, Adam) against a double
// precision reference computed here, the op filter and bad device indices. The full op suite
// lives elsewhere.
#include "plugin_fixture.h"

namespace {

using namespace cltrain_test;

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

TEST_F(OpenCLPluginAbi, AbiVersionAndName) {
  EXPECT_EQ(api_->abi_version, CLTRAIN_BACKEND_ABI_VERSION);
  EXPECT_STREQ(api_->name, "opencl");
  for (auto fn : {(void*)api_->probe, (void*)api_->list_devices, (void*)api_->create, (void*)api_->destroy,
                  (void*)api_->device_name, (void*)api_->supports, (void*)api_->prepare, (void*)api_->run,
                  (void*)api_->write_tensor, (void*)api_->read_tensor, (void*)api_->sync, (void*)api_->last_error,
                  (void*)api_->plan_offsets})
    EXPECT_NE(fn, nullptr);
  // Only the entry point is exported.
  EXPECT_EQ(dlsym(handle_, "_ZN7cltrain12plan_memoryERKSt6vectorINS_8PlanItemESaIS1_EEm"), nullptr);
}

TEST_F(OpenCLPluginAbi, ProbeSaysWhyItIsUnavailable) {
  char err[512] = "x";
  const cltrain_status st = api_->probe(err, sizeof err);
  if (st == CLTRAIN_UNAVAILABLE) {
    EXPECT_NE(std::string(err).find("no OpenCL"), std::string::npos) << err;
    char msg[512] = "";
    cltrain_backend* b = nullptr;
    EXPECT_EQ(api_->create(nullptr, &b, msg, sizeof msg), CLTRAIN_UNAVAILABLE);
    EXPECT_EQ(b, nullptr);
    EXPECT_STREQ(msg, err);
  } else {
    EXPECT_EQ(st, CLTRAIN_OK);
    EXPECT_STREQ(err, "");
  }
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
  EXPECT_EQ(supports_fc(CLTRAIN_ACT_TANH, t), 1);
  EXPECT_EQ(supports_fc(CLTRAIN_ACT_RELU6, t), 1);
  EXPECT_EQ(supports_fc(CLTRAIN_ACT_RELU_N1_TO_1, t), 1);
  EXPECT_EQ(supports_fc(5, t), 0);  // tflite's SIGN_BIT: not an activation cltrain knows
  cltrain_step_desc bad = fc_step(CLTRAIN_ACT_NONE);
  bad.op = CLTRAIN_OP_COUNT;
  EXPECT_EQ(supports_step(bad, t), 0);
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
  EXPECT_EQ(supports_step(relu, t), 1);
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

  EXPECT_TRUE(supports_all(g.desc()));
  const cltrain_graph_desc desc = g.desc();
  cltrain_memory_report report{};
  report.struct_size = sizeof(report);
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
    const cltrain_run_args args{sizeof(cltrain_run_args), t, lr};
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
  const cltrain_run_args no_t{sizeof(cltrain_run_args), 0, 0.0f};
  EXPECT_EQ(api_->run(backend_, adam_step, 1, &no_t), CLTRAIN_INVALID);
  EXPECT_NE(std::string(api_->last_error(backend_)).find("iteration"), std::string::npos);
}

// write_tensor returns before the transfer once it has copied the source (the host may reuse it
// at once), without waiting; the read waits once; stats count exactly that, and profiling times
// the step and the transfers.
TEST_F(OpenCLPlugin, WriteIsNonBlockingAndCounted) {
  ASSERT_EQ(create(-1), CLTRAIN_OK);
  TinyGraph g;
  const int tx = g.tensor("x", {1024}, CLTRAIN_ROLE_NON_CONST);
  const int ty = g.tensor("y", {1024}, CLTRAIN_ROLE_NON_CONST);
  g.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_FORWARD, {tx}, {ty});
  g.set_lifetimes({tx}, {ty});
  const cltrain_graph_desc desc = g.desc();
  ASSERT_EQ(api_->prepare(backend_, &desc, nullptr), CLTRAIN_OK) << api_->last_error(backend_);
  ASSERT_EQ(api_->set_profiling(backend_, 1), CLTRAIN_OK) << api_->last_error(backend_);
  ASSERT_EQ(api_->reset_stats(backend_), CLTRAIN_OK);
  const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};
  const int32_t step = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<float> in(1024), out(1024);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7) - 3.0f + round;
    const std::vector<float> sent = in;
    ASSERT_EQ(api_->write_tensor(backend_, tx, in.data(), in.size() * 4), CLTRAIN_OK) << api_->last_error(backend_);
    std::fill(in.begin(), in.end(), 99.0f);  // the backend copied it already
    ASSERT_EQ(api_->run(backend_, &step, 1, &args), CLTRAIN_OK) << api_->last_error(backend_);
    ASSERT_EQ(api_->read_tensor(backend_, ty, out.data(), out.size() * 4), CLTRAIN_OK);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], std::max(sent[i], 0.0f)) << "round " << round << " " << i;
  }
  cltrain_run_stats st{};
  st.struct_size = sizeof(st);
  ASSERT_EQ(api_->stats(backend_, &st), CLTRAIN_OK);
  EXPECT_EQ(st.steps_run, 3u);
  EXPECT_EQ(st.launches, 3u);  // one ReLU kernel a step
  EXPECT_EQ(st.bytes_to_device, 3u * 4096);
  EXPECT_EQ(st.bytes_from_device, 3u * 4096);
  EXPECT_EQ(st.blocking_waits, 3u);  // the reads only
  EXPECT_EQ(st.buffer_allocations + st.program_builds, 0u);
  const void* raw = nullptr;
  uint32_t row_size = 0;
  int32_t n = 0;
  ASSERT_EQ(api_->profile(backend_, &raw, &row_size, &n), CLTRAIN_OK) << api_->last_error(backend_);
  ASSERT_EQ(n, 2);
  ASSERT_EQ(row_size, sizeof(cltrain_kernel_profile));
  const auto* rows = static_cast<const cltrain_kernel_profile*>(raw);
  EXPECT_EQ(rows[0].step, -1);  // the host's transfers: 3 writes, 3 reads
  EXPECT_EQ(rows[0].calls, 6);
  EXPECT_EQ(rows[1].step, 0);
  EXPECT_EQ(rows[1].calls, 3);
  EXPECT_GT(rows[1].ms, 0.0);
  ASSERT_EQ(api_->stats(backend_, &st), CLTRAIN_OK);
  EXPECT_EQ(st.blocking_waits, 3u);  // profile's own wait is not counted
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

TEST_F(OpenCLPlugin, neg_PoolLargerThanTheDeviceIsOutOfMemory) {
  ASSERT_EQ(create(-1), CLTRAIN_OK);
  TinyGraph g;
  const int tx = g.tensor("huge_x", {1 << 20, 1 << 14}, CLTRAIN_ROLE_NON_CONST);  // 64 GiB
  const int ty = g.tensor("huge_y", {1 << 20, 1 << 14}, CLTRAIN_ROLE_NON_CONST);
  g.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_FORWARD, {tx}, {ty});
  g.set_lifetimes({tx}, {ty});
  const cltrain_graph_desc desc = g.desc();
  EXPECT_EQ(api_->prepare(backend_, &desc, nullptr), CLTRAIN_OUT_OF_MEMORY);
  const std::string err = api_->last_error(backend_);
  EXPECT_NE(err.find("137438953472 bytes"), std::string::npos) << err;
  EXPECT_NE(err.find("CL_DEVICE_MAX_MEM_ALLOC_SIZE"), std::string::npos) << err;
}

// With a cache directory, program binaries land on disk and a second backend builds from them.
TEST_F(OpenCLPlugin, ProgramBinariesAreCachedOnDisk) {
  char dir_template[] = "/tmp/cltrain_ocl_cache_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  auto run_relu = [&]() {
    TinyGraph g;
    const int tx = g.tensor("x", {5}, CLTRAIN_ROLE_NON_CONST);
    const int ty = g.tensor("y", {5}, CLTRAIN_ROLE_NON_CONST);
    g.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_FORWARD, {tx}, {ty});
    g.set_lifetimes({tx}, {ty});
    const cltrain_graph_desc desc = g.desc();
    ASSERT_EQ(create(-1, nullptr, dir.c_str()), CLTRAIN_OK);
    ASSERT_EQ(api_->prepare(backend_, &desc, nullptr), CLTRAIN_OK) << api_->last_error(backend_);
    const std::vector<float> in = {-1, 2, -3, 4, -0.5f};
    std::vector<float> out(5);
    ASSERT_EQ(api_->write_tensor(backend_, tx, in.data(), 20), CLTRAIN_OK);
    const int32_t steps[] = {0};
    ASSERT_EQ(api_->run(backend_, steps, 1, nullptr), CLTRAIN_OK) << api_->last_error(backend_);
    ASSERT_EQ(api_->read_tensor(backend_, ty, out.data(), 20), CLTRAIN_OK);
    EXPECT_EQ(out, (std::vector<float>{0, 2, 0, 4, 0}));
    api_->destroy(backend_);
    backend_ = nullptr;
  };
  run_relu();
  const std::string list = "ls " + dir + "/cltrain-ocl-program-*.bin > /dev/null 2>&1";
  EXPECT_EQ(std::system(list.c_str()), 0) << "no program binary in " << dir;
  run_relu();  // from the cached binary
  std::system(("rm -rf " + dir).c_str());
}

// supports() refuses what the kernels cannot index (the host then runs the op on the CPU).
TEST_F(OpenCLPlugin, neg_ShapesTheKernelsCannotIndexAreRefused) {
  ASSERT_EQ(create(-1), CLTRAIN_OK);
  auto refused = [&](cltrain_op op, std::vector<std::vector<int>> ins, std::vector<int> yd, cltrain_op_params p) {
    TinyGraph g;
    std::vector<int> ids;
    for (auto& d : ins) ids.push_back(g.tensor("x", d, CLTRAIN_ROLE_NON_CONST));
    const int y = g.tensor("y", yd, CLTRAIN_ROLE_NON_CONST);
    g.step(op, CLTRAIN_PHASE_FORWARD, ids, {y}, p);
    return supports_step(g.steps[0], g.tensors) == 0;
  };
  const cltrain_op_params none{};
  EXPECT_TRUE(refused(CLTRAIN_OP_ADD, {{}, {2, 3}}, {2, 3}, none)) << "rank 0 against rank 2";
  EXPECT_TRUE(refused(CLTRAIN_OP_MUL, {{2, 3}, {3}}, {2, 3}, none)) << "ranks differ";
  EXPECT_TRUE(refused(CLTRAIN_OP_SUB, {{2, 3}, {2, 2}}, {2, 3}, none)) << "3 against 2";
  EXPECT_TRUE(refused(CLTRAIN_OP_DIV, {{2, 1}, {2, 1}}, {2, 3}, none)) << "y larger than the broadcast";
  EXPECT_FALSE(refused(CLTRAIN_OP_ADD, {{}, {}}, {}, none)) << "scalars";
  cltrain_op_params m{};
  m.axes_mask = 0b1000;
  EXPECT_TRUE(refused(CLTRAIN_OP_MEAN, {{2, 3, 4}}, {2, 3, 4}, m)) << "axis 3 of a rank-3 input";
  m.axes_mask = 0b110;
  EXPECT_TRUE(refused(CLTRAIN_OP_MEAN, {{2, 3, 4}}, {2, 1, 1}, m)) << "keep_dims shape without keep_dims";
  cltrain_op_params pd{};
  pd.pad_before[1] = 1;
  EXPECT_TRUE(refused(CLTRAIN_OP_PAD, {{2, 3}}, {2, 5}, pd)) << "pads do not add up";
  cltrain_op_params c{};
  c.axis = 1;
  // Eight parts (CLTRAIN_MAX_STEP_IO) are taken; eight that do not add up to the output are not.
  EXPECT_FALSE(refused(CLTRAIN_OP_CONCATENATION, std::vector<std::vector<int>>(8, {2, 1}), {2, 8}, c)) << "8 parts";
  EXPECT_TRUE(refused(CLTRAIN_OP_CONCATENATION, std::vector<std::vector<int>>(8, {2, 1}), {2, 9}, c)) << "8 of 9";
  EXPECT_TRUE(refused(CLTRAIN_OP_CONCATENATION, {{2, 1}, {3, 1}}, {2, 2}, c)) << "parts differ off the axis";
  cltrain_op_params pool{};
  pool.filter_h = pool.filter_w = 3, pool.stride_h = pool.stride_w = 1, pool.padding = CLTRAIN_PADDING_VALID;
  EXPECT_TRUE(refused(CLTRAIN_OP_MAX_POOL_2D, {{1, 2, 5, 1}}, {1, 0, 3, 1}, pool)) << "filter taller than the input";
}

}  // namespace
