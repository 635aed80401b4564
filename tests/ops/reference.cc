#include "reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace cltrain {
namespace optest {

const char* act_name(int32_t act) {
  switch (act) {
    case CLTRAIN_ACT_NONE: return "none";
    case CLTRAIN_ACT_RELU: return "relu";
    case CLTRAIN_ACT_RELU_N1_TO_1: return "relun1to1";
    case CLTRAIN_ACT_RELU6: return "relu6";
    case CLTRAIN_ACT_TANH: return "tanh";
    default: return "?";
  }
}

double ref_activation(int32_t act, double z) {
  switch (act) {
    case CLTRAIN_ACT_RELU: return std::max(z, 0.0);
    case CLTRAIN_ACT_RELU_N1_TO_1: return std::min(std::max(z, -1.0), 1.0);
    case CLTRAIN_ACT_RELU6: return std::min(std::max(z, 0.0), 6.0);
    case CLTRAIN_ACT_TANH: return std::tanh(z);
    default: return z;
  }
}

double ref_activation_derivative(int32_t act, double y) {
  switch (act) {
    case CLTRAIN_ACT_RELU: return y > 0.0;
    case CLTRAIN_ACT_RELU_N1_TO_1: return y > -1.0 && y < 1.0;
    case CLTRAIN_ACT_RELU6: return y > 0.0 && y < 6.0;
    case CLTRAIN_ACT_TANH: return 1.0 - y * y;
    default: return 1.0;
  }
}

RefAxis::RefAxis(int32_t padding, int64_t in_, int64_t filter_, int64_t stride_, int64_t dilation_)
    : in(in_), filter(filter_), stride(stride_), dilation(dilation_) {
  const int64_t span = (filter - 1) * dilation + 1;
  if (padding == CLTRAIN_PADDING_SAME) {
    out = (in + stride - 1) / stride;
    pad = std::max<int64_t>(0, (out - 1) * stride + span - in) / 2;
  } else {
    out = (in - span + stride) / stride;  // ceil((in - (filter - 1) * dilation) / stride)
    pad = 0;
  }
}

std::vector<int32_t> window_output(const std::vector<int32_t>& xdims, const cltrain_op_params& p, int64_t filter_h,
                                   int64_t filter_w, int64_t channels) {
  const int32_t dh = p.dilation_h > 0 ? p.dilation_h : 1, dw = p.dilation_w > 0 ? p.dilation_w : 1;
  const RefAxis h(p.padding, xdims[1], filter_h, p.stride_h, dh), w(p.padding, xdims[2], filter_w, p.stride_w, dw);
  return {xdims[0], static_cast<int32_t>(h.out), static_cast<int32_t>(w.out), static_cast<int32_t>(channels)};
}

ConvRef conv_reference(const std::vector<double>& x, const std::vector<int32_t>& xd, const std::vector<double>& w,
                       const std::vector<int32_t>& wd, const std::vector<double>& b, const cltrain_op_params& p,
                       bool depthwise, const std::vector<double>& dy) {
  const int64_t N = xd[0], C = xd[3], KH = wd[1], KW = wd[2];
  const int64_t O = depthwise ? wd[3] : wd[0], M = depthwise ? O / C : 1;
  const RefAxis ah(p.padding, xd[1], KH, p.stride_h, p.dilation_h), aw(p.padding, xd[2], KW, p.stride_w, p.dilation_w);
  ConvRef r;
  r.y.assign(static_cast<size_t>(N * ah.out * aw.out * O), 0.0);
  const bool grads = !dy.empty();
  if (grads) {
    r.dx.assign(x.size(), 0.0);
    r.dw.assign(w.size(), 0.0);
    r.db.assign(static_cast<size_t>(O), 0.0);
  }
  // Visits every (output element, input element, weight element) product.
  auto each = [&](auto f) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < ah.out; ++oh)
        for (int64_t ow = 0; ow < aw.out; ++ow)
          for (int64_t o = 0; o < O; ++o) {
            const int64_t yi = ((n * ah.out + oh) * aw.out + ow) * O + o;
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = ah.pos(oh, kh), iw = aw.pos(ow, kw);
                if (!ah.inside(ih) || !aw.inside(iw)) continue;
                if (depthwise) {
                  f(yi, ((n * ah.in + ih) * aw.in + iw) * C + o / M, (kh * KW + kw) * O + o);
                } else {
                  for (int64_t i = 0; i < C; ++i)
                    f(yi, ((n * ah.in + ih) * aw.in + iw) * C + i, ((o * KH + kh) * KW + kw) * C + i);
                }
              }
          }
  };
  each([&](int64_t yi, int64_t xi, int64_t wi) { r.y[yi] += x[xi] * w[wi]; });
  const int64_t per = static_cast<int64_t>(r.y.size());
  for (int64_t yi = 0; yi < per; ++yi) r.y[yi] = ref_activation(p.activation, r.y[yi] + (b.empty() ? 0.0 : b[yi % O]));
  if (!grads) return r;
  std::vector<double> dz(r.y.size());
  for (size_t i = 0; i < dz.size(); ++i) dz[i] = dy[i] * ref_activation_derivative(p.activation, r.y[i]);
  for (size_t i = 0; i < dz.size(); ++i) r.db[i % O] += dz[i];
  each([&](int64_t yi, int64_t xi, int64_t wi) {
    r.dx[xi] += dz[yi] * w[wi];
    r.dw[wi] += dz[yi] * x[xi];
  });
  return r;
}

