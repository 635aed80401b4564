// MAX_POOL_2D and AVERAGE_POOL_2D over filter_h x filter_w windows of x [N,H,W,C].
#include "ops/common.h"

namespace cltrain {
namespace {

void read_options(const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
  const auto* o = fo.builtin_options_as_Pool2DOptions();
  p.padding = static_cast<int32_t>(o->padding());
  p.stride_h = o->stride_h();
  p.stride_w = o->stride_w();
  p.filter_h = o->filter_height();
  p.filter_w = o->filter_width();
  p.activation = r.activation(o->fused_activation_function());
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  const cltrain_op_params& p = op.params;
  return {fb::BuiltinOptions::Pool2DOptions,
          fb::CreatePool2DOptions(fbb, static_cast<fb::Padding>(p.padding), p.stride_w, p.stride_h, p.filter_w,
                                  p.filter_h, static_cast<fb::ActivationFunctionType>(p.activation))
              .Union()};
}

// The backward then needs the argmax (one byte per output, the window position of the first
// maximum) instead of the input, where that is smaller and a window has at most 256 positions.
void max_forward(StepBuilder& s) {
  const int32_t x = s.input(0);
  const int64_t window = int64_t{s.params.filter_h} * s.params.filter_w;
  if (!s.needs_grad(x) || window > 256 || s.elements(s.y()) >= s.elements(x) * 4) return;
  const int32_t argmax =
      s.add_tensor(std::string("argmax/") + s.name_of(s.y()), s.y(), CLTRAIN_UINT8, CLTRAIN_ROLE_NON_CONST);
  s.out.push_back(argmax);
  s.keep(argmax);
}

void max_backward(StepBuilder& s) {
  const int32_t x = s.input(0);
  if (s.kept() >= 0) {
    // With the argmax, y equals x at each window's maximum: the producer's derivative comes
    // from y, and x dies after the forward.
    s.params.dx_activation = s.producer_activation(x);
    s.in = {-1, s.dy(), s.kept(), s.params.dx_activation != CLTRAIN_ACT_NONE ? s.y() : -1};
  } else {
    s.in = {x, s.dy()};
  }
  s.out = {s.grad_of(x)};
}

void average_backward(StepBuilder& s) {
  s.in = {s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

OpDescriptor pool_descriptor(int32_t op) {
  OpDescriptor d = descriptor_of(op);
  d.fused_activation = FusedActivation::kOnlyNone;
  d.options = fb::BuiltinOptions::Pool2DOptions;
  d.options_required = true;  // filter size and strides
  d.read_options = read_options;
  d.write_options = write_options;
  d.check = check_pool;
  d.half_storage = true;
  return d;
}

}  // namespace

const OpDescriptor kOpDesc_MAX_POOL_2D = [] {
  OpDescriptor d = pool_descriptor(CLTRAIN_OP_MAX_POOL_2D);
  d.forward = max_forward;
  d.backward = max_backward;
  d.flops = [](const StepTensors& s) { return pool_flops(s, false); };
  return d;
}();

const OpDescriptor kOpDesc_AVERAGE_POOL_2D = [] {
  OpDescriptor d = pool_descriptor(CLTRAIN_OP_AVERAGE_POOL_2D);
  d.backward = average_backward;
  d.flops = [](const StepTensors& s) { return pool_flops(s, true); };
  return d;
}();

}  // namespace cltrain
