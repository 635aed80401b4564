// RESHAPE: forward in [x] out [y], backward in [dy] out [dx].
#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

OpCase reshape_case(const std::string& tag, std::vector<int32_t> from, std::vector<int32_t> to) {
  OpCase c;
  c.name = "Reshape_" + tag;
  c.op = CLTRAIN_OP_RESHAPE;
  const int32_t x = c.input("x", from);
  const int32_t y = c.output("y", to);
  const int32_t dy = c.input("dy", to);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", from, CLTRAIN_ROLE_BACK_PROP);
  c.step(CLTRAIN_OP_RESHAPE, CLTRAIN_PHASE_FORWARD, {x}, {y});
  c.step(CLTRAIN_OP_RESHAPE, CLTRAIN_PHASE_BACKWARD, {dy}, {dx});
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.tol.vs_cpu = 0.0;  // a copy: exact
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-3;
  return c;
}

std::vector<OpCase> make_cases() {
  return {reshape_case("4x6_to_2x12", {4, 6}, {2, 12}), reshape_case("2x4x4x2_to_8x8", {2, 4, 4, 2}, {8, 8})};
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
