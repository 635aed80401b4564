// CONV_2D and DEPTHWISE_CONV_2D of the OpenCL plugin, forward and backward, against a plain float
// reference written here in the rounding orders of cltrain_backend.h ("Numerics"): fma chains
// for the dot products, s = s + t for the sums. On POCL the plugin must match it bit for bit;
// elsewhere within kTolerance of the tensor's largest magnitude. Small scratch budgets
// (CLTRAIN_OPENCL_SCRATCH_BYTES) force every chunking path of the GEMM-based CONV_2D. The last
// test times the convolution steps of one mnist-kaggle training step at batch 32.
#include <chrono>
#include <ctime>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <random>

#include "../../kernels/numerics.h"
#include "plugin_fixture.h"

namespace {

using namespace cltrain_test;
using F = std::vector<float>;

struct Conv {
  bool depthwise = false;
  int n = 1, h = 1, w = 1, ic = 1, oc = 1, kh = 1, kw = 1;  // oc: output channels (ic * m for depthwise)
  int sh = 1, sw = 1, dh = 1, dw = 1;
  bool same = true;
  int act = CLTRAIN_ACT_NONE;
  bool bias = true;
  int oh = 0, ow = 0, pt = 0, pl = 0;

  void finish() {
    const int spanh = (kh - 1) * dh + 1, spanw = (kw - 1) * dw + 1;
    oh = same ? (h + sh - 1) / sh : (h - spanh) / sh + 1;
    ow = same ? (w + sw - 1) / sw : (w - spanw) / sw + 1;
    pt = same ? std::max((oh - 1) * sh + spanh - h, 0) / 2 : 0;
    pl = same ? std::max((ow - 1) * sw + spanw - w, 0) / 2 : 0;
  }
  int m() const { return oc / ic; }
  std::vector<int> x_dims() const { return {n, h, w, ic}; }
  std::vector<int> w_dims() const { return depthwise ? std::vector<int>{1, kh, kw, oc} : std::vector<int>{oc, kh, kw, ic}; }
  std::vector<int> y_dims() const { return {n, oh, ow, oc}; }
  size_t xi(int b, int i, int j, int c) const { return ((static_cast<size_t>(b) * h + i) * w + j) * ic + c; }
  size_t yi(int b, int i, int j, int c) const { return ((static_cast<size_t>(b) * oh + i) * ow + j) * oc + c; }
  size_t wi(int o, int i, int j, int c) const {  // conv: W[o, i, j, c]; depthwise: W[0, i, j, o]
    return depthwise ? (static_cast<size_t>(i) * kw + j) * oc + o : ((static_cast<size_t>(o) * kh + i) * kw + j) * ic + c;
  }
  bool inside(int o_h, int o_w, int t_h, int t_w, int* ih, int* iw) const {
    *ih = o_h * sh - pt + t_h * dh, *iw = o_w * sw - pl + t_w * dw;
    return *ih >= 0 && *ih < h && *iw >= 0 && *iw < w;
  }
};

float act_f(int act, float z) {
  switch (act) {
    case CLTRAIN_ACT_RELU: return std::max(z, 0.0f);
    case CLTRAIN_ACT_RELU_N1_TO_1: return std::min(std::max(z, -1.0f), 1.0f);
    case CLTRAIN_ACT_RELU6: return std::min(std::max(z, 0.0f), 6.0f);
    case CLTRAIN_ACT_TANH: {
      const float e = clt_exp(-2.0f * std::fabs(z));
      const float t = (1.0f - e) / (1.0f + e);
      return z < 0.0f ? -t : t;
    }
    default: return z;
  }
}

float act_grad(int act, float y, float dy) {
  switch (act) {
    case CLTRAIN_ACT_RELU: return y > 0.0f ? dy : 0.0f;
    case CLTRAIN_ACT_RELU_N1_TO_1: return (y > -1.0f && y < 1.0f) ? dy : 0.0f;
    case CLTRAIN_ACT_RELU6: return (y > 0.0f && y < 6.0f) ? dy : 0.0f;
    case CLTRAIN_ACT_TANH: return dy * (1.0f - y * y);
    default: return dy;
  }
}

struct Expected {
  F y, dx, dw, db;
};

// The reference, straight from the Numerics section.
Expected reference(const Conv& c, const F& x, const F& wt, const F& b, const F& dy) {
  Expected e;
  e.y.assign(c.n * c.oh * c.ow * c.oc, 0.0f);
  for (int n = 0; n < c.n; ++n)
    for (int i = 0; i < c.oh; ++i)
      for (int j = 0; j < c.ow; ++j)
        for (int o = 0; o < c.oc; ++o) {
          float acc = 0.0f;
          for (int p = 0; p < c.kh; ++p)
            for (int q = 0; q < c.kw; ++q) {
              int ih, iw;
              if (!c.inside(i, j, p, q, &ih, &iw)) continue;
              if (c.depthwise)
                acc = std::fma(x[c.xi(n, ih, iw, o / c.m())], wt[c.wi(o, p, q, 0)], acc);
              else
                for (int k = 0; k < c.ic; ++k) acc = std::fma(x[c.xi(n, ih, iw, k)], wt[c.wi(o, p, q, k)], acc);
            }
          if (c.bias) acc = acc + b[o];
          e.y[c.yi(n, i, j, o)] = act_f(c.act, acc);
        }
  F dz(dy.size());
  for (size_t i = 0; i < dy.size(); ++i) dz[i] = act_grad(c.act, e.y[i], dy[i]);
  e.db.assign(c.oc, 0.0f);
  for (size_t r = 0; r < dz.size() / c.oc; ++r)
    for (int o = 0; o < c.oc; ++o) e.db[o] = e.db[o] + dz[r * c.oc + o];
  e.dw.assign(wt.size(), 0.0f);
  for (int o = 0; o < (c.depthwise ? 1 : c.oc); ++o)
    for (int p = 0; p < c.kh; ++p)
      for (int q = 0; q < c.kw; ++q)
        for (int k = 0; k < (c.depthwise ? c.oc : c.ic); ++k) {
          float acc = 0.0f;
          for (int n = 0; n < c.n; ++n)
            for (int i = 0; i < c.oh; ++i)
              for (int j = 0; j < c.ow; ++j) {
                int ih, iw;
                if (!c.inside(i, j, p, q, &ih, &iw)) continue;
                if (c.depthwise)
                  acc = std::fma(dz[c.yi(n, i, j, k)], x[c.xi(n, ih, iw, k / c.m())], acc);
                else
                  acc = std::fma(dz[c.yi(n, i, j, o)], x[c.xi(n, ih, iw, k)], acc);
              }
          e.dw[c.depthwise ? c.wi(k, p, q, 0) : c.wi(o, p, q, k)] = acc;
        }
  e.dx.assign(x.size(), 0.0f);
  for (int n = 0; n < c.n; ++n)
    for (int ih = 0; ih < c.h; ++ih)
      for (int iw = 0; iw < c.w; ++iw)
        for (int k = 0; k < c.ic; ++k) {
          float s = 0.0f;
          for (int p = 0; p < c.kh; ++p) {
            const int th = ih + c.pt - p * c.dh;
            if (th < 0 || th % c.sh != 0 || th / c.sh >= c.oh) continue;
            for (int q = 0; q < c.kw; ++q) {
              const int tw = iw + c.pl - q * c.dw;
              if (tw < 0 || tw % c.sw != 0 || tw / c.sw >= c.ow) continue;
              const int i = th / c.sh, j = tw / c.sw;
              float t = 0.0f;
              if (c.depthwise)
                for (int jm = 0; jm < c.m(); ++jm)
                  t = std::fma(dz[c.yi(n, i, j, k * c.m() + jm)], wt[c.wi(k * c.m() + jm, p, q, 0)], t);
              else
                for (int o = 0; o < c.oc; ++o) t = std::fma(dz[c.yi(n, i, j, o)], wt[c.wi(o, p, q, k)], t);
              s = s + t;
            }
          }
          e.dx[c.xi(n, ih, iw, k)] = s;
        }
  return e;
}

F random_f(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  F v(n);
  for (float& x : v) x = d(rng);
  return v;
}

size_t count_of(const std::vector<int>& dims) {
  size_t n = 1;
  for (int d : dims) n *= static_cast<size_t>(d);
  return n;
}

class ConvOps : public OpenCLPlugin {
 protected:
  void SetUp() override {
    OpenCLPlugin::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
  }
  void TearDown() override {
    unsetenv("CLTRAIN_OPENCL_SCRATCH_BYTES");
    OpenCLPlugin::TearDown();
  }
  void make_backend(const char* scratch_bytes) {
    if (scratch_bytes) setenv("CLTRAIN_OPENCL_SCRATCH_BYTES", scratch_bytes, 1);
    ASSERT_EQ(create(-1), CLTRAIN_OK);
    std::string dev = api_->device_name(backend_);
    for (char& ch : dev) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    exact_ = dev.find("pocl") != std::string::npos;
  }

