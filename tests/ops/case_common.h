// What several op families' cases share: the convolution case, index maps between a tensor and its
// reduced or padded shape (cases_mean.cc, cases_pad.cc), and the one-input case whose backward
// reads only dy.
#pragma once

#include <string>
#include <vector>

#include "op_case.h"

namespace cltrain {
namespace optest {

// Strides of y for each axis of x (0 on reduced axes).
std::vector<uint64_t> reduced_strides(const std::vector<int32_t>& x, int32_t mask);

// The y index of every x index (offset: added to x's coordinates first).
std::vector<uint64_t> y_index(const std::vector<int32_t>& x, const std::vector<uint64_t>& stride,
                              const std::vector<int32_t>& offset = {});

// CONV_2D and DEPTHWISE_CONV_2D (cases_conv2d.cc, cases_depthwise_conv2d.cc).
struct ConvSpec {
  std::string tag;
  std::vector<int32_t> x;  // [N,H,W,C]
  int32_t kh, kw;
  int32_t channels;  // CONV_2D: output channels; DEPTHWISE_CONV_2D: the depth multiplier
  int32_t padding, stride_h, stride_w, dilation_h, dilation_w;
  int32_t act;
  bool bias = true;
  bool dx = true;  // false: a first layer
  bool dw = true;  // false: a frozen filter (x is -1)
  float w_scale = 1.0f;
  int fd_samples = 32;
  double fd_eps = 1e-2;               // smaller where a bias moves many outputs across a clamp
  int32_t dx_act = CLTRAIN_ACT_NONE;  // params.dx_activation: x's producer's activation (RELU, RELU6)
  // The OpenCL backend's scratch bound (CLTRAIN_OPENCL_SCRATCH_BYTES) for the case, "" for its own:
  // a few KiB force every chunking path of its GEMM-based CONV_2D.
  std::string opencl_scratch_bytes = {};
};

// forward in [x, W, b] out [y], backward in [x, W, y, dy] out [dx, dW, db], with the double
// reference; channels is the depth multiplier for depthwise.
OpCase conv_case(const ConvSpec& s, bool depthwise);

// Tensors x 0, y 1, dy 2, dx 3: forward in [x] out [y], backward in [dy] out [dx].
OpCase unary_case(int32_t op, const std::string& name, std::vector<int32_t> xdims, std::vector<int32_t> ydims,
                  const cltrain_op_params& p);

// A unary_case that only moves elements (PAD, TRANSPOSE): y[map[i]] = x[i], fill (zeros) where no
// x element goes (y has y_count elements), dx[i] = dy[map[i]]; exact on every backend.
void copy_reference(OpCase& c, std::vector<uint64_t> map, uint64_t y_count, float fill = 0.0f);

// A unary_case whose y gathers from x (SLICE, TILE): y[i] = x[src[i]]; dx (x_count elements) the
// sum from 0 of dy[i] over the i that read it, in increasing i.
void gather_reference(OpCase& c, std::vector<uint64_t> src, uint64_t x_count);

}  // namespace optest
}  // namespace cltrain
