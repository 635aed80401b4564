// The CNN ops of the OpenCL plugin (pools, Mean, Pad, broadcasting arithmetic, ReLU6/Tanh/
// Logistic, Concatenation), forward and backward at small odd sizes, against a float reference
// written here in the rounding orders of cltrain_backend.h ("Numerics"). On POCL, which rounds
// IEEE-754 single precision exactly, the plugin must match the reference bit for bit; elsewhere
// within kTolerance of the largest magnitude. The references scatter where the kernels gather,
// so both orders of the same sums are checked against each other.
#include <cctype>
#include <random>

#include "../../kernels/numerics.h"
#include "plugin_fixture.h"

namespace {

using namespace cltrain_test;
using F = std::vector<float>;

F random_f(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  F v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Small integers: many ties, for the first-maximum rule of MaxPool.
F random_ints(std::mt19937& rng, size_t n, int hi) {
  std::uniform_int_distribution<int> d(0, hi);
  F v(n);
  for (float& x : v) x = static_cast<float>(d(rng));
  return v;
}

size_t count_of(const std::vector<int>& dims) {
  size_t n = 1;
  for (int d : dims) n *= static_cast<size_t>(d);
  return n;
}

// Builds a graph, runs every step once and reads tensors back.
class CnnOps : public OpenCLPlugin {
 public:  // the case builders below are free functions
  void SetUp() override {
    OpenCLPlugin::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(create(-1), CLTRAIN_OK);
    std::string dev = api_->device_name(backend_);
    for (char& c : dev) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    exact_ = dev.find("pocl") != std::string::npos;
  }
  int in(const char* name, const std::vector<int>& dims, F data) {
    const int id = g_.tensor(name, dims, CLTRAIN_ROLE_NON_CONST);
    inputs_.emplace_back(id, std::move(data));
    return id;
  }
  int out(const char* name, const std::vector<int>& dims) {
    const int id = g_.tensor(name, dims, CLTRAIN_ROLE_BACK_PROP);
    outputs_.push_back(id);
    return id;
  }
  void run() {
    std::vector<int> written;
    for (auto& [id, v] : inputs_) written.push_back(id);
    g_.set_lifetimes(written, outputs_);
    const cltrain_graph_desc desc = g_.desc();
    for (size_t s = 0; s < g_.steps.size(); ++s)
      ASSERT_TRUE(api_->supports(backend_, &desc, static_cast<int32_t>(s), 1)) << "step " << s;
    ASSERT_EQ(api_->prepare(backend_, &desc, nullptr), CLTRAIN_OK) << api_->last_error(backend_);
    for (auto& [id, v] : inputs_)
      ASSERT_EQ(api_->write_tensor(backend_, id, v.data(), v.size() * 4), CLTRAIN_OK) << api_->last_error(backend_);
    std::vector<int32_t> order(g_.steps.size());
    for (size_t s = 0; s < order.size(); ++s) order[s] = static_cast<int32_t>(s);
    const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};
    ASSERT_EQ(api_->run(backend_, order.data(), static_cast<int32_t>(order.size()), &args), CLTRAIN_OK)
        << api_->last_error(backend_);
  }
  F read(int id) {
    F v(count_of(std::vector<int>(g_.tensors[id].dims, g_.tensors[id].dims + g_.tensors[id].rank)));
    EXPECT_EQ(api_->read_tensor(backend_, id, v.data(), v.size() * 4), CLTRAIN_OK) << api_->last_error(backend_);
    return v;
  }
  // Bitwise on POCL, else within kTolerance of the tensor's largest magnitude.
  void expect(int id, const F& want, const char* what) {
    const F got = read(id);
    ASSERT_EQ(got.size(), want.size()) << what;
    float scale = 0;
    for (float w : want) scale = std::max(scale, std::fabs(w));
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const bool ok = exact_ ? (got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
                             : std::fabs(got[i] - want[i]) <= kTolerance * std::max(scale, 1.0f);
      if (!ok && bad++ < 5)
        ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << " want " << want[i] << (exact_ ? " (bitwise)" : "");
    }
    EXPECT_EQ(bad, 0u) << what;
  }

  TinyGraph g_;
  std::vector<std::pair<int, F>> inputs_;
  std::vector<int> outputs_;
  bool exact_ = false;
};

// ---- references, in the orders of cltrain_backend.h ----

struct Pool2D {
  int n, h, w, c, fh, fw, sh, sw, oh, ow, pt, pl;
  bool same;
  Pool2D(int n_, int h_, int w_, int c_, int fh_, int fw_, int sh_, int sw_, bool same_)
      : n(n_), h(h_), w(w_), c(c_), fh(fh_), fw(fw_), sh(sh_), sw(sw_), same(same_) {
    oh = same ? (h + sh - 1) / sh : (h - fh) / sh + 1;
    ow = same ? (w + sw - 1) / sw : (w - fw) / sw + 1;
    pt = same ? std::max((oh - 1) * sh + fh - h, 0) / 2 : 0;
    pl = same ? std::max((ow - 1) * sw + fw - w, 0) / 2 : 0;
  }
  void window(int o_h, int o_w, int* h0, int* h1, int* w0, int* w1) const {
    *h0 = std::max(o_h * sh - pt, 0), *h1 = std::min(o_h * sh - pt + fh, h);
    *w0 = std::max(o_w * sw - pl, 0), *w1 = std::min(o_w * sw - pl + fw, w);
  }
  size_t xi(int b, int i, int j, int k) const { return ((static_cast<size_t>(b) * h + i) * w + j) * c + k; }
  size_t yi(int b, int i, int j, int k) const { return ((static_cast<size_t>(b) * oh + i) * ow + j) * c + k; }
  // Forward (max or average) and the scattered backward, dx += dy (max, at the first maximum) or
  // dx += dy / count, over windows in increasing (oh, ow).
  void run(bool max, const F& x, const F& dy, F& y, F& dx) const {
    y.assign(static_cast<size_t>(n) * oh * ow * c, 0.0f);
    dx.assign(x.size(), 0.0f);
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j)
          for (int k = 0; k < c; ++k) {
            int h0, h1, w0, w1;
            window(i, j, &h0, &h1, &w0, &w1);
            float m = x[xi(b, h0, w0, k)], s = 0.0f;
            size_t at = xi(b, h0, w0, k);
            for (int p = h0; p < h1; ++p)
              for (int q = w0; q < w1; ++q) {
                const float v = x[xi(b, p, q, k)];
                s = s + v;
                if (v > m) m = v, at = xi(b, p, q, k);
              }
            const float cnt = static_cast<float>((h1 - h0) * (w1 - w0));
            y[yi(b, i, j, k)] = max ? m : s / cnt;
            if (max) {
              dx[at] = dx[at] + dy[yi(b, i, j, k)];
            } else {
              for (int p = h0; p < h1; ++p)
                for (int q = w0; q < w1; ++q) dx[xi(b, p, q, k)] = dx[xi(b, p, q, k)] + dy[yi(b, i, j, k)] / cnt;
            }
          }
  }
};

