// TILE (y's dim d is m_d times x's): forward in [x] out [y] (copies, exact), backward in [dy] out
// [dx]: per element of dx, the sum of its copies' gradients in increasing flat index of y.
#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

OpCase tile_case(const std::string& tag, std::vector<int32_t> xdims, std::vector<int32_t> multiples) {
  std::vector<int32_t> ydims(xdims.size());
  cltrain_op_params p{};
  for (size_t d = 0; d < xdims.size(); ++d) {
    ydims[d] = xdims[d] * multiples[d];
    if (multiples[d] > 1) p.axes_mask |= 1 << d;
  }
  OpCase c = unary_case(CLTRAIN_OP_TILE, "Tile_" + tag, xdims, ydims, p);
  // Per element of y, in increasing order, the element of x it copies.
  const uint64_t ny = element_count(ydims);
  std::vector<uint64_t> from(ny);
  for (uint64_t i = 0; i < ny; ++i) {
    uint64_t r = i, xi = 0, stride = 1;
    for (size_t d = ydims.size(); d-- > 0;) {
      const uint64_t coord = r % static_cast<uint64_t>(ydims[d]);
      r /= static_cast<uint64_t>(ydims[d]);
      xi += (coord % static_cast<uint64_t>(xdims[d])) * stride;
      stride *= static_cast<uint64_t>(xdims[d]);
    }
    from[i] = xi;
  }
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 1e-6;
  gather_reference(c, from, element_count(xdims));
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      // Keras' UpSampling2D: EXPAND_DIMS to [N, H, 1, W, C], TILE x2 on the new axis, RESHAPE.
      tile_case("upsampling_rows_n2_h3_x1_w4_c3", {2, 3, 1, 4, 3}, {1, 1, 2, 1, 1}),
      tile_case("upsampling1d_n2_s5_x1_c3", {2, 5, 1, 3}, {1, 1, 3, 1}),
      // Whole blocks repeated (np.tile): axes longer than 1, several at once.
      tile_case("blocks_x2x3x4", {2, 3, 4}, {1, 2, 3}),
      tile_case("every_axis_x2x2x3", {2, 2, 3}, {2, 3, 2}),
      tile_case("rank6_n2_x2x1x3x1x2", {2, 2, 1, 3, 1, 2}, {1, 2, 3, 1, 2, 2}),
      tile_case("none_x3x4", {3, 4}, {1, 1}),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
