// MEAN (axes_mask, keep_dims): forward in [x] out [y], backward in [dy] out [dx]; sums in the
// numerics' order, exact.
#include <type_traits>

#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

OpCase mean_case(const std::string& tag, std::vector<int32_t> xdims, int32_t mask, bool keep_dims) {
  std::vector<int32_t> ydims;
  uint64_t count = 1;
  for (size_t d = 0; d < xdims.size(); ++d) {
    const bool reduced = (mask >> d) & 1;
    if (reduced) count *= static_cast<uint64_t>(xdims[d]);
    if (!reduced || keep_dims) ydims.push_back(reduced ? 1 : xdims[d]);
  }
  cltrain_op_params p{};
  p.axes_mask = mask;
  p.keep_dims = keep_dims;
  OpCase c = unary_case(CLTRAIN_OP_MEAN, "Mean_" + tag, xdims, ydims, p);
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-6;
  const std::vector<uint64_t> map = y_index(xdims, reduced_strides(xdims, mask));
  const int32_t x = 0, y = 1, dy = 2, dx = 3;
  // y = (sum in increasing flat index of x) / count; dx = dy / count.
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    const T n = static_cast<T>(count);
    std::vector<T> yv(element_count(ydims), T(0)), dxv(map.size());
    for (size_t i = 0; i < map.size(); ++i) yv[map[i]] = yv[map[i]] + in.at(x)[i];
    for (T& v : yv) v = v / n;
    for (size_t i = 0; i < map.size(); ++i) dxv[i] = in.at(dy)[map[i]] / n;
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      mean_case("hw_keepdims_n2_h4w5_c3", {2, 4, 5, 3}, 0b0110, true),  // global average pooling
      mean_case("hw_n2_h3w4_c5", {2, 3, 4, 5}, 0b0110, false),
      mean_case("axis0_x4x3x2", {4, 3, 2}, 0b001, false),
      mean_case("all_keepdims_x2x3x4", {2, 3, 4}, 0b111, true),
      mean_case("hw_keepdims_n3_h5w6_c7", {3, 5, 6, 7}, 0b0110, true),
      mean_case("outer_and_middle_x3x4x5", {3, 4, 5}, 0b101, false),
      mean_case("all_x4x1x33", {4, 1, 33}, 0b111, false),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
