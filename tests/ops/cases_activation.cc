// RELU, RELU6, TANH, LOGISTIC: forward in [x] out [y], backward in [y, dy] out [dx].
#include <cmath>

#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

OpCase relu_case(const std::string& tag, std::vector<int32_t> dims) {
  OpCase c;
  c.name = "ReLU_" + tag;
  c.op = CLTRAIN_OP_RELU;
  const int32_t x = c.input("x", dims);
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  c.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_FORWARD, {x}, {y});
  c.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_BACKWARD, {y, dy}, {dx});
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.activation = CLTRAIN_ACT_RELU;
  c.tol.vs_cpu = 0.0;  // no arithmetic: exact
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-3;
  return c;
}

// TANH and LOGISTIC go through clt_exp: within a few ulp of the double reference, and bit for
// bit the same on a device that rounds like the CPU.
OpCase smooth_case(int32_t op, const std::string& tag, std::vector<int32_t> dims, float scale) {
  OpCase c;
  c.op = op;
  const bool tanh = op == CLTRAIN_OP_TANH;
  c.name = std::string(tanh ? "Tanh_" : "Logistic_") + tag;
  const int32_t x = c.input("x", dims, scale);
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  c.step(op, CLTRAIN_PHASE_FORWARD, {x}, {y});
  c.step(op, CLTRAIN_PHASE_BACKWARD, {y, dy}, {dx});
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.tol.vs_cpu = 1e-5;
  c.tol.vs_reference = 1e-5;
  c.tol.fd_eps = 1e-3;
  c.tol.fd_tol = 1e-2;
  c.reference = [=](const Values& in) {
    std::vector<double> yv(in.at(x).size()), dxv(yv.size());
    for (size_t i = 0; i < yv.size(); ++i) {
      const double v = in.at(x)[i];
      yv[i] = tanh ? std::tanh(v) : 1.0 / (1.0 + std::exp(-v));
      dxv[i] = in.at(dy)[i] * (tanh ? 1.0 - yv[i] * yv[i] : yv[i] * (1.0 - yv[i]));
    }
    return Values{{y, yv}, {dx, dxv}};
  };
  return c;
}

std::vector<OpCase> make_cases() {
  OpCase relu6 = relu_case("x4x9", {4, 9});
  relu6.name = "ReLU6_x4x9";
  relu6.op = CLTRAIN_OP_RELU6;
  for (auto& s : relu6.steps) s.op = CLTRAIN_OP_RELU6;
  relu6.activation = CLTRAIN_ACT_RELU6;
  relu6.tensors[0].scale = 8.0f;  // both clamps
  return {relu_case("x4x9", {4, 9}), relu_case("x2x4x4x4", {2, 4, 4, 4}), relu6,
          smooth_case(CLTRAIN_OP_TANH, "x3x7", {3, 7}, 3.0f), smooth_case(CLTRAIN_OP_LOGISTIC, "x3x7", {3, 7}, 6.0f)};
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
