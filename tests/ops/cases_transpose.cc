// TRANSPOSE (y's axis d is x's axis perm[d]): forward in [x] out [y], backward in [dy] out [dx]
// (the inverse permutation); copies, exact.
#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

OpCase transpose_case(const std::string& tag, std::vector<int32_t> xdims, std::vector<int32_t> perm) {
  cltrain_op_params p{};
  std::vector<int32_t> ydims(xdims.size());
  for (size_t d = 0; d < xdims.size(); ++d) {
    p.perm[d] = perm[d];
    ydims[d] = xdims[static_cast<size_t>(perm[d])];
  }
  OpCase c = unary_case(CLTRAIN_OP_TRANSPOSE, "Transpose_" + tag, xdims, ydims, p);
  // y's stride of each of x's axes: x's axis perm[d] is y's axis d.
  std::vector<uint64_t> ystride(ydims.size()), stride(xdims.size());
  uint64_t s = 1;
  for (size_t d = ydims.size(); d-- > 0;) {
    ystride[d] = s;
    s *= static_cast<uint64_t>(ydims[d]);
  }
  for (size_t d = 0; d < perm.size(); ++d) stride[static_cast<size_t>(perm[d])] = ystride[d];
  copy_reference(c, y_index(xdims, stride), element_count(ydims));
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      transpose_case("2d_x3x5", {3, 5}, {1, 0}),
      transpose_case("nhwc_to_nchw_n2_h3w4_c5", {2, 3, 4, 5}, {0, 3, 1, 2}),
      transpose_case("heads_n2_t5_h3_d4", {2, 5, 3, 4}, {0, 2, 1, 3}),  // MultiHeadAttention's split
      transpose_case("last_two_n2_x4x3", {2, 4, 3}, {0, 2, 1}),
      transpose_case("rank5_size1_n2", {2, 1, 3, 4, 2}, {0, 3, 1, 4, 2}),
      transpose_case("batch_last_x3x2", {3, 2}, {1, 0}),
      transpose_case("identity_n2_x3x4", {2, 3, 4}, {0, 1, 2}),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
