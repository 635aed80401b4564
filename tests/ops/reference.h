// References for the op cases, written from the definitions in cltrain_backend.h and
// cltrain_ops.h (independently of the CPU backend): fused activations, window geometry,
// convolutions and pools, forward and backward. The templates compute in double for a case's
// reference, and in float, in the rounding order of the numerics, for its exact outputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "cltrain/cltrain_backend.h"
#include "numerics.h"

namespace cltrain {
namespace optest {

const char* act_name(int32_t act);
double ref_activation(int32_t act, double z);
double ref_activation_derivative(int32_t act, double y);  // d act / dz through y = act(z)

// The numerics' TANH and LOGISTIC forward in float (clt_exp); std::tanh and std::exp in double.
template <class T>
T ref_tanh(T x) {
  if constexpr (std::is_same_v<T, float>) {
    const float e = clt_exp(-2.0f * std::fabs(x)), t = (1.0f - e) / (1.0f + e);
    return x < 0.0f ? -t : t;
  } else {
    return std::tanh(x);
  }
}
template <class T>
T ref_logistic(T x) {
  if constexpr (std::is_same_v<T, float>)
    return 1.0f / (1.0f + clt_exp(-x));
  else
    return 1.0 / (1.0 + std::exp(-x));
}
// A fused activation: clamps as v = z < lo ? lo : z, then v > hi ? hi : v.
template <class T>
T ref_act(int32_t act, T z) {
  switch (act) {
    case CLTRAIN_ACT_RELU: return z < T(0) ? T(0) : z;
    case CLTRAIN_ACT_RELU_N1_TO_1: {
      const T v = z < T(-1) ? T(-1) : z;
      return v > T(1) ? T(1) : v;
    }
    case CLTRAIN_ACT_RELU6: {
      const T v = z < T(0) ? T(0) : z;
      return v > T(6) ? T(6) : v;
    }
    case CLTRAIN_ACT_TANH: return ref_tanh(z);
    default: return z;
  }
}
// dz from y = act(z) and dy: a select for the clamps, dy * (1 - y * y) for TANH.
template <class T>
T ref_act_grad(int32_t act, T y, T dy) {
  switch (act) {
    case CLTRAIN_ACT_RELU: return y > T(0) ? dy : T(0);
    case CLTRAIN_ACT_RELU_N1_TO_1: return (y > T(-1) && y < T(1)) ? dy : T(0);
    case CLTRAIN_ACT_RELU6: return (y > T(0) && y < T(6)) ? dy : T(0);
    case CLTRAIN_ACT_TANH: return dy * (T(1) - y * y);
    default: return dy;
  }
}

// One spatial axis of a window op per cltrain_ops.h: out and the padding before.
struct RefAxis {
  int64_t in, filter, stride, dilation, out, pad;
  RefAxis(int32_t padding, int64_t in_, int64_t filter_, int64_t stride_, int64_t dilation_);
  int64_t pos(int64_t o, int64_t k) const { return o * stride - pad + k * dilation; }
  bool inside(int64_t i) const { return i >= 0 && i < in; }
};

// A convolution (depthwise: W [1,KH,KW,C*M]) on x [N,H,W,I]; b may be empty. With dy non-empty
// also the gradients (dz = dy through the activation).
struct ConvRef {
  std::vector<double> y, dx, dw, db;
};
ConvRef conv_reference(const std::vector<double>& x, const std::vector<int32_t>& xdims, const std::vector<double>& w,
                       const std::vector<int32_t>& wdims, const std::vector<double>& b, const cltrain_op_params& p,
                       bool depthwise, const std::vector<double>& dy);

// Max or average pool on x [N,H,W,C], with dx for dy if non-empty: the first maximum of each
// window in (kh, kw) order, or the sum of its inside positions over their count; dx summed over
// the windows in increasing order.
template <class T>
struct PoolRef {
  std::vector<T> y, dx;
};
template <class T>
PoolRef<T> pool_reference(const std::vector<T>& x, const std::vector<int32_t>& xdims, const cltrain_op_params& p,
                          bool max, const std::vector<T>& dy);

// Output dims of a window op on x [N,H,W,*] with `channels` output channels.
std::vector<int32_t> window_output(const std::vector<int32_t>& xdims, const cltrain_op_params& p, int64_t filter_h,
                                   int64_t filter_w, int64_t channels);

// n distinct values spaced `gap` apart, centred on 0, in an order shuffled by seed: inputs for
// which a perturbation smaller than gap / 2 never changes which element is the largest.
std::vector<float> distinct_values(size_t n, float gap, uint32_t seed);
// n values whose magnitudes lie in [lo, hi], with random signs (divisors away from zero).
std::vector<float> away_from_zero(size_t n, float lo, float hi, uint32_t seed);

}  // namespace optest
}  // namespace cltrain
