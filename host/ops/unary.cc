// NEG and RSQRT: element-wise, forward in [x] out [y] (the LayerNormalization of converted Keras
// models: RSQRT of the variance plus epsilon, NEG of the mean). NEG's backward reads dy only,
// RSQRT's reads y.
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

void check(OperandCheck& c) {
  c.require_float(0);
  c.same_shape();
}

// y may take x's bytes, dx those of dy.
InPlacePair in_place(const cltrain_step_desc& step) {
  if (step.phase == CLTRAIN_PHASE_FORWARD) return {0, 0, true};
  if (step.phase == CLTRAIN_PHASE_BACKWARD) return {0, 1, true};
  return {};
}

OpDescriptor unary(int32_t op, void (*backward)(StepBuilder&), uint64_t (*flops)(const StepTensors&)) {
  OpDescriptor d = descriptor_of(op);
  d.check = check;
  d.backward = backward;
  d.in_place = in_place;
  d.flops = flops;
  return d;
}

}  // namespace

const OpDescriptor kOpDesc_NEG = [] {
  OpDescriptor d = unary(
      CLTRAIN_OP_NEG,
      [](StepBuilder& s) {
        s.in = {s.dy()};
        s.out = {s.grad_of(s.input(0))};
      },
      [](const StepTensors& s) { return s.elements(s.out(0)); });
  d.options = fb::BuiltinOptions::NegOptions;  // an empty table
  d.write_options = [](flatbuffers::FlatBufferBuilder& fbb, const Model&, const Operator&) -> WrittenOptions {
    return {fb::BuiltinOptions::NegOptions, fb::CreateNegOptions(fbb).Union()};
  };
  return d;
}();

// Forward a square root and a divide; backward four multiplies.
const OpDescriptor kOpDesc_RSQRT = unary(
    CLTRAIN_OP_RSQRT,
    [](StepBuilder& s) {
      s.in = {s.y(), s.dy()};
      s.out = {s.grad_of(s.input(0))};
    },
    [](const StepTensors& s) { return s.elements(s.out(0)) * (s.forward() ? 2 : 4); });

}  // namespace cltrain