// Strides of dims (row-major) and the coordinates of flat index i.
std::vector<size_t> coords(size_t i, const std::vector<int>& dims) {
  std::vector<size_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    c[d] = i % static_cast<size_t>(dims[d]);
    i /= static_cast<size_t>(dims[d]);
  }
  return c;
}
size_t flat(const std::vector<size_t>& c, const std::vector<int>& dims) {
  size_t i = 0;
  for (size_t d = 0; d < dims.size(); ++d) i = i * static_cast<size_t>(dims[d]) + (dims[d] == 1 ? 0 : c[d]);
  return i;
}

float act(int a, float z) {
  switch (a) {
    case CLTRAIN_ACT_RELU: return z < 0.0f ? 0.0f : z;
    case CLTRAIN_ACT_RELU_N1_TO_1: return std::min(std::max(z, -1.0f), 1.0f);
    case CLTRAIN_ACT_RELU6: return std::min(std::max(z, 0.0f), 6.0f);
    case CLTRAIN_ACT_TANH: {
      const float e = clt_exp(-2.0f * std::fabs(z)), t = (1.0f - e) / (1.0f + e);
      return z < 0.0f ? -t : t;
    }
    default: return z;
  }
}
float act_grad(int a, float y, float dy) {
  switch (a) {
    case CLTRAIN_ACT_RELU: return y > 0.0f ? dy : 0.0f;
    case CLTRAIN_ACT_RELU_N1_TO_1: return (y > -1.0f && y < 1.0f) ? dy : 0.0f;
    case CLTRAIN_ACT_RELU6: return (y > 0.0f && y < 6.0f) ? dy : 0.0f;
    case CLTRAIN_ACT_TANH: return dy * (1.0f - y * y);
    default: return dy;
  }
}

