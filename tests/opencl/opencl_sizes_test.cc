// Every op of the OpenCL plugin once at MNIST-like sizes (batch 32, rows of 784), so that the
// reductions loop over rows wider than a work-group and CLBlast takes its large-matrix path.
// Compared against a double precision reference computed here.
#include <random>

#include "plugin_fixture.h"

namespace {

using namespace cltrain_test;
using Vec = std::vector<double>;

// GEMMs over 784 terms in float: relative to the largest magnitude in the tensor.
constexpr double kSizesTolerance = 1e-5;

void expect_close_scaled(const std::vector<float>& got, const Vec& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0, worst = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]) / std::max(scale, 1e-30);
    worst = std::max(worst, err);
    if (!(err <= kSizesTolerance) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what << ": worst error " << worst << " of scale " << scale;
}

Vec random_vec(std::mt19937& rng, size_t n, double lo, double hi) {
  std::uniform_real_distribution<float> d(static_cast<float>(lo), static_cast<float>(hi));
  Vec v(n);
  for (double& x : v) x = d(rng);  // values exactly representable as float
  return v;
}

std::vector<float> to_f(const Vec& v) { return std::vector<float>(v.begin(), v.end()); }

// y[N, M] = act(x[N, K] W[M, K]^T + b)
Vec fc(const Vec& x, const Vec& W, const Vec& b, size_t N, size_t M, size_t K, bool relu) {
  Vec y(N * M);
  for (size_t n = 0; n < N; ++n)
    for (size_t m = 0; m < M; ++m) {
      double z = b[m];
      for (size_t k = 0; k < K; ++k) z += x[n * K + k] * W[m * K + k];
      y[n * M + m] = relu ? std::max(z, 0.0) : z;
    }
  return y;
}

// dz = dy * act'(y); dx = dz W; dW = dz^T x; db = column sums of dz.
void fc_back(const Vec& x, const Vec& W, const Vec& y, Vec dz, size_t N, size_t M, size_t K, bool relu, Vec& dx,
             Vec& dW, Vec& db) {
  if (relu)
    for (size_t i = 0; i < dz.size(); ++i) dz[i] = y[i] > 0 ? dz[i] : 0.0;
  dx.assign(N * K, 0.0);
  dW.assign(M * K, 0.0);
  db.assign(M, 0.0);
  for (size_t n = 0; n < N; ++n)
    for (size_t m = 0; m < M; ++m) {
      db[m] += dz[n * M + m];
      for (size_t k = 0; k < K; ++k) {
        dx[n * K + k] += dz[n * M + m] * W[m * K + k];
        dW[m * K + k] += dz[n * M + m] * x[n * K + k];
      }
    }
}

Vec softmax(const Vec& x, size_t cols) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    const double mx = *std::max_element(x.begin() + r * cols, x.begin() + (r + 1) * cols);
    double sum = 0;
    for (size_t c = 0; c < cols; ++c) sum += y[r * cols + c] = std::exp(x[r * cols + c] - mx);
    for (size_t c = 0; c < cols; ++c) y[r * cols + c] /= sum;
  }
  return y;
}

Vec softmax_back(const Vec& y, const Vec& dy, size_t cols) {
  Vec dx(y.size());
  for (size_t r = 0; r < y.size() / cols; ++r) {
    double dot = 0;
    for (size_t c = 0; c < cols; ++c) dot += y[r * cols + c] * dy[r * cols + c];
    for (size_t c = 0; c < cols; ++c) dx[r * cols + c] = y[r * cols + c] * (dy[r * cols + c] - dot);
  }
  return dx;
}

