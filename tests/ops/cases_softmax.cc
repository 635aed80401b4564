// SOFTMAX over the last dimension with params.beta: forward in [x] out [y], backward in [y, dy]
// out [dx].
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

std::vector<OpCase> make_cases() {
  return {softmax_case("beta1_x4x10", {4, 10}, 1.0f), softmax_case("beta0p5_x3x7", {3, 7}, 0.5f),
          softmax_case("beta1_x2x4x16", {2, 4, 16}, 1.0f),
          softmax_case("beta1_x32x10", {32, 10}, 1.0f)};  // the mlp's output at batch 32
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