  F read(int id) {
    F v(count_of(std::vector<int>(g_.tensors[id].dims, g_.tensors[id].dims + g_.tensors[id].rank)));
    EXPECT_EQ(api_->read_tensor(backend_, id, v.data(), v.size() * 4), CLTRAIN_OK) << api_->last_error(backend_);
    return v;
  }

  void expect(int id, const F& want, const std::string& what) {
    const F got = read(id);
    ASSERT_EQ(got.size(), want.size()) << what;
    float scale = 0;
    for (float w : want) scale = std::max(scale, std::fabs(w));
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const bool ok = exact_ ? std::memcmp(&got[i], &want[i], 4) == 0
                             : std::fabs(got[i] - want[i]) <= kTolerance * std::max(scale, 1.0f);
      if (!ok && bad++ < 5)
        ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << " want " << want[i] << (exact_ ? " (bitwise)" : "");
    }
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " differ";
  }

  // Forward and backward of one convolution; need_x: the backward reads x (dW wanted).
  void check(const Conv& c0, bool want_dx = true, bool want_dw = true, const char* scratch = nullptr,
             cltrain_memory_report* report = nullptr) {
    Conv c = c0;
    c.finish();
    make_backend(scratch);
    if (HasFatalFailure()) return;
    std::mt19937 rng(1234u + static_cast<unsigned>(c.kh * 7 + c.ic * 13 + c.oc));
    const F x = random_f(rng, count_of(c.x_dims()), -1, 1);
    const F wt = random_f(rng, count_of(c.w_dims()), -0.5f, 0.5f);
    const F b = random_f(rng, c.oc, -0.2f, 0.2f);
    const F dy = random_f(rng, count_of(c.y_dims()), -1, 1);
    const Expected e = reference(c, x, wt, b, dy);

    const int tx = g_.tensor("x", c.x_dims(), CLTRAIN_ROLE_NON_CONST);
    const int tw = g_.tensor("W", c.w_dims(), CLTRAIN_ROLE_TRAINABLE, &wt);
    const int tb = c.bias ? g_.tensor("b", {c.oc}, CLTRAIN_ROLE_TRAINABLE, &b) : -1;
    const int ty = g_.tensor("y", c.y_dims(), CLTRAIN_ROLE_NON_CONST);
    const int tdy = g_.tensor("dy", c.y_dims(), CLTRAIN_ROLE_BACK_PROP);
    const int tdx = want_dx ? g_.tensor("dx", c.x_dims(), CLTRAIN_ROLE_BACK_PROP) : -1;
    const int tdw = want_dw ? g_.tensor("dW", c.w_dims(), CLTRAIN_ROLE_GRADIENT) : -1;
    const int tdb = c.bias ? g_.tensor("db", {c.oc}, CLTRAIN_ROLE_GRADIENT) : -1;
    cltrain_op_params p{};
    p.activation = c.act;
    p.padding = c.same ? CLTRAIN_PADDING_SAME : CLTRAIN_PADDING_VALID;
    p.stride_h = c.sh, p.stride_w = c.sw, p.dilation_h = c.dh, p.dilation_w = c.dw;
    p.depth_multiplier = c.depthwise ? c.m() : 0;
    const cltrain_op op = c.depthwise ? CLTRAIN_OP_DEPTHWISE_CONV_2D : CLTRAIN_OP_CONV_2D;
    g_.step(op, CLTRAIN_PHASE_FORWARD, {tx, tw, tb}, {ty}, p);
    g_.step(op, CLTRAIN_PHASE_BACKWARD, {want_dw ? tx : -1, tw, c.act != CLTRAIN_ACT_NONE ? ty : -1, tdy},
            {tdx, tdw, tdb}, p);
    std::vector<int> reads = {ty};
    for (int id : {tdx, tdw, tdb})
      if (id >= 0) reads.push_back(id);
    g_.set_lifetimes({tx, tdy}, reads);
    ASSERT_TRUE(supports_all(g_.desc()));
    const cltrain_graph_desc desc = g_.desc();
    ASSERT_EQ(api_->prepare(backend_, &desc, report), CLTRAIN_OK) << api_->last_error(backend_);
    ASSERT_EQ(api_->write_tensor(backend_, tx, x.data(), x.size() * 4), CLTRAIN_OK);
    ASSERT_EQ(api_->write_tensor(backend_, tdy, dy.data(), dy.size() * 4), CLTRAIN_OK);
    const int32_t order[] = {0, 1};
    const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};
    ASSERT_EQ(api_->run(backend_, order, 2, &args), CLTRAIN_OK) << api_->last_error(backend_);
    expect(ty, e.y, "y");
    if (tdx >= 0) expect(tdx, e.dx, "dx");
    if (tdw >= 0) expect(tdw, e.dw, "dW");
    if (tdb >= 0) expect(tdb, e.db, "db");
  }

  TinyGraph g_;
  bool exact_ = false;
};

