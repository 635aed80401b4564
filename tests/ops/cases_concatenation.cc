// CONCATENATION along any axis: forward in [x0, x1, ...] out [y], backward in [dy] out [dx0,
// dx1, ...], where a dx may be -1 (an input that needs no gradient). Copies only: exact, bit for bit.
#include <type_traits>

#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

// extents: params.concat_extents given, as the host gives them; without, the backends take what
// the tensors they have say.
OpCase concat_case(const std::string& tag, const std::vector<std::vector<int32_t>>& parts, int32_t axis,
                   const std::vector<bool>& needs_grad = {}, bool extents = true) {
  OpCase c;
  c.op = CLTRAIN_OP_CONCATENATION;
  c.name = "Concatenation_" + tag;
  std::vector<int32_t> ydims = parts[0];
  ydims[axis] = 0;
  std::vector<int32_t> xs, dxs;
  for (size_t k = 0; k < parts.size(); ++k) {
    ydims[axis] += parts[k][axis];
    xs.push_back(c.input("x" + std::to_string(k), parts[k]));
  }
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  for (size_t k = 0; k < parts.size(); ++k) {
    const bool needed = needs_grad.empty() || needs_grad[k];
    dxs.push_back(needed ? c.output("dx" + std::to_string(k), parts[k], CLTRAIN_ROLE_BACK_PROP) : -1);
    if (needed) c.grads.push_back({xs[k], dxs.back()});
  }
  cltrain_op_params p{};
  p.axis = axis;
  for (size_t k = 0; k < parts.size() && extents; ++k) p.concat_extents[k] = parts[k][axis];
  c.step(c.op, CLTRAIN_PHASE_FORWARD, xs, {y}, p);
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {dy}, dxs, p);
  c.y = y;
  c.dy = dy;
  c.fd_samples = 16;
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 0.0;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-3;
  // Element i of y, over its coordinates (outer, position along the axis, inner).
  uint64_t outer = 1, inner = 1;
  for (int32_t d = 0; d < axis; ++d) outer *= static_cast<uint64_t>(ydims[d]);
  for (size_t d = static_cast<size_t>(axis) + 1; d < ydims.size(); ++d) inner *= static_cast<uint64_t>(ydims[d]);
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(dy))>::value_type;
    std::vector<T> yv(element_count(ydims));
    std::decay_t<decltype(in)> out;
    uint64_t start = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      const uint64_t len = static_cast<uint64_t>(parts[k][axis]) * inner;
      std::vector<T> dxv(element_count(parts[k]));
      for (uint64_t o = 0; o < outer; ++o)
        for (uint64_t j = 0; j < len; ++j) {
          const uint64_t yi = o * static_cast<uint64_t>(ydims[axis]) * inner + start * inner + j;
          yv[yi] = in.at(xs[k])[o * len + j];
          dxv[o * len + j] = in.at(dy)[yi];
        }
      if (dxs[k] >= 0) out[dxs[k]] = dxv;
      start += static_cast<uint64_t>(parts[k][axis]);
    }
    out[y] = yv;
    return out;
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      concat_case("axis3_three_n2x3x3", {{2, 3, 3, 2}, {2, 3, 3, 4}, {2, 3, 3, 1}}, 3),
      concat_case("axis1_x2x3x4_x2x1x4", {{2, 3, 4}, {2, 1, 4}}, 1),
      concat_case("axis0_x1x5_x3x5", {{1, 5}, {3, 5}}, 0),
      // Seven inputs, the fourth needing no gradient: its extent is what the others leave of dy.
      concat_case("seven_one_absent_axis2",
                  {{2, 2, 1}, {2, 2, 2}, {2, 2, 1}, {2, 2, 3}, {2, 2, 1}, {2, 2, 2}, {2, 2, 1}}, 2,
                  {true, true, true, false, true, true, true}, false),
      concat_case("axis3_three_n2x3x4", {{2, 3, 4, 5}, {2, 3, 4, 1}, {2, 3, 4, 7}}, 3),
      concat_case("axis1_middle_absent_x2x3x4", {{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, 1, {true, false, true}, false),
      // Gaps on both sides of a present gradient: its offset comes from params.concat_extents.
      concat_case("axis0_seven_gaps", {{1, 3}, {2, 3}, {3, 3}, {1, 3}, {2, 3}, {1, 3}, {2, 3}}, 0,
                  {false, true, false, true, true, false, true}),
      // Eight, CLTRAIN_MAX_STEP_IO: the time steps of an unrolled RNN stacked (the packs pass), one each.
      concat_case("eight_steps_axis1",
                  {{3, 1, 4}, {3, 1, 4}, {3, 1, 4}, {3, 1, 4}, {3, 1, 4}, {3, 1, 4}, {3, 1, 4}, {3, 1, 4}}, 1),
      concat_case("eight_last_absent_axis2",
                  {{2, 2, 1}, {2, 2, 2}, {2, 2, 1}, {2, 2, 3}, {2, 2, 1}, {2, 2, 2}, {2, 2, 1}, {2, 2, 2}}, 2,
                  {true, true, true, true, true, true, true, false}),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
