// MEAN (axes_mask, keep_dims) and PAD (zeros before and after each axis): forward in [x] out
// [y], backward in [dy] out [dx]; both linear, so their references are exact sums and copies.
#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

// Strides of y for each axis of x (0 on reduced axes).
std::vector<uint64_t> reduced_strides(const std::vector<int32_t>& x, int32_t mask) {
  std::vector<uint64_t> stride(x.size());
  uint64_t s = 1;
  for (size_t d = x.size(); d-- > 0;) {
    const bool reduced = (mask >> d) & 1;
    stride[d] = reduced ? 0 : s;
    if (!reduced) s *= static_cast<uint64_t>(x[d]);
  }
  return stride;
}

// The y index of every x index.
std::vector<uint64_t> y_index(const std::vector<int32_t>& x, const std::vector<uint64_t>& stride,
                              const std::vector<int32_t>& offset = {}) {
  std::vector<uint64_t> out(element_count(x));
  for (uint64_t i = 0; i < out.size(); ++i) {
    uint64_t rest = i, j = 0;
    for (size_t d = x.size(); d-- > 0;) {
      const uint64_t coord = rest % static_cast<uint64_t>(x[d]);
      rest /= static_cast<uint64_t>(x[d]);
      j += (coord + (offset.empty() ? 0 : static_cast<uint64_t>(offset[d]))) * stride[d];
    }
    out[i] = j;
  }
  return out;
}

OpCase unary_case(int32_t op, const std::string& name, std::vector<int32_t> xdims, std::vector<int32_t> ydims,
                  const cltrain_op_params& p) {
  OpCase c;
  c.op = op;
  c.name = name;
  const int32_t x = c.input("x", xdims);
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", xdims, CLTRAIN_ROLE_BACK_PROP);
  c.step(op, CLTRAIN_PHASE_FORWARD, {x}, {y}, p);
  c.step(op, CLTRAIN_PHASE_BACKWARD, {dy}, {dx}, p);
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.fd_samples = 32;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-3;
  return c;
}

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
  c.reference = [=](const Values& in) {
    std::vector<double> yv(element_count(ydims), 0.0), dxv(map.size());
    for (size_t i = 0; i < map.size(); ++i) yv[map[i]] += in.at(x)[i];
    for (double& v : yv) v /= static_cast<double>(count);
    for (size_t i = 0; i < map.size(); ++i) dxv[i] = in.at(dy)[map[i]] / static_cast<double>(count);
    return Values{{y, yv}, {dx, dxv}};
  };
  return c;
}

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
  c.reference = [=](const Values& in) {
    std::vector<double> yv(element_count(ydims), 0.0), dxv(map.size());
    for (size_t i = 0; i < map.size(); ++i) {
      yv[map[i]] = in.at(x)[i];
      dxv[i] = in.at(dy)[map[i]];
    }
    return Values{{y, yv}, {dx, dxv}};
  };
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      mean_case("hw_keepdims_n2_h4w5_c3", {2, 4, 5, 3}, 0b0110, true),  // global average pooling
      mean_case("hw_n2_h3w4_c5", {2, 3, 4, 5}, 0b0110, false),
      mean_case("axis0_x4x3x2", {4, 3, 2}, 0b001, false),
      mean_case("all_keepdims_x2x3x4", {2, 3, 4}, 0b111, true),
      pad_case("4d_n2_h3w4_c2", {2, 3, 4, 2}, {0, 1, 2, 0}, {0, 2, 1, 1}),
      pad_case("2d_x3x5", {3, 5}, {1, 2}, {0, 3}),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