Conv conv(int n, int h, int w, int ic, int oc, int k, int stride, bool same, int act) {
  Conv c;
  c.n = n, c.h = h, c.w = w, c.ic = ic, c.oc = oc, c.kh = c.kw = k, c.sh = c.sw = stride, c.same = same, c.act = act;
  return c;
}

TEST_F(ConvOps, Conv3x3SameRelu) { check(conv(2, 7, 6, 3, 4, 3, 1, true, CLTRAIN_ACT_RELU)); }

TEST_F(ConvOps, Conv5x5OneChannelTanh) { check(conv(3, 9, 8, 1, 5, 5, 1, true, CLTRAIN_ACT_TANH), false, true); }

TEST_F(ConvOps, ConvStrideDilationValidRelu6NoBias) {
  Conv c = conv(2, 11, 10, 3, 5, 3, 2, false, CLTRAIN_ACT_RELU6);
  c.kw = 2, c.dh = 2, c.sw = 3, c.bias = false;
  check(c);
}

TEST_F(ConvOps, ConvSameStrideTwoReluN1To1) {
  Conv c = conv(2, 8, 9, 4, 3, 3, 2, true, CLTRAIN_ACT_RELU_N1_TO_1);
  c.dw = 2;
  check(c);
}

TEST_F(ConvOps, ConvPointwise) { check(conv(2, 5, 4, 6, 7, 1, 1, true, CLTRAIN_ACT_NONE)); }

