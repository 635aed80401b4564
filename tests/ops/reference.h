// References in double for the op cases, written from the definitions in cltrain_backend.h and
// cltrain_ops.h (independently of the CPU backend): fused activations, window geometry,
// convolutions and pools, forward and backward.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"

namespace cltrain {
namespace optest {

const char* act_name(int32_t act);
double ref_activation(int32_t act, double z);
double ref_activation_derivative(int32_t act, double y);  // d act / dz through y = act(z)

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

// Max or average pool on x [N,H,W,C], with dx for dy if non-empty.
struct PoolRef {
  std::vector<double> y, dx;
};
PoolRef pool_reference(const std::vector<double>& x, const std::vector<int32_t>& xdims, const cltrain_op_params& p,
                       bool max, const std::vector<double>& dy);

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
