// The activations whose backward reads x (forward in [x] out [y], backward in [x, dy] out [dx]),
// in the rounding orders of cltrain_ops.h; dx may share dy's bytes: each element reads its own
// first.
//   HARD_SWISH: y = x * relu6(x + 3) / 6.
//   GELU: y = x * Phi(x), the exact (erf) form or the tanh approximation (params.approximate).
//   LEAKY_RELU, ELU, ABS, SQUARE, EXP, SQRT, LOG: numerics.h's clt_pointwise and its derivative.
#include "cpu_op.h"
#include "numerics.h"

namespace cltrain {
namespace cpu {
namespace {

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "x"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "y");
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "x"); !e.empty()) return e;
  if (std::string e = require_elements(s.in[1], s.in[0].elements, "dy"); !e.empty()) return e;
  return require_elements(s.out[0], s.in[0].elements, "dx");
}

// y[i] = f(x[i]) (forward), dx[i] = f(x[i], dy[i]) (backward).
template <typename F>
std::string each_forward(const StepView& s, F f) {
  for (uint64_t i = 0; i < s.in[0].elements; ++i) s.out[0].data[i] = f(s.in[0].data[i]);
  return {};
}
template <typename F>
std::string each_backward(const StepView& s, F f) {
  for (uint64_t i = 0; i < s.in[0].elements; ++i) {
    const float v = s.in[0].data[i], d = s.in[1].data[i];
    s.out[0].data[i] = f(v, d);
  }
  return {};
}

std::string hard_swish_forward(const StepView& s, const cltrain_run_args&) {
  return each_forward(s, [](float x) {
    const float t = x + 3.0f;
    const float u = t < 0.0f ? 0.0f : t;
    const float r = u > 6.0f ? 6.0f : u;
    return (x * r) / 6.0f;
  });
}

std::string hard_swish_backward(const StepView& s, const cltrain_run_args&) {
  return each_backward(s, [](float v, float d) {
    return (v > -3.0f && v < 3.0f) ? d * ((2.0f * v + 3.0f) / 6.0f) : (v >= 3.0f ? d : 0.0f);
  });
}

// erf(x / sqrt 2), or the tanh of the approximation's argument.
float gelu_t(float x, bool approximate) {
  return approximate ? clt_tanh(0.7978846f * (x + 0.044715f * ((x * x) * x))) : clt_erf(x * 0.70710678f);
}

std::string gelu_forward(const StepView& s, const cltrain_run_args&) {
  const bool approximate = s.params().approximate != 0;
  return each_forward(s, [&](float x) { return (0.5f * x) * (1.0f + gelu_t(x, approximate)); });
}

std::string gelu_backward(const StepView& s, const cltrain_run_args&) {
  const bool approximate = s.params().approximate != 0;
  return each_backward(s, [&](float v, float g) {
    const float t = gelu_t(v, approximate);
    const float d =
        approximate ? 0.5f * (1.0f + t) + (0.5f * v) * ((1.0f - t * t) * (0.7978846f * (1.0f + 0.134145f * (v * v))))
                    : 0.5f * (1.0f + t) + v * (clt_exp((-0.5f * v) * v) * 0.39894228f);
    return g * d;
  });
}

// LEAKY_RELU, ELU, ABS, SQUARE, EXP, SQRT, LOG: numerics.h's clt_pointwise (the kernels' own).
template <int Fn>
std::string pointwise_forward(const StepView& s, const cltrain_run_args&) {
  const float alpha = s.params().alpha;
  return each_forward(s, [&](float x) { return clt_pointwise(Fn, x, alpha); });
}

template <int Fn>
std::string pointwise_backward(const StepView& s, const cltrain_run_args&) {
  const float alpha = s.params().alpha;
  return each_backward(s, [&](float v, float d) { return clt_pointwise_grad(Fn, v, d, alpha); });
}

template <int Fn>
constexpr CpuOp pointwise_op() {
  return {{{check_forward, pointwise_forward<Fn>}, {check_backward, pointwise_backward<Fn>}, {}}};
}

}  // namespace

extern const CpuOp kCpuOp_LEAKY_RELU = pointwise_op<CLT_PW_LEAKY_RELU>();
extern const CpuOp kCpuOp_ELU = pointwise_op<CLT_PW_ELU>();
extern const CpuOp kCpuOp_ABS = pointwise_op<CLT_PW_ABS>();
extern const CpuOp kCpuOp_SQUARE = pointwise_op<CLT_PW_SQUARE>();
extern const CpuOp kCpuOp_EXP = pointwise_op<CLT_PW_EXP>();
extern const CpuOp kCpuOp_SQRT = pointwise_op<CLT_PW_SQRT>();
extern const CpuOp kCpuOp_LOG = pointwise_op<CLT_PW_LOG>();
extern const CpuOp kCpuOp_HARD_SWISH = {
    {{check_forward, hard_swish_forward}, {check_backward, hard_swish_backward}, {}}};
extern const CpuOp kCpuOp_GELU = {{{check_forward, gelu_forward}, {check_backward, gelu_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
