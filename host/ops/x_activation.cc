// The activations whose backward reads x, not y (y does not determine the derivative):
//   HARD_SWISH: y = x * relu6(x + 3) / 6 (MobileNetV3's activation).
//   GELU: y = x * Phi(x) (transformer MLPs, ViT, ConvNeXt), the exact (erf) form or the tanh
//   approximation, as the file's GeluOptions.approximate says.
//   LEAKY_RELU (LeakyReluOptions.alpha), ELU, ABS, SQUARE, EXP, SQRT, LOG: y = f(x), dx = dy f'(x)
//   (numerics.h's clt_pointwise: Keras's LeakyReLU and ELU, PyTorch's nn.LeakyReLU, nn.ELU,
//   torch.abs, exp, sqrt, log and x ** 2).
#include <cmath>
#include <string>

#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

void check(OperandCheck& c) {
  c.require_float(0);
  c.same_shape();
}

void backward(StepBuilder& s) {
  s.in = {s.input(0), s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

// dx may take dy's bytes; y never takes x's (the backward reads x).
InPlacePair in_place(const cltrain_step_desc& step) {
  return step.phase == CLTRAIN_PHASE_BACKWARD ? InPlacePair{0, 1, true} : InPlacePair{};
}

OpDescriptor x_activation(int32_t op, uint64_t (*flops)(const StepTensors&)) {
  OpDescriptor d = descriptor_of(op);
  d.check = check;
  d.backward = backward;
  d.in_place = in_place;
  d.flops = flops;
  return d;
}

// HARD_SWISH: an add, two compares, a multiply and a divide per element forward; two compares, an
// add, a multiply, a divide and a multiply backward.
uint64_t hard_swish_flops(const StepTensors& s) { return s.elements(s.out(0)) * (s.forward() ? 5 : 6); }
// GELU: about 25 operations an element forward (the erf's rational function), 35 backward.
uint64_t gelu_flops(const StepTensors& s) { return s.elements(s.out(0)) * (s.forward() ? 25 : 35); }

void read_gelu_options(const fb::Operator& fo, OptionReader&, cltrain_op_params& p) {
  const auto* o = fo.builtin_options_as_GeluOptions();
  p.approximate = o && o->approximate() ? 1 : 0;
}

WrittenOptions write_gelu_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  return {fb::BuiltinOptions::GeluOptions, fb::CreateGeluOptions(fbb, op.params.approximate != 0).Union()};
}

// The pointwise ops: about a compare and a multiply (LEAKY_RELU, ABS, SQUARE), a square root
// (counted as one), or some 20 for exp and log (ELU, EXP, LOG), each way.
template <uint64_t Ops>
uint64_t pointwise_flops(const StepTensors& s) {
  return s.elements(s.out(0)) * Ops;
}

void read_leaky_relu_options(const fb::Operator& fo, OptionReader&, cltrain_op_params& p) {
  const auto* o = fo.builtin_options_as_LeakyReluOptions();
  p.alpha = o ? o->alpha() : 0.0f;
}

WrittenOptions write_leaky_relu_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  return {fb::BuiltinOptions::LeakyReluOptions, fb::CreateLeakyReluOptions(fbb, op.params.alpha).Union()};
}

using WriteOptions = WrittenOptions (*)(flatbuffers::FlatBufferBuilder&, const Model&, const Operator&);

// options: the empty table TensorFlow's converter writes for the op (NONE: none), and its writer.
OpDescriptor pointwise(int32_t op, uint64_t (*flops)(const StepTensors&), fb::BuiltinOptions options = {},
                       WriteOptions write = nullptr) {
  OpDescriptor d = x_activation(op, flops);
  d.options = options;
  d.write_options = write;
  return d;
}

}  // namespace

const OpDescriptor kOpDesc_LEAKY_RELU = [] {
  OpDescriptor d = x_activation(CLTRAIN_OP_LEAKY_RELU, pointwise_flops<2>);
  d.check = [](OperandCheck& c) {
    check(c);
    if (!std::isfinite(c.op.params.alpha)) c.bad("alpha " + std::to_string(c.op.params.alpha) + " is not finite");
  };
  d.options = fb::BuiltinOptions::LeakyReluOptions;
  d.read_options = read_leaky_relu_options;
  d.write_options = write_leaky_relu_options;
  return d;
}();
const OpDescriptor kOpDesc_ELU = pointwise(CLTRAIN_OP_ELU, pointwise_flops<20>);
const OpDescriptor kOpDesc_ABS =
    pointwise(CLTRAIN_OP_ABS, pointwise_flops<2>, fb::BuiltinOptions::AbsOptions,
              [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) -> WrittenOptions {
                return {fb::BuiltinOptions::AbsOptions, fb::CreateAbsOptions(fbb).Union()};
              });
const OpDescriptor kOpDesc_SQUARE =
    pointwise(CLTRAIN_OP_SQUARE, pointwise_flops<2>, fb::BuiltinOptions::SquareOptions,
              [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) -> WrittenOptions {
                return {fb::BuiltinOptions::SquareOptions, fb::CreateSquareOptions(fbb).Union()};
              });
const OpDescriptor kOpDesc_EXP =
    pointwise(CLTRAIN_OP_EXP, pointwise_flops<20>, fb::BuiltinOptions::ExpOptions,
              [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) -> WrittenOptions {
                return {fb::BuiltinOptions::ExpOptions, fb::CreateExpOptions(fbb).Union()};
              });
const OpDescriptor kOpDesc_SQRT = pointwise(CLTRAIN_OP_SQRT, pointwise_flops<2>);
const OpDescriptor kOpDesc_LOG = pointwise(CLTRAIN_OP_LOG, pointwise_flops<20>);

const OpDescriptor kOpDesc_HARD_SWISH = x_activation(CLTRAIN_OP_HARD_SWISH, hard_swish_flops);

const OpDescriptor kOpDesc_GELU = [] {
  OpDescriptor d = x_activation(CLTRAIN_OP_GELU, gelu_flops);
  d.options = fb::BuiltinOptions::GeluOptions;
  d.read_options = read_gelu_options;
  d.write_options = write_gelu_options;
  return d;
}();

}  // namespace cltrain
