// SOFTMAX over the last dimension, y_i = exp(beta x_i) / sum_j exp(beta x_j).
#include <limits>

#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

void read_options(const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
  const auto* o = fo.builtin_options_as_SoftmaxOptions();
  p.beta = o ? o->beta() : 1.0f;
  if (!(p.beta > -std::numeric_limits<float>::max() && p.beta < std::numeric_limits<float>::max()))
    r.fail("softmax beta is not finite");
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  return {fb::BuiltinOptions::SoftmaxOptions, fb::CreateSoftmaxOptions(fbb, op.params.beta).Union()};
}

void check(OperandCheck& c) {
  c.require_float(0);
  if (c.in(0).shape.empty()) c.bad("input is a scalar");
  c.same_shape();
}

void backward(StepBuilder& s) {
  s.in = {s.y(), s.dy()};
  s.out = {s.grad_of(s.input(0))};
}

}  // namespace

// LOG_SOFTMAX over the last dimension: y_i = x_i - log sum_j exp(x_j) (PyTorch's log_softmax,
// Keras's activation="log_softmax"); LogSoftmaxOptions is an empty table.
const OpDescriptor kOpDesc_LOG_SOFTMAX = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_LOG_SOFTMAX);
  d.options = fb::BuiltinOptions::LogSoftmaxOptions;
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) -> WrittenOptions {
    return {fb::BuiltinOptions::LogSoftmaxOptions, fb::CreateLogSoftmaxOptions(fbb).Union()};
  };
  d.check = check;
  d.backward = backward;
  d.flops = [](const StepTensors& s) { return s.elements(s.out(0)) * (s.forward() ? 24 : 22); };
  return d;
}();

const OpDescriptor kOpDesc_SOFTMAX = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_SOFTMAX);
  d.options = fb::BuiltinOptions::SoftmaxOptions;
  d.read_options = read_options;
  d.write_options = write_options;
  d.check = check;
  d.backward = backward;
  d.flops = [](const StepTensors& s) { return s.elements(s.out(0)) * (s.forward() ? 6 : 5); };
  return d;
}();

}  // namespace cltrain
