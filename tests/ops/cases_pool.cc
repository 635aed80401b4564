// MAX_POOL_2D (backward in [x, dy], or [-, dy, argmax] after a forward that also writes the UINT8
// argmax) and AVERAGE_POOL_2D (backward in [dy]): SAME and VALID
// padding, strides, overlapping windows (an element taken by several windows sums their dy),
// and border windows with fewer inside positions (the average divides by their count); inputs
// with ties for the first-maximum rule. Exact: bit for bit the numerics' float definition.
#include <type_traits>

#include "op_case.h"
#include "reference.h"

namespace cltrain {
namespace optest {
namespace {

constexpr int32_t SAME = CLTRAIN_PADDING_SAME, VALID = CLTRAIN_PADDING_VALID;

struct PoolSpec {
  std::string tag;
  std::vector<int32_t> x;
  int32_t fh, fw, padding, stride_h, stride_w;
};

// argmax (max only): the forward also writes one UINT8 window position per output, and the
// backward reads that instead of x (what the host plans for a max pool: inputs x, dy, argmax, y).
// ties (max only): x holds small whole numbers, so windows often hold several maxima and the
// first one (in (kh, kw) order) must take dy; no finite differences there.
OpCase pool_case(const PoolSpec& s, bool max, bool argmax = false, bool ties = false) {
  OpCase c;
  c.op = max ? CLTRAIN_OP_MAX_POOL_2D : CLTRAIN_OP_AVERAGE_POOL_2D;
  c.name =
      std::string(max ? "MaxPool2D_" : "AveragePool2D_") + (argmax ? "argmax_" : "") + (ties ? "ties_" : "") + s.tag;
  cltrain_op_params p{};
  p.padding = s.padding;
  p.filter_h = s.fh;
  p.filter_w = s.fw;
  p.stride_h = s.stride_h;
  p.stride_w = s.stride_w;
  const std::vector<int32_t> ydims = window_output(s.x, p, s.fh, s.fw, s.x[3]);
  const int32_t x = c.input("x", s.x);
  if (ties) {
    c.tensors[x].fill = Fill::Integers;
    c.tensors[x].scale = 3.0f;
  } else if (max) {
    // Values 0.05 apart: a perturbation of 0.01 never changes a window's maximum.
    c.tensors[x].fill = Fill::Values;
    c.tensors[x].values = distinct_values(element_count(s.x), 0.05f, static_cast<uint32_t>(s.tag.size() * 7919));
  }
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", s.x, CLTRAIN_ROLE_BACK_PROP);
  if (argmax) {
    TensorSpec am;
    am.name = "argmax";
    am.dims = ydims;
    am.fill = Fill::Output;
    am.dtype = CLTRAIN_UINT8;
    const int32_t a = c.add(am);
    c.step(c.op, CLTRAIN_PHASE_FORWARD, {x}, {y, a}, p);
    c.step(c.op, CLTRAIN_PHASE_BACKWARD, {-1, dy, a, -1}, {dx}, p);
  } else {
    c.step(c.op, CLTRAIN_PHASE_FORWARD, {x}, {y}, p);
    if (max)
      c.step(c.op, CLTRAIN_PHASE_BACKWARD, {x, dy}, {dx}, p);
    else
      c.step(c.op, CLTRAIN_PHASE_BACKWARD, {dy}, {dx}, p);
  }
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.fd_samples = ties ? 0 : 48;
  c.tol.vs_cpu = max ? 0.0 : 1e-6;  // max only moves values
  c.tol.vs_reference = 1e-6;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-3;
  const std::vector<int32_t> xdims = s.x;
  const auto ref = [=](const auto& in) {
    const auto r = pool_reference(in.at(x), xdims, p, max, in.at(dy));
    return std::decay_t<decltype(in)>{{y, r.y}, {dx, r.dx}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      pool_case({"same_k2_s2_n2_h6w6_c3", {2, 6, 6, 3}, 2, 2, SAME, 2, 2}, true),
      pool_case({"valid_k3_s2_n2_h7w8_c2", {2, 7, 8, 2}, 3, 3, VALID, 2, 2}, true),
      pool_case({"same_k3_s1_overlap_n1_h5w7_c3", {1, 5, 7, 3}, 3, 3, SAME, 1, 1}, true),
      // The argmax path: windows that tile x (the backward scatters, one work-item per window on
      // OpenCL), overlapping ones (it gathers), and VALID windows with a remainder.
      pool_case({"same_k2_s2_n2_h6w6_c3", {2, 6, 6, 3}, 2, 2, SAME, 2, 2}, true, true),
      pool_case({"same_k3_s1_overlap_n1_h5w7_c3", {1, 5, 7, 3}, 3, 3, SAME, 1, 1}, true, true),
      pool_case({"valid_k3_s2_n2_h7w8_c2", {2, 7, 8, 2}, 3, 3, VALID, 2, 2}, true, true),
      pool_case({"same_k2x3_s2x3_n1_h5w7_c4", {1, 5, 7, 4}, 2, 3, SAME, 2, 3}, true, true),
      pool_case({"same_k3_s2_border_n2_h5w6_c3", {2, 5, 6, 3}, 3, 3, SAME, 2, 2}, false),
      pool_case({"valid_k2x3_s2x1_n2_h6w6_c2", {2, 6, 6, 2}, 2, 3, VALID, 2, 1}, false),
      pool_case({"same_k3_s1_overlap_n1_h5w5_c4", {1, 5, 5, 4}, 3, 3, SAME, 1, 1}, false),
      // Ties, SAME and VALID with overlapping windows; an average over a 3x3 SAME window and a
      // 2x3 VALID one with a stride per axis.
      pool_case({"same_k3_s2_n2_h7w9_c3", {2, 7, 9, 3}, 3, 3, SAME, 2, 2}, true, false, true),
      pool_case({"same_k3_s2_n2_h7w9_c3", {2, 7, 9, 3}, 3, 3, SAME, 2, 2}, true, true, true),
      pool_case({"valid_k3x2_s1x2_n2_h6w5_c4", {2, 6, 5, 4}, 3, 2, VALID, 1, 2}, true),
      pool_case({"same_k3_s2_n2_h7w9_c3", {2, 7, 9, 3}, 3, 3, SAME, 2, 2}, false),
      pool_case({"valid_k2x3_s2x1_n1_h6w7_c5", {1, 6, 7, 5}, 2, 3, VALID, 2, 1}, false),
      // 16 and 8 channels: the OpenCL forward's vector lanes (16 and 8 channels per work-item),
      // with ties and the argmax.
      pool_case({"lanes_same_k2_s2_n2_h6w6_c16", {2, 6, 6, 16}, 2, 2, SAME, 2, 2}, true, true, true),
      pool_case({"lanes_same_k3_s1_overlap_n1_h5w7_c8", {1, 5, 7, 8}, 3, 3, SAME, 1, 1}, true, true),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
