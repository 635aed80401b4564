// SOFTMAX over the last dimension with params.beta, and LOG_SOFTMAX: forward in [x] out [y],
// backward in [y, dy] out [dx].
#include <algorithm>
#include <cmath>

#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

OpCase softmax_case(const std::string& tag, std::vector<int32_t> dims, float beta) {
  OpCase c;
  c.name = "Softmax_" + tag;
  c.op = CLTRAIN_OP_SOFTMAX;
  const int32_t x = c.input("x", dims, 2.0f);
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  cltrain_op_params p{};
  p.beta = beta;
  c.step(CLTRAIN_OP_SOFTMAX, CLTRAIN_PHASE_FORWARD, {x}, {y}, p);
  c.step(CLTRAIN_OP_SOFTMAX, CLTRAIN_PHASE_BACKWARD, {y, dy}, {dx}, p);
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.tol.vs_cpu = 1e-5;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-2;
  return c;
}

// LOG_SOFTMAX: against the double reference (y = x - log sum exp x, dx = dy - softmax(x) sum dy),
// finite differences, and logits far beyond exp's float range (scale 90: no finite differences).
OpCase log_softmax_case(const std::string& tag, std::vector<int32_t> dims, float scale) {
  OpCase c;
  c.name = "LogSoftmax_" + tag;
  c.op = CLTRAIN_OP_LOG_SOFTMAX;
  const int32_t x = c.input("x", dims, scale);
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {x}, {y});
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {y, dy}, {dx});
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-5;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-2;
  if (scale > 10.0f) c.fd_samples = 0;
  const size_t cols = static_cast<size_t>(dims.back());
  c.reference = [=](const Values& in) {
    const std::vector<double>& xv = in.at(x);
    const std::vector<double>& g = in.at(dy);
    std::vector<double> yv(xv.size()), dxv(xv.size());
    for (size_t r = 0; r < xv.size() / cols; ++r) {
      double m = xv[r * cols], s = 0.0, d = 0.0;
      for (size_t i = r * cols; i < (r + 1) * cols; ++i) m = std::max(m, xv[i]);
      for (size_t i = r * cols; i < (r + 1) * cols; ++i) s += std::exp(xv[i] - m), d += g[i];
      for (size_t i = r * cols; i < (r + 1) * cols; ++i) {
        yv[i] = (xv[i] - m) - std::log(s);
        dxv[i] = g[i] - std::exp(yv[i]) * d;
      }
    }
    return Values{{y, yv}, {dx, dxv}};
  };
  return c;
}

std::vector<OpCase> make_cases() {
  return {softmax_case("beta1_x4x10", {4, 10}, 1.0f),
          softmax_case("beta0p5_x3x7", {3, 7}, 0.5f),
          softmax_case("beta1_x2x4x16", {2, 4, 16}, 1.0f),
          softmax_case("beta1_x32x10", {32, 10}, 1.0f),  // the mlp's output at batch 32
          log_softmax_case("x4x10", {4, 10}, 2.0f),
          log_softmax_case("x2x3x7", {2, 3, 7}, 2.0f),
          log_softmax_case("wide_x3x6", {3, 6}, 90.0f)};
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
