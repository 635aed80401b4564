// PAD (zeros before and after each axis) and PADV2 (its constant value: here finite ones; -inf, a
// padded max-pool's, trains in tests/python/test_torch_files.py): forward in [x] out [y],
// backward in [dy] out [dx] (the crop); copies, exact.
#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

OpCase pad_case(const std::string& tag, std::vector<int32_t> xdims, std::vector<int32_t> before,
                std::vector<int32_t> after, bool v2 = false, float value = 0.0f) {
  cltrain_op_params p{};
  p.pad_value = value;
  std::vector<int32_t> ydims = xdims;
  for (size_t d = 0; d < xdims.size(); ++d) {
    p.pad_before[d] = before[d];
    p.pad_after[d] = after[d];
    ydims[d] += before[d] + after[d];
  }
  OpCase c = unary_case(v2 ? CLTRAIN_OP_PADV2 : CLTRAIN_OP_PAD, (v2 ? "PadV2_" : "Pad_") + tag, xdims, ydims, p);
  std::vector<uint64_t> ystride(ydims.size());
  uint64_t s = 1;
  for (size_t d = ydims.size(); d-- > 0;) {
    ystride[d] = s;
    s *= static_cast<uint64_t>(ydims[d]);
  }
  copy_reference(c, y_index(xdims, ystride, before), element_count(ydims), value);
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      pad_case("4d_n2_h3w4_c2", {2, 3, 4, 2}, {0, 1, 2, 0}, {0, 2, 1, 1}),
      pad_case("2d_x3x5", {3, 5}, {1, 2}, {0, 3}),
      pad_case("hw_n2_h3w4_c5", {2, 3, 4, 5}, {0, 1, 2, 0}, {0, 2, 1, 0}),
      pad_case("v_m3p5_n2_h3w4_c2", {2, 3, 4, 2}, {0, 1, 1, 0}, {0, 1, 1, 0}, true, -3.5f),
      pad_case("v_7p25_x3x5", {3, 5}, {1, 2}, {0, 3}, true, 7.25f),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