TEST_F(ConvOps, ConvOneByOneStrideTwo) { check(conv(2, 5, 5, 3, 4, 1, 2, true, CLTRAIN_ACT_RELU)); }

// Large enough for CLBlast's indirect GEMM kernel (padding and transposing copies in its
// scratch), with sizes that are not whole tiles.
TEST_F(ConvOps, ConvIndirectGemmSizes) { check(conv(3, 13, 11, 16, 24, 3, 1, true, CLTRAIN_ACT_RELU)); }

TEST_F(ConvOps, ConvOnlyInputGradient) { check(conv(2, 6, 6, 2, 3, 3, 1, true, CLTRAIN_ACT_RELU), true, false); }

// Budgets of a few KiB: forward panels of some rows, dW panels of a few taps, then of some
// channels of one tap, dcol of one image; every chunk boundary in the middle of an image.
TEST_F(ConvOps, ConvChunkedRowsAndTaps) {
  check(conv(3, 7, 6, 3, 4, 3, 1, true, CLTRAIN_ACT_RELU), true, true, "4000");
}
TEST_F(ConvOps, ConvChunkedChannels) {
  check(conv(3, 7, 6, 5, 4, 3, 1, true, CLTRAIN_ACT_TANH), true, true, "1000");
}

TEST_F(ConvOps, ConvScratchIsReportedAsLayerScope) {
  cltrain_memory_report r{};
  r.struct_size = sizeof(r);
  check(conv(2, 7, 6, 3, 4, 3, 1, true, CLTRAIN_ACT_RELU), true, true, "2048", &r);
  EXPECT_GT(r.role_peak[CLTRAIN_ROLE_LAYER_SCOPE], 0u);
  EXPECT_LE(r.role_peak[CLTRAIN_ROLE_LAYER_SCOPE], 2048u + 256u + (64u << 10));  // panel + CLBlast's scratch
}

