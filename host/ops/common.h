// What several op families share on the host: the operand checks and FLOPs of the window ops
// (Conv2D, DepthwiseConv2D, MaxPool2D, AveragePool2D; FLOPs over the (output position, filter
// tap) pairs inside the input), and the backward of the ops with a weight and a bias.
#pragma once

#include "ops/op_descriptor.h"

namespace cltrain {

// x [N,H,W,C], W [O,KH,KW,I] (depthwise: [1,KH,KW,C*M]), optional bias [O]; completes
// depth_multiplier from the weights' shape.
void check_convolution(OperandCheck& c, bool depthwise);
// x [N,H,W,C] pooled over filter_h x filter_w windows.
void check_pool(OperandCheck& c);

// The fields Conv2DOptions and DepthwiseConv2DOptions share: padding, strides, dilations, the
// fused activation.
template <class Options>
void read_convolution_options(const Options& o, OptionReader& r, cltrain_op_params& p) {
  p.padding = static_cast<int32_t>(o.padding());
  p.stride_h = o.stride_h();
  p.stride_w = o.stride_w();
  p.dilation_h = o.dilation_h_factor();
  p.dilation_w = o.dilation_w_factor();
  p.activation = r.activation(o.fused_activation_function());
}

// CONV_2D and DEPTHWISE_CONV_2D: in [x, W, b] -> [y]; backward in [x, W, y, dy] -> [dx, dW, db].
uint64_t convolution_flops(const StepTensors& s, bool depthwise);
uint64_t pool_flops(const StepTensors& s, bool average);
// An op read as [x, W, b] -> y with `macs` multiply-adds per product (forward, dx, dW each) over
// ys elements of y: FullyConnected and TransposeConv.
uint64_t weighted_flops(const StepTensors& s, uint64_t macs, uint64_t ys);

// The backward step of an op read as [x, W, b] that writes [dx, dW, db]: FullyConnected and the
// convolutions (which also take over the derivative of x's producer's activation).
void weighted_backward(StepBuilder& s, bool applies_dx_activation);

// Convolution backward with params.dx_activation: dx may take x's bytes (cltrain_ops.h).
InPlacePair convolution_in_place(const cltrain_step_desc& step);

}  // namespace cltrain
