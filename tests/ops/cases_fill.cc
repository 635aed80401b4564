// FILL (every element params.fill_value, an RNN's zero state): forward in [] out [y]; forward
// only (its operands are constants). Exact.
#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

OpCase fill_case(const std::string& tag, std::vector<int32_t> dims, float value) {
  OpCase c;
  c.op = CLTRAIN_OP_FILL;
  c.name = "Fill_" + tag;
  const int32_t y = c.output("y", dims);
  cltrain_op_params p{};
  p.fill_value = value;
  c.step(CLTRAIN_OP_FILL, CLTRAIN_PHASE_FORWARD, {}, {y}, p);
  c.y = y;
  c.fd_samples = 0;
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 0.0;
  const uint64_t n = element_count(dims);
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in)>::mapped_type::value_type;
    return std::decay_t<decltype(in)>{{y, std::vector<T>(n, T(value))}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      fill_case("zeros_n2_x64", {2, 64}, 0.0f),  // an LSTM's h and c at step 0
      fill_case("value_n3_x5x7", {3, 5, 7}, -1.75f),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