Conv depthwise(int n, int h, int w, int ic, int m, int k, int stride, bool same, int act) {
  Conv c = conv(n, h, w, ic, ic * m, k, stride, same, act);
  c.depthwise = true;
  return c;
}

TEST_F(ConvOps, DepthwiseSameRelu6) { check(depthwise(2, 7, 6, 4, 1, 3, 1, true, CLTRAIN_ACT_RELU6)); }

TEST_F(ConvOps, DepthwiseMultiplierStrideValid) { check(depthwise(2, 9, 8, 3, 2, 3, 2, false, CLTRAIN_ACT_NONE)); }

TEST_F(ConvOps, DepthwiseDilatedSameTanhNoBias) {
  Conv c = depthwise(2, 8, 7, 2, 3, 3, 1, true, CLTRAIN_ACT_TANH);
  c.dh = 2, c.bias = false;
  check(c);
}

// Channel counts that 16 and 8 divide: a work-item computes that many channels as vector lanes.
TEST_F(ConvOps, DepthwiseSixteenLanesStrideTwo) { check(depthwise(2, 9, 7, 16, 1, 3, 2, true, CLTRAIN_ACT_RELU6)); }
TEST_F(ConvOps, DepthwiseEightLanes5x5Valid) { check(depthwise(3, 8, 9, 24, 1, 5, 1, false, CLTRAIN_ACT_TANH)); }

TEST_F(ConvOps, DepthwiseOnlyFilterGradient) { check(depthwise(2, 6, 6, 3, 1, 3, 2, true, CLTRAIN_ACT_RELU), false, true); }