TEST_F(OpenCLPlugin, EveryOpAtMnistSizes) {
  ASSERT_EQ(create(-1), CLTRAIN_OK);
  const size_t N = 32, K = 784, H = 64, C = 10;
  std::mt19937 rng(1234);
  const Vec x = random_vec(rng, N * K, 0.0, 1.0);
  Vec W1 = random_vec(rng, H * K, -0.05, 0.05), b1 = random_vec(rng, H, -0.1, 0.1);
  Vec W2 = random_vec(rng, C * H, -0.3, 0.3), b2 = random_vec(rng, C, -0.1, 0.1);
  Vec e(N * C, 0.0), target = random_vec(rng, N * K, 0.0, 0.002);
  for (size_t n = 0; n < N; ++n) e[n * C + (n * 7) % C] = 1.0;
  const std::vector<float> W1f = to_f(W1), b1f = to_f(b1), W2f = to_f(W2), b2f = to_f(b2);
  const float sgd_lr = 0.1f, adam_lr = 0.001f;

  TinyGraph g;
  const int tx = g.tensor("x", {32, 28, 28}, CLTRAIN_ROLE_NON_CONST);
  const int txf = g.tensor("x_flat", {32, 784}, CLTRAIN_ROLE_NON_CONST);
  const int tW1 = g.tensor("W1", {64, 784}, CLTRAIN_ROLE_TRAINABLE, &W1f);
  const int tb1 = g.tensor("b1", {64}, CLTRAIN_ROLE_TRAINABLE, &b1f);
  const int th = g.tensor("h", {32, 64}, CLTRAIN_ROLE_NON_CONST);
  const int tW2 = g.tensor("W2", {10, 64}, CLTRAIN_ROLE_TRAINABLE, &W2f);
  const int tb2 = g.tensor("b2", {10}, CLTRAIN_ROLE_TRAINABLE, &b2f);
  const int tz = g.tensor("z", {32, 10}, CLTRAIN_ROLE_NON_CONST);
  const int ts = g.tensor("s", {32, 10}, CLTRAIN_ROLE_NON_CONST);
  const int te = g.tensor("e", {32, 10}, CLTRAIN_ROLE_NON_CONST);
  const int tloss = g.tensor("loss", {1}, CLTRAIN_ROLE_NON_CONST);
  const int tds = g.tensor("ds", {32, 10}, CLTRAIN_ROLE_BACK_PROP);
  const int tdz = g.tensor("dz", {32, 10}, CLTRAIN_ROLE_BACK_PROP);
  const int tdh = g.tensor("dh", {32, 64}, CLTRAIN_ROLE_BACK_PROP);
  const int tdW2 = g.tensor("dW2", {10, 64}, CLTRAIN_ROLE_GRADIENT);
  const int tdb2 = g.tensor("db2", {10}, CLTRAIN_ROLE_GRADIENT);
  const int tdxf = g.tensor("dx_flat", {32, 784}, CLTRAIN_ROLE_BACK_PROP);
  const int tdW1 = g.tensor("dW1", {64, 784}, CLTRAIN_ROLE_GRADIENT);
  const int tdb1 = g.tensor("db1", {64}, CLTRAIN_ROLE_GRADIENT);
  const int tdx = g.tensor("dx", {32, 28, 28}, CLTRAIN_ROLE_BACK_PROP);
  const int tm1 = g.tensor("m1", {64, 784}, CLTRAIN_ROLE_OPTIMIZER);
  const int tv1 = g.tensor("v1", {64, 784}, CLTRAIN_ROLE_OPTIMIZER);
  const int tmb = g.tensor("mb1", {64}, CLTRAIN_ROLE_OPTIMIZER);
  const int tvb = g.tensor("vb1", {64}, CLTRAIN_ROLE_OPTIMIZER);
  const int tsx = g.tensor("sx", {32, 784}, CLTRAIN_ROLE_NON_CONST);
  const int tt = g.tensor("target", {32, 784}, CLTRAIN_ROLE_NON_CONST);
  const int tloss2 = g.tensor("loss2", {1}, CLTRAIN_ROLE_NON_CONST);
  const int tdsx = g.tensor("dsx", {32, 784}, CLTRAIN_ROLE_BACK_PROP);
  const int tdxs = g.tensor("dx_softmax", {32, 784}, CLTRAIN_ROLE_DISPOSABLE);

  cltrain_op_params relu{}, none{}, sm{}, cce{}, mse{}, sgd{}, adam{};
  relu.activation = CLTRAIN_ACT_RELU;
  sm.beta = 1.0f;
  cce.reduction = CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE;
  mse.reduction = CLTRAIN_REDUCTION_SUM;
  sgd.learning_rate = sgd_lr;
  adam.learning_rate = adam_lr, adam.beta1 = 0.9f, adam.beta2 = 0.999f, adam.epsilon = 1e-7f;
  using P = cltrain_phase;
  const P F = CLTRAIN_PHASE_FORWARD, B = CLTRAIN_PHASE_BACKWARD, U = CLTRAIN_PHASE_UPDATE;
  g.step(CLTRAIN_OP_RESHAPE, F, {tx}, {txf});                          // 0
  g.step(CLTRAIN_OP_FULLY_CONNECTED, F, {txf, tW1, tb1}, {th}, relu);  // 1
  g.step(CLTRAIN_OP_FULLY_CONNECTED, F, {th, tW2, tb2}, {tz}, none);   // 2
  g.step(CLTRAIN_OP_SOFTMAX, F, {tz}, {ts}, sm);                       // 3
  g.step(CLTRAIN_OP_LOSS_CCE, F, {ts, te}, {tloss}, cce);              // 4
  g.step(CLTRAIN_OP_LOSS_CCE, B, {ts, te}, {tds}, cce);                // 5
  g.step(CLTRAIN_OP_SOFTMAX, B, {ts, tds}, {tdz}, sm);                 // 6
  g.step(CLTRAIN_OP_FULLY_CONNECTED, B, {th, tW2, -1, tdz}, {tdh, tdW2, tdb2}, none);  // 7
  g.step(CLTRAIN_OP_UPDATE_SGD, U, {tdW2}, {tW2}, sgd);                // 8
  g.step(CLTRAIN_OP_UPDATE_SGD, U, {tdb2}, {tb2}, sgd);                // 9
  g.step(CLTRAIN_OP_FULLY_CONNECTED, B, {txf, tW1, th, tdh}, {tdxf, tdW1, tdb1}, relu);  // 10
  g.step(CLTRAIN_OP_RESHAPE, B, {tdxf}, {tdx});                        // 11
  g.step(CLTRAIN_OP_UPDATE_ADAM, U, {tdW1}, {tW1, tm1, tv1}, adam);    // 12
  g.step(CLTRAIN_OP_UPDATE_ADAM, U, {tdb1}, {tb1, tmb, tvb}, adam);    // 13
  g.step(CLTRAIN_OP_SOFTMAX, F, {txf}, {tsx}, sm);                     // 14
  g.step(CLTRAIN_OP_LOSS_MSE, F, {tsx, tt}, {tloss2}, mse);            // 15
  g.step(CLTRAIN_OP_LOSS_MSE, B, {tsx, tt}, {tdsx}, mse);              // 16
  g.step(CLTRAIN_OP_SOFTMAX, B, {tsx, tdsx}, {tdxs}, sm);              // 17
  g.step(CLTRAIN_OP_ACCUMULATE, B, {tdxs}, {tdx});                     // 18
  g.set_lifetimes({tx, te, tt}, {tloss, tloss2, tdx});
  ASSERT_TRUE(supports_all(g.desc()));

  const cltrain_graph_desc desc = g.desc();
  cltrain_memory_report report{};
  report.struct_size = sizeof(report);
  ASSERT_EQ(api_->prepare(backend_, &desc, &report), CLTRAIN_OK) << api_->last_error(backend_);
  EXPECT_GE(report.pool_bytes, report.lower_bound);

  auto read = [&](int id) {
    size_t n = 1;
    for (int i = 0; i < g.tensors[id].rank; ++i) n *= g.tensors[id].dims[i];
    std::vector<float> v(n);
    EXPECT_EQ(api_->read_tensor(backend_, id, v.data(), n * 4), CLTRAIN_OK) << api_->last_error(backend_);
    return v;
  };
  auto run = [&](int32_t first, int32_t last) {
    std::vector<int32_t> ids;
    for (int32_t i = first; i <= last; ++i) ids.push_back(i);
    const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};  // learning rates from the params
    ASSERT_EQ(api_->run(backend_, ids.data(), static_cast<int32_t>(ids.size()), &args), CLTRAIN_OK)
        << api_->last_error(backend_);
  };
  const std::vector<float> xf = to_f(x), ef = to_f(e), tf = to_f(target);
  ASSERT_EQ(api_->write_tensor(backend_, tx, xf.data(), xf.size() * 4), CLTRAIN_OK);
  ASSERT_EQ(api_->write_tensor(backend_, te, ef.data(), ef.size() * 4), CLTRAIN_OK);
  ASSERT_EQ(api_->write_tensor(backend_, tt, tf.data(), tf.size() * 4), CLTRAIN_OK);

  // Forward.
  const Vec h = fc(x, W1, b1, N, H, K, true), z = fc(h, W2, b2, N, C, H, false), s = softmax(z, C);
  double loss = 0;
  Vec ds(N * C);
  for (size_t i = 0; i < N * C; ++i) {
    const double p = std::clamp(s[i], 1e-7, 1 - 1e-7);
    loss -= e[i] * std::log(p) / N;
    ds[i] = (s[i] < 1e-7 || s[i] > 1 - 1e-7) ? 0.0 : -e[i] / p / N;
  }
  run(0, 4);
  expect_close_scaled(read(txf), x, "reshaped x");
  expect_close_scaled(read(th), h, "h");
  expect_close_scaled(read(tz), z, "z");
  expect_close_scaled(read(ts), s, "softmax");
  expect_close_scaled(read(tloss), {loss}, "CCE loss");

  // Backward of the second layer and its SGD update.
  const Vec dz = softmax_back(s, ds, C);
  Vec dh, dW2, db2;
  fc_back(h, W2, z, dz, N, C, H, false, dh, dW2, db2);
  run(5, 7);
  expect_close_scaled(read(tdz), dz, "softmax gradient");
  expect_close_scaled(read(tdh), dh, "dh");
  expect_close_scaled(read(tdW2), dW2, "dW2");
  expect_close_scaled(read(tdb2), db2, "db2");
  for (size_t i = 0; i < W2.size(); ++i) W2[i] -= sgd_lr * dW2[i];
  for (size_t i = 0; i < b2.size(); ++i) b2[i] -= sgd_lr * db2[i];

  // Backward of the first layer, the reshape back.
  Vec dx, dW1, db1;
  fc_back(x, W1, h, dh, N, H, K, true, dx, dW1, db1);
  run(8, 11);
  expect_close_scaled(read(tW2), W2, "W2 after SGD");
  expect_close_scaled(read(tb2), b2, "b2 after SGD");
  const std::vector<float> dW1_dev = read(tdW1), db1_dev = read(tdb1);
  expect_close_scaled(dW1_dev, dW1, "dW1");
  expect_close_scaled(db1_dev, db1, "db1");
  expect_close_scaled(read(tdx), dx, "dx");

  // Adam on the first layer; softmax over rows of 784, MSE with SUM, accumulated into dx.
  const double step = adam_lr * std::sqrt(1 - 0.999f) / (1 - 0.9f);
  auto adam_ref = [&](Vec& w, const Vec& grad) {
    for (size_t i = 0; i < w.size(); ++i) {
      const double m = (1 - 0.9f) * grad[i], v = (1 - 0.999f) * grad[i] * grad[i];
      w[i] -= step * m / (std::sqrt(v) + 1e-7f);
    }
  };
  // Adam divides by about |g| sqrt(1 - b2) + eps, so float rounding of gradients near 1e-6 would
  // dominate: the reference updates with the device's own gradients.
  adam_ref(W1, Vec(dW1_dev.begin(), dW1_dev.end()));
  adam_ref(b1, Vec(db1_dev.begin(), db1_dev.end()));
  const Vec sx = softmax(x, K);
  double loss2 = 0;
  Vec dsx(N * K);
  for (size_t i = 0; i < N * K; ++i) {
    loss2 += (sx[i] - target[i]) * (sx[i] - target[i]) / K;
    dsx[i] = 2 * (sx[i] - target[i]) / K;
  }
  const Vec dxs = softmax_back(sx, dsx, K);
  for (size_t i = 0; i < dx.size(); ++i) dx[i] += dxs[i];
  run(12, 18);
  expect_close_scaled(read(tW1), W1, "W1 after Adam");
  expect_close_scaled(read(tb1), b1, "b1 after Adam");
  expect_close_scaled(read(tsx), sx, "softmax of rows of 784");
  expect_close_scaled(read(tloss2), {loss2}, "MSE loss");
  expect_close_scaled(read(tdx), dx, "dx after accumulation");
}

}  // namespace