// ---- tests ----

void pool_case(CnnOps& t, bool max, Pool2D p, F x) {
  std::mt19937 rng(7);
  const F dy = random_f(rng, static_cast<size_t>(p.n) * p.oh * p.ow * p.c, -1.0f, 1.0f);
  cltrain_op_params prm{};
  prm.filter_h = p.fh, prm.filter_w = p.fw, prm.stride_h = p.sh, prm.stride_w = p.sw;
  prm.padding = p.same ? CLTRAIN_PADDING_SAME : CLTRAIN_PADDING_VALID;
  const cltrain_op op = max ? CLTRAIN_OP_MAX_POOL_2D : CLTRAIN_OP_AVERAGE_POOL_2D;
  const int tx = t.in("x", {p.n, p.h, p.w, p.c}, x);
  const int ty = t.out("y", {p.n, p.oh, p.ow, p.c});
  const int tdy = t.in("dy", {p.n, p.oh, p.ow, p.c}, dy);
  const int tdx = t.out("dx", {p.n, p.h, p.w, p.c});
  t.g_.step(op, CLTRAIN_PHASE_FORWARD, {tx}, {ty}, prm);
  if (max)
    t.g_.step(op, CLTRAIN_PHASE_BACKWARD, {tx, tdy}, {tdx}, prm);
  else
    t.g_.step(op, CLTRAIN_PHASE_BACKWARD, {tdy}, {tdx}, prm);
  t.run();
  F y, dx;
  p.run(max, x, dy, y, dx);
  t.expect(ty, y, "y");
  t.expect(tdx, dx, "dx");
}

TEST_F(CnnOps, MaxPoolSameWithTies) {
  std::mt19937 rng(1);
  Pool2D p(2, 7, 9, 3, 3, 3, 2, 2, true);
  pool_case(*this, true, p, random_ints(rng, 2 * 7 * 9 * 3, 3));
}
TEST_F(CnnOps, MaxPoolValidOverlapping) {
  std::mt19937 rng(2);
  Pool2D p(2, 6, 5, 4, 3, 2, 1, 2, false);
  pool_case(*this, true, p, random_f(rng, 2 * 6 * 5 * 4, -2.0f, 2.0f));
}
TEST_F(CnnOps, AveragePoolSame) {
  std::mt19937 rng(3);
  Pool2D p(2, 7, 9, 3, 3, 3, 2, 2, true);
  pool_case(*this, false, p, random_f(rng, 2 * 7 * 9 * 3, -2.0f, 2.0f));
}
TEST_F(CnnOps, AveragePoolValid) {
  std::mt19937 rng(4);
  Pool2D p(1, 6, 7, 5, 2, 3, 2, 1, false);
  pool_case(*this, false, p, random_f(rng, 6 * 7 * 5, -2.0f, 2.0f));
}

void mean_case(CnnOps& t, const std::vector<int>& xd, int mask, bool keep) {
  std::mt19937 rng(11);
  std::vector<int> yd, yk;  // y's dims, and x's dims with 1 where reduced
  size_t cnt = 1;
  for (size_t d = 0; d < xd.size(); ++d) {
    const bool red = mask >> d & 1;
    if (red) cnt *= static_cast<size_t>(xd[d]);
    if (!red || keep) yd.push_back(red ? 1 : xd[d]);
    yk.push_back(red ? 1 : xd[d]);
  }
  const F x = random_f(rng, count_of(xd), -1.0f, 1.0f), dy = random_f(rng, count_of(yk), -1.0f, 1.0f);
  cltrain_op_params prm{};
  prm.axes_mask = mask, prm.keep_dims = keep;
  const int tx = t.in("x", xd, x), ty = t.out("y", yd), tdy = t.in("dy", yd, dy), tdx = t.out("dx", xd);
  t.g_.step(CLTRAIN_OP_MEAN, CLTRAIN_PHASE_FORWARD, {tx}, {ty}, prm);
  t.g_.step(CLTRAIN_OP_MEAN, CLTRAIN_PHASE_BACKWARD, {tdy}, {tdx}, prm);
  t.run();
  F s(dy.size(), 0.0f), dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {  // increasing flat index of x
    const size_t o = flat(coords(i, xd), yk);
    s[o] = s[o] + x[i];
    dx[i] = dy[o] / static_cast<float>(cnt);
  }
  for (float& v : s) v = v / static_cast<float>(cnt);
  t.expect(ty, s, "y");
  t.expect(tdx, dx, "dx");
}

