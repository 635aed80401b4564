// CONV_2D: x [N,H,W,I], W [O,KH,KW,I], optional bias [O] -> y [N,OH,OW,O].
#include "ops/common.h"

namespace cltrain {
namespace {

void read_options(const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
  read_convolution_options(*fo.builtin_options_as_Conv2DOptions(), r, p);
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  const cltrain_op_params& p = op.params;
  return {fb::BuiltinOptions::Conv2DOptions,
          fb::CreateConv2DOptions(fbb, static_cast<fb::Padding>(p.padding), p.stride_w, p.stride_h,
                                  static_cast<fb::ActivationFunctionType>(p.activation), p.dilation_w, p.dilation_h)
              .Union()};
}

void check(OperandCheck& c) { check_convolution(c, false); }
void backward(StepBuilder& s) { weighted_backward(s, true); }
uint64_t flops(const StepTensors& s) { return convolution_flops(s, false); }

}  // namespace

const OpDescriptor kOpDesc_CONV_2D = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_CONV_2D);
  d.min_inputs = 2, d.max_inputs = 3, d.optional_from = 2;  // x, W, optional bias
  d.bias_slot = 2;
  d.half_weight_ranks = true;
  d.folds_pad = true;
  d.fused_activation = FusedActivation::kAny;
  d.options = fb::BuiltinOptions::Conv2DOptions;
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
