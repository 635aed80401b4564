// FULLY_CONNECTED: y = act(x W^T + b), W [units, K], x viewed as [N, K].
#include "graph/labels.h"
#include "ops/common.h"

namespace cltrain {
namespace {

using graph::shape_str;

void read_options(const fb::Operator& fo, OptionReader& r, cltrain_op_params& p) {
  const auto* o = fo.builtin_options_as_FullyConnectedOptions();
  if (!o) return;
  p.activation = r.activation(o->fused_activation_function());
  if (o->weights_format() != fb::FullyConnectedOptionsWeightsFormat::DEFAULT)
    r.fail("weights format " + std::to_string(static_cast<int>(o->weights_format())) + " is not supported");
}

WrittenOptions write_options(flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator& op) {
  const auto act = static_cast<fb::ActivationFunctionType>(op.params.activation);
  return {fb::BuiltinOptions::FullyConnectedOptions, fb::CreateFullyConnectedOptions(fbb, act).Union()};
}

void check(OperandCheck& c) {
  c.require_float(0);
  c.require_float(1);
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  if (w.shape.size() != 2) c.bad("weights shape " + shape_str(w.shape) + " is not [units, inputs]");
  const uint64_t units = static_cast<uint64_t>(w.shape[0]), k = static_cast<uint64_t>(w.shape[1]);
  if (x.elements() % k != 0) c.bad("input shape " + shape_str(x.shape) + " does not fit weights " + shape_str(w.shape));
  if (c.has_input(2)) {
    c.require_float(2);
    if (c.in(2).elements() != units || c.in(2).shape.size() != 1)
      c.bad("bias shape " + shape_str(c.in(2).shape) + " is not [" + std::to_string(units) + "]");
  }
  // The output keeps the input's leading dimensions where the last one is K, else it is [rows, units].
  if (c.inferring()) {
    std::vector<int64_t> y(x.shape.begin(), x.shape.end());
    if (y.empty() || static_cast<uint64_t>(y.back()) != k) y = {static_cast<int64_t>(x.elements() / k), 0};
    y.back() = static_cast<int64_t>(units);
    c.expect_output(y);
  }
  const Tensor& y = c.out(0);
  if (y.shape.empty() || static_cast<uint64_t>(y.shape.back()) != units || y.elements() != x.elements() / k * units)
    c.bad("output shape " + shape_str(y.shape) + " does not match input " + shape_str(x.shape) + " and weights " +
          shape_str(w.shape));
}

void backward(StepBuilder& s) { weighted_backward(s, false); }

uint64_t flops(const StepTensors& s) {
  const int32_t w = s.in(1);
  const uint64_t m = static_cast<uint64_t>(s.dim(w, 0)), k = static_cast<uint64_t>(s.dim(w, 1));
  const int32_t y = s.forward() ? s.out(0) : s.in(3);
  const uint64_t ys = s.elements(y), macs = ys * k;  // rows * M * K
  return m == 0 ? 0 : weighted_flops(s, macs, ys);
}

}  // namespace

const OpDescriptor kOpDesc_FULLY_CONNECTED = [] {
  OpDescriptor d = descriptor_of(CLTRAIN_OP_FULLY_CONNECTED);
  d.min_inputs = 2, d.max_inputs = 3, d.optional_from = 2;  // x, W, optional bias
  d.bias_slot = 2;
  d.half_weight_ranks = true;
  d.half_storage = true;
  d.fused_activation = FusedActivation::kAny;
  d.options = fb::BuiltinOptions::FullyConnectedOptions;
  d.read_options = read_options;
  d.write_options = write_options;
  d.check = check;
  d.backward = backward;
  d.flops = flops;
  return d;
}();

}  // namespace cltrain
