// The geometry of CONV_2D and DEPTHWISE_CONV_2D steps (NHWC), checked as the CPU backend checks
// it: output size and padding per cltrain_ops.h (SAME pads the smaller half before), strides and
// dilations, and which tensors of the step are present.
//   forward:  in [x, W, b] out [y]
//   backward: in [x, W, y, dy] out [dx, dW, db]; x is -1 when dW is; y is -1 when the activation
//             is NONE; the geometry comes from x, else from dx; with neither only db is computed.
#pragma once

#include <cstdint>
#include <string>

#include "ops/op.h"

namespace cltrain::ocl {

struct ConvAxis {
  int64_t in = 0, out = 0, filter = 0, stride = 1, dilation = 1, pad_before = 0;
};

struct ConvShape {
  bool depthwise = false;
  bool has_geometry = false;                             // false: a backward step with neither x nor dx (db only)
  int64_t n = 0, in_ch = 0, out_ch = 0, multiplier = 1;  // multiplier: depthwise only
  ConvAxis h, w;
  int32_t x = -1, w_t = -1, bias = -1, y = -1, dy = -1, dx = -1, dw = -1, db = -1;
  int32_t activation = CLTRAIN_ACT_NONE;
  int32_t dx_activation = CLTRAIN_ACT_NONE;  // backward: the producer of x's, applied to dx

  int64_t taps() const { return h.filter * w.filter; }
  int64_t positions() const { return n * h.out * w.out; }  // rows of y viewed as [rows, out_ch]
  // -D definitions of the geometry: N H W IC OH OW OC KH KW SH SW DH DW PT PL (and M).
  Defines defines() const;
};

// Empty if the step is a convolution this backend runs (op CONV_2D or DEPTHWISE_CONV_2D); fills sh.
std::string check_conv(const StepView& s, ConvShape& sh);

}  // namespace cltrain::ocl
