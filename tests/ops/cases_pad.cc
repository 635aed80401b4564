// PAD (zeros before and after each axis): forward in [x] out [y], backward in [dy] out [dx] (the
// crop); copies, exact.
#include <type_traits>

#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

OpCase pad_case(const std::string& tag, std::vector<int32_t> xdims, std::vector<int32_t> before,
                std::vector<int32_t> after) {
  cltrain_op_params p{};
  std::vector<int32_t> ydims = xdims;
  for (size_t d = 0; d < xdims.size(); ++d) {
    p.pad_before[d] = before[d];
    p.pad_after[d] = after[d];
    ydims[d] += before[d] + after[d];
  }
  OpCase c = unary_case(CLTRAIN_OP_PAD, "Pad_" + tag, xdims, ydims, p);
  c.tol.vs_cpu = 0.0;  // copies
  c.tol.vs_reference = 0.0;
  std::vector<uint64_t> ystride(ydims.size());
  uint64_t s = 1;
  for (size_t d = ydims.size(); d-- > 0;) {
    ystride[d] = s;
    s *= static_cast<uint64_t>(ydims[d]);
  }
  const std::vector<uint64_t> map = y_index(xdims, ystride, before);
  const int32_t x = 0, y = 1, dy = 2, dx = 3;
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    std::vector<T> yv(element_count(ydims), T(0)), dxv(map.size());
    for (size_t i = 0; i < map.size(); ++i) {
      yv[map[i]] = in.at(x)[i];
      dxv[i] = in.at(dy)[map[i]];
    }
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      pad_case("4d_n2_h3w4_c2", {2, 3, 4, 2}, {0, 1, 2, 0}, {0, 2, 1, 1}),
      pad_case("2d_x3x5", {3, 5}, {1, 2}, {0, 3}),
      pad_case("hw_n2_h3w4_c5", {2, 3, 4, 5}, {0, 1, 2, 0}, {0, 2, 1, 0}),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
