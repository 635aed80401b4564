// NEG: forward in [x] out [y], backward in [dy] out [dx]; RSQRT: forward in [x] out [y], backward
// in [y, dy] out [dx]. Against the double reference, the numerics' float definition (bit for bit)
// and finite differences; RSQRT on positive inputs from tiny to large (a variance plus epsilon).
#include <cmath>
#include <type_traits>

#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

OpCase neg_case(const std::string& tag, std::vector<int32_t> dims) {
  OpCase c;
  c.name = "Neg_" + tag;
  c.op = CLTRAIN_OP_NEG;
  const int32_t x = c.input("x", dims, 2.0f);
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {x}, {y});
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {dy}, {dx});
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.fd_samples = 24;
  c.tol.vs_cpu = 0;
  c.tol.vs_reference = 0;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-2;
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    std::vector<T> yv(in.at(x).size()), dxv(yv.size());
    for (size_t i = 0; i < yv.size(); ++i) yv[i] = -in.at(x)[i], dxv[i] = -in.at(dy)[i];
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

OpCase rsqrt_case(const std::string& tag, std::vector<int32_t> dims, bool wide) {
  OpCase c;
  c.name = "Rsqrt_" + tag;
  c.op = CLTRAIN_OP_RSQRT;
  const int32_t x = c.input("x", dims);
  TensorSpec& t = c.tensors[x];
  t.fill = Fill::Values;
  t.values.resize(element_count(dims));
  for (size_t i = 0; i < t.values.size(); ++i) {  // positive: 0.25 .. 4, or 1e-6 .. 1e4 spread by powers
    const float u = static_cast<float>((i * 7919) % 1000) / 1000.0f;
    t.values[i] = wide ? std::pow(10.0f, -6.0f + 10.0f * u) : 0.25f + 3.75f * u;
  }
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {x}, {y});
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {y, dy}, {dx});
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.fd_samples = wide ? 0 : 32;  // finite differences do not resolve 1e-6 against 1e4
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-6;
  c.tol.fd_eps = 1e-3;
  c.tol.fd_tol = 1e-2;
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    std::vector<T> yv(in.at(x).size()), dxv(yv.size());
    for (size_t i = 0; i < yv.size(); ++i) {
      const T v = T(1) / std::sqrt(in.at(x)[i]);
      yv[i] = v;
      dxv[i] = (T(-0.5) * in.at(dy)[i]) * ((v * v) * v);
    }
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {neg_case("x4x9", {4, 9}), neg_case("n2_h3w3_c5", {2, 3, 3, 5}), rsqrt_case("rows_x8x1", {8, 1}, false),
          rsqrt_case("x3x17", {3, 17}, false), rsqrt_case("wide_x4x64", {4, 64}, true)};
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
