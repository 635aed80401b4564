// ACCUMULATE (backward phase): in [a] out [acc], acc += a; run twice so that it accumulates.
#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

OpCase accumulate_case(const std::string& tag, std::vector<int32_t> dims) {
  OpCase c;
  c.name = "Accumulate_" + tag;
  c.op = CLTRAIN_OP_ACCUMULATE;
  const int32_t a = c.input("a", dims);
  c.tensors[a].role = CLTRAIN_ROLE_DISPOSABLE;
  const int32_t acc = c.input("acc", dims);
  c.tensors[acc].role = CLTRAIN_ROLE_BACK_PROP;
  c.step(CLTRAIN_OP_ACCUMULATE, CLTRAIN_PHASE_BACKWARD, {a}, {acc});
  c.stateful = true;
  c.iterations = 2;
  c.fresh = {a};
  c.state = {acc};
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-6;
  c.reference_step = [=](Values& v, int64_t) {
    for (size_t i = 0; i < v[acc].size(); ++i) v[acc][i] += v[a][i];
  };
  return c;
}

std::vector<OpCase> make_cases() {
  return {accumulate_case("x4x7", {4, 7}), accumulate_case("x64", {64}), accumulate_case("x32x784", {32, 784})};
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
