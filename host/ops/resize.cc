// RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: x [N,H,W,C] and a constant size [OH, OW] -> y
// [N,OH,OW,C] (Keras UpSampling2D(interpolation="bilinear"), tf.image.resize, PyTorch's
// interpolate as litert-torch and onnx2tf write it), with the options' align_corners and
// half_pixel_centers. The backward reads dy alone.
#include "graph/labels.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using graph::shape_str;

void check(OperandCheck& c) {
  c.require_float(0);
  const Tensor& x = c.in(0);
  c.require_rank4(x, "input", "[N,H,W,C]");
  const std::vector<int32_t> size = c.int32_values(1);
  if (size.size() != 2 || size[0] < 1 || size[1] < 1)
    c.bad("size " + shape_str(size) + " is not two positive extents [OH, OW]");
  if (c.op.params.align_corners && c.op.params.half_pixel_centers)
    c.bad("align_corners and half_pixel_centers are both set (TFLite refuses the pair)");
  c.expect_output({x.shape[0], size[0], size[1], x.shape[3]});
}

void backward(StepBuilder& s) {
  s.in = {s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

// Forward: per output element, 4 taps of 2 multiplies and an add (bilinear), a copy (nearest);
// backward the same per output element.
uint64_t flops(const StepTensors& s, uint64_t per_element) {
  return per_element * s.elements(s.forward() ? s.out(0) : s.in(0));
}

OpDescriptor resize(int32_t op, fb::BuiltinOptions options) {
  OpDescriptor d = descriptor_of(op);
  d.min_inputs = d.max_inputs = d.optional_from = 2;  // x, size
  d.constant = {1, "size", false};
  d.options = options;
  d.backward = backward;
  d.check = check;
  return d;
}

}  // namespace

const OpDescriptor kOpDesc_RESIZE_BILINEAR = [] {
  OpDescriptor d = resize(CLTRAIN_OP_RESIZE_BILINEAR, fb::BuiltinOptions::ResizeBilinearOptions);
  d.read_options = [](const fb::Operator& fo, OptionReader&, cltrain_op_params& p) {
    if (const fb::ResizeBilinearOptions* o = fo.builtin_options_as_ResizeBilinearOptions()) {
      p.align_corners = o->align_corners();
      p.half_pixel_centers = o->half_pixel_centers();
    }
  };
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) -> WrittenOptions {
    return {
        fb::BuiltinOptions::ResizeBilinearOptions,
        fb::CreateResizeBilinearOptions(fbb, op.params.align_corners != 0, op.params.half_pixel_centers != 0).Union()};
  };
  d.flops = [](const StepTensors& s) { return flops(s, 11); };
  return d;
}();

const OpDescriptor kOpDesc_RESIZE_NEAREST_NEIGHBOR = [] {
  OpDescriptor d = resize(CLTRAIN_OP_RESIZE_NEAREST_NEIGHBOR, fb::BuiltinOptions::ResizeNearestNeighborOptions);
  d.read_options = [](const fb::Operator& fo, OptionReader&, cltrain_op_params& p) {
    if (const fb::ResizeNearestNeighborOptions* o = fo.builtin_options_as_ResizeNearestNeighborOptions()) {
      p.align_corners = o->align_corners();
      p.half_pixel_centers = o->half_pixel_centers();
    }
  };
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) -> WrittenOptions {
    return {fb::BuiltinOptions::ResizeNearestNeighborOptions,
            fb::CreateResizeNearestNeighborOptions(fbb, op.params.align_corners != 0, op.params.half_pixel_centers != 0)
                .Union()};
  };
  d.flops = [](const StepTensors& s) { return flops(s, 1); };
  return d;
}();

}  // namespace cltrain
