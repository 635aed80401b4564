// MEAN and SUM (axes_mask, keep_dims): forward in [x] out [y], backward in [dy] out [dx]; sums
// in the numerics' order, exact.
#include <type_traits>

#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

OpCase mean_case(const std::string& tag, std::vector<int32_t> xdims, int32_t mask, bool keep_dims, bool sum = false) {
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
  OpCase c = unary_case(sum ? CLTRAIN_OP_SUM : CLTRAIN_OP_MEAN, (sum ? "Sum_" : "Mean_") + tag, xdims, ydims, p);
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-6;
  const std::vector<uint64_t> map = y_index(xdims, reduced_strides(xdims, mask));
  const int32_t x = 0, y = 1, dy = 2, dx = 3;
  // y = (sum in increasing flat index of x) / count; dx = dy / count (SUM: no divides).
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    const T n = static_cast<T>(count);
    std::vector<T> yv(element_count(ydims), T(0)), dxv(map.size());
    for (size_t i = 0; i < map.size(); ++i) yv[map[i]] = yv[map[i]] + in.at(x)[i];
    if (!sum)
      for (T& v : yv) v = v / n;
    for (size_t i = 0; i < map.size(); ++i) dxv[i] = sum ? in.at(dy)[map[i]] : in.at(dy)[map[i]] / n;
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

// REDUCE_MAX/MIN: forward in [x] out [y], backward in [x, y, dy] out [dx]; ties (ties true: x
// holds few distinct values) share the gradient evenly, as TensorFlow's gradient does.
OpCase extreme_case(bool min, const std::string& tag, std::vector<int32_t> xdims, int32_t mask, bool keep_dims,
                    bool ties) {
  std::vector<int32_t> ydims;
  for (size_t d = 0; d < xdims.size(); ++d) {
    const bool reduced = (mask >> d) & 1;
    if (!reduced || keep_dims) ydims.push_back(reduced ? 1 : xdims[d]);
  }
  cltrain_op_params p{};
  p.axes_mask = mask;
  p.keep_dims = keep_dims;
  const int32_t op = min ? CLTRAIN_OP_REDUCE_MIN : CLTRAIN_OP_REDUCE_MAX;
  OpCase c = unary_case(op, std::string(min ? "ReduceMin_" : "ReduceMax_") + tag, xdims, ydims, p);
  const int32_t x = 0, y = 1, dy = 2, dx = 3;
  c.steps[1].num_inputs = 3;  // the backward reads x, y and dy
  c.steps[1].inputs[0] = x;
  c.steps[1].inputs[1] = y;
  c.steps[1].inputs[2] = dy;
  if (ties) {
    TensorSpec& t = c.tensors[x];
    t.fill = Fill::Values;
    t.values.resize(element_count(xdims));
    for (size_t i = 0; i < t.values.size(); ++i) t.values[i] = static_cast<float>((i * 7) % 3) - 1.0f;
    c.fd_samples = 0;  // not differentiable at ties
  }
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 1e-6;
  const std::vector<uint64_t> map = y_index(xdims, reduced_strides(xdims, mask));
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    const size_t ny = element_count(ydims);
    std::vector<T> yv(ny), n(ny, T(0)), dxv(map.size());
    std::vector<bool> seen(ny, false);
    for (size_t i = 0; i < map.size(); ++i) {
      const T v = in.at(x)[i];
      T& m = yv[map[i]];
      m = !seen[map[i]] ? v : ((min ? v < m : v > m) ? v : m);
      seen[map[i]] = true;
    }
    for (size_t i = 0; i < map.size(); ++i) n[map[i]] += in.at(x)[i] == yv[map[i]] ? T(1) : T(0);
    for (size_t i = 0; i < map.size(); ++i)
      dxv[i] = in.at(x)[i] == yv[map[i]] ? (T(1) / n[map[i]]) * in.at(dy)[map[i]] : T(0);
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      extreme_case(false, "steps_n2_s7_c5", {2, 7, 5}, 0b010, false, false),  // GlobalMaxPooling1D
      extreme_case(false, "hw_keepdims_n2_h3w4_c3", {2, 3, 4, 3}, 0b0110, true, false),
      extreme_case(false, "ties_x4x9", {4, 9}, 0b10, false, true),
      extreme_case(true, "steps_n2_s7_c5", {2, 7, 5}, 0b010, false, false),
      extreme_case(true, "ties_outer_x3x4x5", {3, 4, 5}, 0b101, true, true),
      mean_case("hw_keepdims_n2_h4w5_c3", {2, 4, 5, 3}, 0b0110, true),  // global average pooling
      mean_case("hw_n2_h3w4_c5", {2, 3, 4, 5}, 0b0110, false),
      mean_case("axis0_x4x3x2", {4, 3, 2}, 0b001, false),
      mean_case("all_keepdims_x2x3x4", {2, 3, 4}, 0b111, true),
      mean_case("hw_keepdims_n3_h5w6_c7", {3, 5, 6, 7}, 0b0110, true),
      mean_case("outer_and_middle_x3x4x5", {3, 4, 5}, 0b101, false),
      mean_case("all_x4x1x33", {4, 1, 33}, 0b111, false),
      // SUM: torch.sum(x, dim=-1, keepdim=True) (log_softmax's denominator), over rows, over all.
      mean_case("last_keepdims_x4x5", {4, 5}, 0b10, true, true),
      mean_case("hw_n2_h3w4_c5", {2, 3, 4, 5}, 0b0110, false, true),
      mean_case("outer_and_middle_x3x4x5", {3, 4, 5}, 0b101, false, true),
      mean_case("all_x4x1x33", {4, 1, 33}, 0b111, false, true),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