TEST_F(CnnOps, MeanOverHWKeepDims) { mean_case(*this, {3, 5, 6, 7}, 0b0110, true); }
TEST_F(CnnOps, MeanOverOuterAndMiddle) { mean_case(*this, {3, 4, 5}, 0b101, false); }
TEST_F(CnnOps, MeanOverAll) { mean_case(*this, {4, 1, 33}, 0b111, false); }

TEST_F(CnnOps, PadAndCrop) {
  std::mt19937 rng(21);
  const std::vector<int> xd = {2, 3, 4, 5}, yd = {2, 6, 7, 5};
  const int pb[4] = {0, 1, 2, 0}, pa[4] = {0, 2, 1, 0};
  const F x = random_f(rng, count_of(xd), -1.0f, 1.0f), dy = random_f(rng, count_of(yd), -1.0f, 1.0f);
  cltrain_op_params prm{};
  for (int d = 0; d < 4; ++d) prm.pad_before[d] = pb[d], prm.pad_after[d] = pa[d];
  const int tx = in("x", xd, x), ty = out("y", yd), tdy = in("dy", yd, dy), tdx = out("dx", xd);
  g_.step(CLTRAIN_OP_PAD, CLTRAIN_PHASE_FORWARD, {tx}, {ty}, prm);
  g_.step(CLTRAIN_OP_PAD, CLTRAIN_PHASE_BACKWARD, {tdy}, {tdx}, prm);
  run();
  F y(count_of(yd), 0.0f), dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<size_t> c = coords(i, xd);
    for (int d = 0; d < 4; ++d) c[d] += static_cast<size_t>(pb[d]);
    y[flat(c, yd)] = x[i];
    dx[i] = dy[flat(c, yd)];
  }
  expect(ty, y, "y");
  expect(tdx, dx, "dx");
}

// y = act(a op b) and its gradients; a_is_b uses one tensor for both operands.
void arith_case(CnnOps& t, cltrain_op op, int activation, const std::vector<int>& ad, const std::vector<int>& bd,
                bool a_is_b = false, bool want_da = true, bool want_db = true) {
  std::mt19937 rng(31 + op);
  std::vector<int> yd(ad.size());
  for (size_t d = 0; d < ad.size(); ++d) yd[d] = std::max(ad[d], bd[d]);
  const F a = random_f(rng, count_of(ad), op == CLTRAIN_OP_DIV ? 0.5f : -4.0f, 4.0f);
  const F b = a_is_b ? a : random_f(rng, count_of(bd), op == CLTRAIN_OP_DIV ? 0.5f : -4.0f, 4.0f);
  const F dy = random_f(rng, count_of(yd), -1.0f, 1.0f);
  cltrain_op_params prm{};
  prm.activation = activation;
  const int ta = t.in("a", ad, a), tb = a_is_b ? ta : t.in("b", bd, b);
  const int ty = t.out("y", yd), tdy = t.in("dy", yd, dy);
  const int tda = want_da ? t.out("da", ad) : -1, tdb = want_db ? t.out("db", bd) : -1;
  const bool mul = op == CLTRAIN_OP_MUL, div = op == CLTRAIN_OP_DIV;  // what the backward reads
  const int read_a = (mul || div) && tdb >= 0 ? ta : -1;
  const int read_b = (mul && tda >= 0) || div ? tb : -1;
  t.g_.step(op, CLTRAIN_PHASE_FORWARD, {ta, tb}, {ty}, prm);
  t.g_.step(op, CLTRAIN_PHASE_BACKWARD, {read_a, read_b, activation ? ty : -1, tdy}, {tda, tdb}, prm);
  t.run();
  F y(dy.size()), da(a.size(), 0.0f), db(b.size(), 0.0f);
  for (size_t i = 0; i < y.size(); ++i) {  // increasing flat index of y
    const std::vector<size_t> c = coords(i, yd);
    const size_t ia = flat(c, ad), ib = flat(c, bd);
    const float av = a[ia], bv = b[ib];
    const float z = op == CLTRAIN_OP_ADD ? av + bv : op == CLTRAIN_OP_SUB ? av - bv : mul ? av * bv : av / bv;
    y[i] = act(activation, z);
    const float g = act_grad(activation, y[i], dy[i]);
    const float ca = mul ? g * bv : div ? g / bv : g;
    const float cb = mul ? g * av : div ? -((g * av) / (bv * bv)) : op == CLTRAIN_OP_SUB ? -g : g;
    da[ia] = da[ia] + ca;
    db[ib] = db[ib] + cb;
  }
  t.expect(ty, y, "y");
  if (tda >= 0) t.expect(tda, da, "da");
  if (tdb >= 0) t.expect(tdb, db, "db");
}

