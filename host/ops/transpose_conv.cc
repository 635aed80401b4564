// TRANSPOSE_CONV (Keras Conv2DTranspose, PyTorch ConvTranspose2d): the file's operands are
// [output_shape, W [O,KH,KW,I], x [N,H,W,I], optional bias [O]] -> y [N,OH,OW,O], y's shape the
// constant output_shape (its first value the batch). The steps read [x, W, b] as CONV_2D's do.
#include "graph/labels.h"
#include "ops/common.h"
#include "window_geometry.h"

namespace cltrain {
namespace {

using graph::shape_str;

constexpr size_t kShape = 0, kWeights = 1, kInput = 2, kBias = 3;

void read_options(const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
  const fb::TransposeConvOptions& o = *fo.builtin_options_as_TransposeConvOptions();
  p.padding = static_cast<int32_t>(o.padding());
  p.stride_h = o.stride_h();
  p.stride_w = o.stride_w();
  p.dilation_h = p.dilation_w = 1;
  p.activation = r.activation(o.fused_activation_function());
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  const cltrain_op_params& p = op.params;
  return {fb::BuiltinOptions::TransposeConvOptions,
          fb::CreateTransposeConvOptions(fbb, static_cast<fb::Padding>(p.padding), p.stride_w, p.stride_h,
                                         static_cast<fb::ActivationFunctionType>(p.activation))
              .Union()};
}

void check(OperandCheck& c) {
  c.require_float(kWeights);
  c.require_float(kInput);
  const Tensor& w = c.in(kWeights);
  const Tensor& x = c.in(kInput);
  c.require_rank4(x, "input", "[N,H,W,C]");
  c.require_rank4(w, "weights", "[O,KH,KW,I]");
  if (w.shape[3] != x.shape[3])
    c.bad("weights shape " + shape_str(w.shape) + " does not fit input " + shape_str(x.shape) +
          " (weights are [O,KH,KW,I] with I the input's channels)");
  if (c.has_input(kBias)) {
    c.require_float(kBias);
    const Tensor& b = c.in(kBias);
    if (b.shape.size() != 1 || b.shape[0] != w.shape[0])
      c.bad("bias shape " + shape_str(b.shape) + " is not [" + std::to_string(w.shape[0]) + "]");
  }
  const std::vector<int32_t> out = c.int32_values(kShape);
  if (out.size() != 4 || out[0] != x.shape[0] || out[3] != w.shape[0] || out[1] < 1 || out[2] < 1)
    c.bad("output_shape " + shape_str(out) + " is not [" + std::to_string(x.shape[0]) + ",OH,OW," +
          std::to_string(w.shape[0]) + "] for input " + shape_str(x.shape) + " and weights " + shape_str(w.shape));
  // x must be what the CONV_2D with these weights, padding and strides makes of y's shape.
  for (int axis : {1, 2}) {
    const char* what = axis == 1 ? "height" : "width";
    AxisGeometry g;
    const int64_t stride = axis == 1 ? c.op.params.stride_h : c.op.params.stride_w;
    if (std::string e = axis_geometry(c.op.params.padding, out[axis], w.shape[axis], stride, 1, what, &g); !e.empty())
      c.bad(e);
    if (g.out != x.shape[axis])
      c.bad("input " + std::string(what) + " " + std::to_string(x.shape[axis]) + " is not the " +
            std::to_string(g.out) + " that a convolution of output " + what + " " + std::to_string(out[axis]) +
            " with these weights, padding and strides gives");
  }
  c.expect_output({out[0], out[1], out[2], out[3]});
}

// The steps read [x, W, b], as CONV_2D's.
void forward(StepBuilder& s) { s.in = {s.input(kInput), s.input(kWeights), s.input(kBias)}; }

void backward(StepBuilder& s) {
  const int32_t x = s.input(kInput), w = s.input(kWeights), b = s.input(kBias);
  const int32_t dw = s.grad_of(w), dx = s.grad_of(x), db = s.grad_of(b);  // in slot order
  s.in = {dw >= 0 ? x : -1, w, s.y_if_activation(), s.dy()};
  s.out = {dx, dw, db};
}

// Every (input position, tap) pair counted, inside y or not: an upper bound by the border.
uint64_t flops(const StepTensors& s) {
  const int32_t w = s.in(1);
  const int32_t x = s.in(0) >= 0 ? s.in(0) : s.out(0);
  const int32_t y = s.forward() ? s.out(0) : s.in(3);
  const uint64_t macs = s.elements(x) * static_cast<uint64_t>(s.dim(w, 0) * s.dim(w, 1) * s.dim(w, 2));
  return weighted_flops(s, macs, s.elements(y));
}

}  // namespace

const OpDescriptor kOpDesc_TRANSPOSE_CONV = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_TRANSPOSE_CONV);
  d.min_inputs = 3, d.max_inputs = 4, d.optional_from = 3;  // output_shape, W, x, optional bias
  d.constant = {static_cast<int>(kShape), "output_shape", true};
  d.bias_slot = static_cast<int>(kBias);
  d.fused_activation = FusedActivation::kAny;
  d.options = fb::BuiltinOptions::TransposeConvOptions;
  d.options_required = true;  // strides
  d.read_options = read_options;
  d.write_options = write_options;
  d.check = check;
  d.forward = forward;
  d.backward = backward;
  d.flops = flops;
  return d;
}();

}  // namespace cltrain
