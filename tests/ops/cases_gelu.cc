// GELU: forward in [x] out [y], backward in [x, dy] out [dx], the exact (erf) form and the tanh
// approximation; against the double reference (std::erf, std::tanh), the numerics' float
// definition (bit for bit: clt_erf, clt_tanh) and finite differences, over the erf's clamp at
// |x / sqrt 2| = 4, zeros of both signs and values far out on both sides.
#include <cmath>
#include <type_traits>

#include "numerics.h"
#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

OpCase gelu_case(const std::string& tag, std::vector<int32_t> dims, bool approximate, bool edges) {
  OpCase c;
  c.name = std::string("Gelu_") + (approximate ? "tanh_" : "erf_") + tag;
  c.op = CLTRAIN_OP_GELU;
  const int32_t x = c.input("x", dims, 4.0f);
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  if (edges) {
    TensorSpec& t = c.tensors[x];
    t.fill = Fill::Values;
    t.values.resize(element_count(dims));
    const float e[] = {0.0f, -0.0f, 5.656854f, -5.656854f, 5.7f, -5.7f, -30.0f, 30.0f, 1e-8f, -1e-3f, -3.0f, 0.5f};
    for (size_t i = 0; i < t.values.size(); ++i)
      t.values[i] = i < 12 ? e[i] : -8.0f + 16.0f * static_cast<float>((i * 7919) % 1000) / 1000.0f;
  }
  cltrain_op_params p{};
  p.approximate = approximate ? 1 : 0;
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {x}, {y}, p);
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {x, dy}, {dx}, p);
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.fd_samples = edges ? 0 : 48;
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 2e-6;
  c.tol.fd_eps = 1e-3;
  c.tol.fd_tol = 1e-2;
  // cltrain_ops.h's formulas; in float with the numerics' erf and tanh (exact), in double with
  // the true functions (reference).
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    const auto t_of = [&](T v) -> T {
      if constexpr (std::is_same_v<T, float>)
        return approximate ? clt_tanh(0.7978846f * (v + 0.044715f * ((v * v) * v))) : clt_erf(v * 0.70710678f);
      else
        return approximate ? std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))
                           : std::erf(v / std::sqrt(2.0));
    };
    const auto& xv = in.at(x);
    std::vector<T> yv(xv.size()), dxv(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) {
      const T v = xv[i], g = in.at(dy)[i], t = t_of(v);
      yv[i] = (T(0.5) * v) * (T(1) + t);
      T d;
      if constexpr (std::is_same_v<T, float>)
        d = approximate
                ? 0.5f * (1.0f + t) + (0.5f * v) * ((1.0f - t * t) * (0.7978846f * (1.0f + 0.134145f * (v * v))))
                : 0.5f * (1.0f + t) + v * (clt_exp((-0.5f * v) * v) * 0.39894228f);
      else
        d = approximate ? 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * std::sqrt(2.0 / M_PI) * (1 + 3 * 0.044715 * v * v)
                        : 0.5 * (1 + t) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
      dxv[i] = g * d;
    }
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> out;
  for (bool approximate : {false, true}) {
    out.push_back(gelu_case("x4x9", {4, 9}, approximate, false));
    out.push_back(gelu_case("n2_s8_c16", {2, 8, 16}, approximate, false));
    out.push_back(gelu_case("edges_x3x257", {3, 257}, approximate, true));
  }
  return out;
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
