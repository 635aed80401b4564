// RELU: forward in [x] out [y], backward in [y, dy] out [dx].
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

std::vector<OpCase> make_cases() { return {relu_case("x4x9", {4, 9}), relu_case("x2x4x4x4", {2, 4, 4, 4})}; }

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
