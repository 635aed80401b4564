// HARD_SWISH: forward in [x] out [y], backward in [x, dy] out [dx]; against the double reference,
// the numerics' float definition (bit for bit) and finite differences, over both clamps of relu6
// and inputs that sit exactly on its kinks (x = -3, x = 3).
#include <type_traits>

#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

OpCase hard_swish_case(const std::string& tag, std::vector<int32_t> dims, bool kinks) {
  OpCase c;
  c.name = "HardSwish_" + tag;
  c.op = CLTRAIN_OP_HARD_SWISH;
  const int32_t x = c.input("x", dims, 5.0f);  // both clamps: x + 3 below 0 and above 6
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  if (kinks) {  // the kinks, the ends, zeros of both signs, far outside
    TensorSpec& t = c.tensors[x];
    t.fill = Fill::Values;
    t.values.resize(element_count(dims));
    const float edges[] = {-3.0f, 3.0f, 0.0f, -0.0f, -2.999f, 2.999f, -100.0f, 100.0f, 1e-8f, -1.5f};
    for (size_t i = 0; i < t.values.size(); ++i)
      t.values[i] = i < 10 ? edges[i] : -6.0f + 12.0f * static_cast<float>((i * 7919) % 1000) / 1000.0f;
  }
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {x}, {y});
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {x, dy}, {dx});
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.fd_samples = kinks ? 0 : 48;
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-6;
  c.tol.fd_eps = 1e-3;
  c.tol.fd_tol = 1e-2;
  // The numerics of cltrain_ops.h; in double the same formulas.
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    const auto& xv = in.at(x);
    std::vector<T> yv(xv.size()), dxv(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) {
      const T v = xv[i], d = in.at(dy)[i];
      const T t = v + T(3), u = t < T(0) ? T(0) : t, r = u > T(6) ? T(6) : u;
      yv[i] = (v * r) / T(6);
      dxv[i] = (v > T(-3) && v < T(3)) ? d * ((T(2) * v + T(3)) / T(6)) : (v >= T(3) ? d : T(0));
    }
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {hard_swish_case("x4x9", {4, 9}, false), hard_swish_case("n2_h4w4_c6", {2, 4, 4, 6}, false),
          hard_swish_case("kinks_x3x257", {3, 257}, true)};
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
