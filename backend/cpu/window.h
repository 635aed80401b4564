// The geometry of sliding-window ops (convolutions and pools) on NHWC tensors: output size and
// padding per cltrain_ops.h (SAME pads the smaller half before), and which filter taps of an
// output position fall inside the input.
#pragma once

#include <cstdint>
#include <string>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {

struct WindowAxis {
  int64_t in = 0, out = 0, filter = 0, stride = 1, dilation = 1, pad_before = 0;
  // Input position of tap k of output position o (may lie outside [0, in)).
  int64_t pos(int64_t o, int64_t k) const { return o * stride - pad_before + k * dilation; }
  // The taps of output position o that fall inside the input: [*lo, *hi) (empty if lo >= hi).
  void taps(int64_t o, int64_t* lo, int64_t* hi) const;
  // The output position that reaches input position i with tap k, or -1 if none does.
  int64_t out_for(int64_t i, int64_t k) const;
};

struct Window {
  int64_t batch = 0;
  WindowAxis h, w;
};

// Fills *axis for one spatial dimension; "" or what is wrong ("height" / "width" in `what`).
std::string window_axis(int32_t padding, int64_t in, int64_t filter, int64_t stride, int64_t dilation, const char* what,
                        WindowAxis* axis);

// The window of an op on x [N,H,W,C] with the given filter, whose output y must be
// [N,OH,OW,out_channels]; "" or what is wrong. Reads padding and strides from params.
std::string make_window(const cltrain_op_params& p, const TensorRef& x, int64_t filter_h, int64_t filter_w,
                        int64_t dilation_h, int64_t dilation_w, Window* win);
std::string require_window_output(const Window& win, const TensorRef& y, int64_t channels, const char* what);

// A rank-4 tensor; "" or what is wrong.
std::string require_rank4(const TensorRef& t, const char* what);

}  // namespace cpu
}  // namespace cltrain