template <class T>
PoolRef<T> pool_reference(const std::vector<T>& x, const std::vector<int32_t>& xd, const cltrain_op_params& p, bool max,
                          const std::vector<T>& dy) {
  const int64_t N = xd[0], C = xd[3];
  const RefAxis ah(p.padding, xd[1], p.filter_h, p.stride_h, 1), aw(p.padding, xd[2], p.filter_w, p.stride_w, 1);
  PoolRef<T> r;
  r.y.assign(static_cast<size_t>(N * ah.out * aw.out * C), T(0));
  if (!dy.empty()) r.dx.assign(x.size(), T(0));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < ah.out; ++oh)
      for (int64_t ow = 0; ow < aw.out; ++ow)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t yi = ((n * ah.out + oh) * aw.out + ow) * C + c;
          std::vector<int64_t> inside;
          for (int64_t kh = 0; kh < p.filter_h; ++kh)
            for (int64_t kw = 0; kw < p.filter_w; ++kw) {
              const int64_t ih = ah.pos(oh, kh), iw = aw.pos(ow, kw);
              if (ah.inside(ih) && aw.inside(iw)) inside.push_back(((n * ah.in + ih) * aw.in + iw) * C + c);
            }
          if (inside.empty()) continue;
          if (max) {
            int64_t arg = inside[0];
            for (int64_t i : inside)
              if (x[i] > x[arg]) arg = i;
            r.y[yi] = x[arg];
            if (!dy.empty()) r.dx[arg] = r.dx[arg] + dy[yi];
          } else {
            const T count = static_cast<T>(inside.size());
            T s = 0;
            for (int64_t i : inside) s = s + x[i];
            r.y[yi] = s / count;
            if (!dy.empty())
              for (int64_t i : inside) r.dx[i] = r.dx[i] + dy[yi] / count;
          }
        }
  return r;
}

template PoolRef<double> pool_reference(const std::vector<double>&, const std::vector<int32_t>&,
                                        const cltrain_op_params&, bool, const std::vector<double>&);
template PoolRef<float> pool_reference(const std::vector<float>&, const std::vector<int32_t>&, const cltrain_op_params&,
                                       bool, const std::vector<float>&);

std::vector<float> distinct_values(size_t n, float gap, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (static_cast<float>(i) - static_cast<float>(n - 1) / 2.0f) * gap;
  std::mt19937 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

std::vector<float> away_from_zero(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(lo, hi);
  std::bernoulli_distribution sign(0.5);
  std::vector<float> v(n);
  for (float& f : v) f = sign(rng) ? mag(rng) : -mag(rng);
  return v;
}

}  // namespace optest
}  // namespace cltrain
