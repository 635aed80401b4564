// DEPTHWISE_CONV_2D: x [N,H,W,C], W [1,KH,KW,C*M], optional bias [C*M] -> y [N,OH,OW,C*M].
#include "ops/common.h"

namespace cltrain {
namespace {

void read_options(const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
  const auto* o = fo.builtin_options_as_DepthwiseConv2DOptions();
  read_convolution_options(*o, r, p);
  p.depth_multiplier = o->depth_multiplier();  // 0 (not set): taken from the weights' shape
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  const cltrain_op_params& p = op.params;
  return {fb::BuiltinOptions::DepthwiseConv2DOptions,
          fb::CreateDepthwiseConv2DOptions(fbb, static_cast<fb::Padding>(p.padding), p.stride_w, p.stride_h,
                                           p.depth_multiplier, static_cast<fb::ActivationFunctionType>(p.activation),
                                           p.dilation_w, p.dilation_h)
              .Union()};
}

void check(OperandCheck& c) { check_convolution(c, true); }
void backward(StepBuilder& s) { weighted_backward(s, true); }
uint64_t flops(const StepTensors& s) { return convolution_flops(s, true); }

}  // namespace

const OpDescriptor kOpDesc_DEPTHWISE_CONV_2D = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_DEPTHWISE_CONV_2D);
  d.min_inputs = 2, d.max_inputs = 3, d.optional_from = 2;  // x, W, optional bias
  d.bias_slot = 2;
  d.folds_pad = true;
  d.fused_activation = FusedActivation::kAny;
  d.options = fb::BuiltinOptions::DepthwiseConv2DOptions;
  d.options_required = true;  // strides
  d.read_options = read_options;
  d.write_options = write_options;
  d.check = check;
  d.backward = backward;
  d.in_place = convolution_in_place;
  d.half_storage = true;
  d.flops = flops;
  return d;
}();

}  // namespace cltrain