// The convolution steps of one mnist-kaggle training step at batch 32 (forward and backward of
// its four convolutions; conv1 needs no dx), timed on the wall clock after a warm-up iteration.
TEST_F(ConvOps, MnistKaggleConvStepTiming) {
  make_backend(nullptr);
  struct Layer {
    int h, ic, oc, k;
    bool dx;
  };
  const Layer layers[] = {{28, 1, 32, 5, false}, {28, 32, 32, 5, true}, {14, 32, 64, 3, true}, {14, 64, 64, 3, true}};
  std::mt19937 rng(7);
  std::vector<std::pair<int, F>> inputs;
  std::vector<F> weights;
  weights.reserve(8);
  for (const Layer& l : layers) {
    Conv c = conv(32, l.h, l.h, l.ic, l.oc, l.k, 1, true, CLTRAIN_ACT_RELU);
    c.finish();
    weights.push_back(random_f(rng, count_of(c.w_dims()), -0.1f, 0.1f));
    const F& w = weights.back();
    weights.push_back(random_f(rng, l.oc, -0.1f, 0.1f));
    const F& b = weights.back();
    const int tx = g_.tensor("x", c.x_dims(), CLTRAIN_ROLE_NON_CONST);
    const int tw = g_.tensor("W", c.w_dims(), CLTRAIN_ROLE_TRAINABLE, &w);
    const int tb = g_.tensor("b", {l.oc}, CLTRAIN_ROLE_TRAINABLE, &b);
    const int ty = g_.tensor("y", c.y_dims(), CLTRAIN_ROLE_NON_CONST);
    const int tdy = g_.tensor("dy", c.y_dims(), CLTRAIN_ROLE_BACK_PROP);
    const int tdx = l.dx ? g_.tensor("dx", c.x_dims(), CLTRAIN_ROLE_BACK_PROP) : -1;
    const int tdw = g_.tensor("dW", c.w_dims(), CLTRAIN_ROLE_GRADIENT);
    const int tdb = g_.tensor("db", {l.oc}, CLTRAIN_ROLE_GRADIENT);
    cltrain_op_params p{};
    p.activation = CLTRAIN_ACT_RELU;
    p.padding = CLTRAIN_PADDING_SAME;
    p.stride_h = p.stride_w = p.dilation_h = p.dilation_w = 1;
    g_.step(CLTRAIN_OP_CONV_2D, CLTRAIN_PHASE_FORWARD, {tx, tw, tb}, {ty}, p);
    g_.step(CLTRAIN_OP_CONV_2D, CLTRAIN_PHASE_BACKWARD, {tx, tw, ty, tdy}, {tdx, tdw, tdb}, p);
    inputs.emplace_back(tx, random_f(rng, count_of(c.x_dims()), 0, 1));
    inputs.emplace_back(tdy, random_f(rng, count_of(c.y_dims()), -1e-3f, 1e-3f));
  }
  std::vector<int> written;
  for (auto& [id, v] : inputs) written.push_back(id);
  g_.set_lifetimes(written, {});
  // Every tensor lives over the whole step order: the steps run in any order here.
  for (auto& t : g_.tensors) t.first_step = 0, t.last_step = static_cast<int32_t>(g_.steps.size()) - 1;
  const cltrain_graph_desc desc = g_.desc();
  cltrain_memory_report report{};
  report.struct_size = sizeof(report);
  ASSERT_EQ(api_->prepare(backend_, &desc, &report), CLTRAIN_OK) << api_->last_error(backend_);
  for (auto& [id, v] : inputs) ASSERT_EQ(api_->write_tensor(backend_, id, v.data(), v.size() * 4), CLTRAIN_OK);
  const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};
  // Wall clock, and the process's CPU time: on a busy machine the latter (divided by the cores
  // the device uses) still shows the work done.
  double cpu_ms = 0;
  auto run_steps = [&](const std::vector<int32_t>& steps) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    EXPECT_EQ(api_->run(backend_, steps.data(), static_cast<int32_t>(steps.size()), &args), CLTRAIN_OK)
        << api_->last_error(backend_);
    EXPECT_EQ(api_->sync(backend_), CLTRAIN_OK);
    cpu_ms = 1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<int32_t> all(g_.steps.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
  run_steps(all);  // warm-up: CLBlast compiles its kernels on first use
  double total = 0, total_cpu = 0;
  for (size_t s = 0; s < g_.steps.size(); ++s) {
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < 3; ++r) {
      best = std::min(best, run_steps({static_cast<int32_t>(s)}));
      best_cpu = std::min(best_cpu, cpu_ms);
    }
    std::printf("  conv%zu %-8s %8.2f ms wall %8.2f ms cpu\n", s / 2 + 1, s % 2 ? "backward" : "forward", best,
                best_cpu);
    total += best, total_cpu += best_cpu;
  }
  std::printf("  mnist-kaggle conv steps, batch 32, forward + backward: %.1f ms wall, %.1f ms cpu "
              "(layer-scope peak %.2f MiB)\n",
              total, total_cpu, report.role_peak[CLTRAIN_ROLE_LAYER_SCOPE] / 1048576.0);
  RecordProperty("conv_step_ms", std::to_string(total));
}

}  // namespace