TEST_F(CnnOps, AddBroadcastRelu6) { arith_case(*this, CLTRAIN_OP_ADD, CLTRAIN_ACT_RELU6, {2, 3, 4, 5}, {1, 3, 1, 5}); }
TEST_F(CnnOps, AddPerChannelBias) { arith_case(*this, CLTRAIN_OP_ADD, CLTRAIN_ACT_NONE, {2, 5, 5, 8}, {1, 1, 1, 8}); }
TEST_F(CnnOps, SubBothBroadcastOnlyDb) {
  arith_case(*this, CLTRAIN_OP_SUB, CLTRAIN_ACT_RELU, {2, 1, 4}, {1, 3, 1}, false, false, true);
}
TEST_F(CnnOps, MulSameTensorTwice) { arith_case(*this, CLTRAIN_OP_MUL, CLTRAIN_ACT_NONE, {3, 7}, {3, 7}, true); }
TEST_F(CnnOps, MulBroadcastOnlyDa) {
  arith_case(*this, CLTRAIN_OP_MUL, CLTRAIN_ACT_RELU_N1_TO_1, {2, 3, 4}, {2, 1, 4}, false, true, false);
}
TEST_F(CnnOps, DivBroadcastTanh) { arith_case(*this, CLTRAIN_OP_DIV, CLTRAIN_ACT_TANH, {3, 4, 5}, {3, 1, 5}); }
TEST_F(CnnOps, DivScalarDivisor) { arith_case(*this, CLTRAIN_OP_DIV, CLTRAIN_ACT_NONE, {1, 2, 3, 2, 5, 3}, {1, 1, 1, 1, 1, 1}); }

void activation_case(CnnOps& t, cltrain_op op) {
  std::mt19937 rng(41 + op);
  const std::vector<int> d = {3, 1001};
  F x = random_f(rng, count_of(d), -10.0f, 10.0f);
  x[0] = 0.0f, x[1] = 6.0f, x[2] = -0.0f, x[3] = 100.0f, x[4] = -100.0f, x[5] = 1e-8f;
  const F dy = random_f(rng, count_of(d), -1.0f, 1.0f);
  const int tx = t.in("x", d, x), ty = t.out("y", d), tdy = t.in("dy", d, dy), tdx = t.out("dx", d);
  t.g_.step(op, CLTRAIN_PHASE_FORWARD, {tx}, {ty});
  t.g_.step(op, CLTRAIN_PHASE_BACKWARD, {ty, tdy}, {tdx});
  t.run();
  F y(x.size()), dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (op == CLTRAIN_OP_RELU6) {
      y[i] = act(CLTRAIN_ACT_RELU6, x[i]);
      dx[i] = act_grad(CLTRAIN_ACT_RELU6, y[i], dy[i]);
    } else if (op == CLTRAIN_OP_TANH) {
      y[i] = act(CLTRAIN_ACT_TANH, x[i]);
      dx[i] = dy[i] * (1.0f - y[i] * y[i]);
    } else {
      y[i] = 1.0f / (1.0f + clt_exp(-x[i]));
      dx[i] = dy[i] * (y[i] * (1.0f - y[i]));
    }
  }
  t.expect(ty, y, "y");
  t.expect(tdx, dx, "dx");
}

TEST_F(CnnOps, Relu6) { activation_case(*this, CLTRAIN_OP_RELU6); }
TEST_F(CnnOps, Tanh) { activation_case(*this, CLTRAIN_OP_TANH); }
TEST_F(CnnOps, Logistic) { activation_case(*this, CLTRAIN_OP_LOGISTIC); }

// Concatenation of parts along axis; dx of the parts in `absent` are not requested.
void concat_case(CnnOps& t, const std::vector<std::vector<int>>& parts, int axis, unsigned absent) {
  std::mt19937 rng(51);
  std::vector<int> yd = parts[0];
  yd[axis] = 0;
  for (const auto& p : parts) yd[axis] += p[axis];
  const F dy = random_f(rng, count_of(yd), -1.0f, 1.0f);
  std::vector<int> xs, dxs;
  std::vector<F> xv;
  cltrain_op_params prm{};
  prm.axis = axis;
  for (size_t k = 0; k < parts.size(); ++k) {
    xv.push_back(random_f(rng, count_of(parts[k]), -1.0f, 1.0f));
    xs.push_back(t.in("x", parts[k], xv.back()));
    dxs.push_back(absent >> k & 1 ? -1 : t.out("dx", parts[k]));
  }
  const int ty = t.out("y", yd), tdy = t.in("dy", yd, dy);
  t.g_.step(CLTRAIN_OP_CONCATENATION, CLTRAIN_PHASE_FORWARD, xs, {ty}, prm);
  t.g_.step(CLTRAIN_OP_CONCATENATION, CLTRAIN_PHASE_BACKWARD, {tdy}, dxs, prm);
  for (auto& s : t.g_.steps) s.model_op = 0;
  t.run();
  F y(dy.size());
  int start = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    F dx(xv[k].size());
    for (size_t i = 0; i < xv[k].size(); ++i) {
      std::vector<size_t> c = coords(i, parts[k]);
      c[axis] += static_cast<size_t>(start);
      y[flat(c, yd)] = xv[k][i];
      dx[i] = dy[flat(c, yd)];
    }
    if (dxs[k] >= 0) t.expect(dxs[k], dx, "dx");
    start += parts[k][axis];
  }
  t.expect(ty, y, "y");
}

TEST_F(CnnOps, ConcatChannels) { concat_case(*this, {{2, 3, 4, 5}, {2, 3, 4, 1}, {2, 3, 4, 7}}, 3, 0); }
TEST_F(CnnOps, ConcatMiddleAxisOneGradAbsent) { concat_case(*this, {{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, 1, 0b010); }
TEST_F(CnnOps, ConcatOuterAxisGapsAroundAPresentGrad) {
  concat_case(*this, {{1, 3}, {2, 3}, {3, 3}, {1, 3}, {2, 3}, {1, 3}, {2, 3}}, 0, 0b0100101);
}

// supports() refuses what the kernels cannot index (the host then runs the op on the CPU).
TEST_F(CnnOps, neg_ShapesTheKernelsCannotIndexAreRefused) {
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
  EXPECT_TRUE(refused(CLTRAIN_OP_CONCATENATION, std::vector<std::vector<int>>(8, {2, 1}), {2, 8}, c)) << "8 parts";
  EXPECT_TRUE(refused(CLTRAIN_OP_CONCATENATION, {{2, 1}, {3, 1}}, {2, 2}, c)) << "parts differ off the axis";
  cltrain_op_params pool{};
  pool.filter_h = pool.filter_w = 3, pool.stride_h = pool.stride_w = 1, pool.padding = CLTRAIN_PADDING_VALID;
  EXPECT_TRUE(refused(CLTRAIN_OP_MAX_POOL_2D, {{1, 2, 5, 1}}, {1, 0, 3, 1}, pool)) << "filter taller than the input";
}

}  // namespace
