// DEPTHWISE_CONV_2D: as CONV_2D (cases_conv2d.cc) with depth multipliers, and channel counts that
// the OpenCL kernels compute as 16 or 8 vector lanes.
#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

constexpr int32_t SAME = CLTRAIN_PADDING_SAME, VALID = CLTRAIN_PADDING_VALID;

std::vector<OpCase> make_cases() {
  // One spec a line.
  // clang-format off
  const int32_t NONE = CLTRAIN_ACT_NONE, RELU = CLTRAIN_ACT_RELU, RELU6 = CLTRAIN_ACT_RELU6, TANH = CLTRAIN_ACT_TANH;
  const std::vector<ConvSpec> depthwise_cases = {
      {"same_s1_k3_m1_n2_h5w6_c5", {2, 5, 6, 5}, 3, 3, 1, SAME, 1, 1, 1, 1, RELU},
      {"valid_s2_k3_m2_nobias_n2_h7w7_c3", {2, 7, 7, 3}, 3, 3, 2, VALID, 2, 2, 1, 1, NONE, false},
      {"same_dil2_k3_m3_n1_h7w8_c2", {1, 7, 8, 2}, 3, 3, 3, SAME, 1, 1, 2, 2, RELU6, true, true, true, 4.0f},
      {"first_layer_same_s2_k2_m1_n2_h6w5_c4", {2, 6, 5, 4}, 2, 2, 1, SAME, 2, 2, 1, 1, TANH, true, false},
      // MobileNetV2's depthwise after a ReLU6 expansion: 16 channels (vector lanes on OpenCL).
      {"dxrelu6_same_s2_k3_m1_n2_h6w6_c16", {2, 6, 6, 16}, 3, 3, 1, SAME, 2, 2, 1, 1, RELU6, true, true, true, 1.0f,
       32, 1e-2, RELU6},
      {"dxrelu_same_s1_k3_m2_n1_h5w5_c3", {1, 5, 5, 3}, 3, 3, 2, SAME, 1, 1, 1, 1, NONE, true, true, true, 1.0f, 32,
       1e-2, RELU},
      // 24 channels: 8 vector lanes on OpenCL, a 5x5 VALID window; a filter gradient alone.
      {"eight_lanes_valid_k5_m1_n3_h8w9_c24", {3, 8, 9, 24}, 5, 5, 1, VALID, 1, 1, 1, 1, TANH, true, true, true, 0.3f,
       16, 1e-3},
      {"only_dw_same_s2_k3_m1_n2_h6w6_c3", {2, 6, 6, 3}, 3, 3, 1, SAME, 2, 2, 1, 1, RELU, true, false},
      {"dil2x1_nobias_same_k3_m3_n2_h8w7_c2", {2, 8, 7, 2}, 3, 3, 3, SAME, 1, 1, 2, 1, TANH, false},
      // Rows wide enough for the OpenCL kernels' unchecked interiors (positions whose every tap
      // is inside x, for the forward, dW and stride-1 dx) between border positions checked tap by tap.
      {"interior_same_s1_k3_m1_n2_h7w13_c16", {2, 7, 13, 16}, 3, 3, 1, SAME, 1, 1, 1, 1, RELU6, true, true, true, 0.5f,
       32, 1e-3, RELU6},
      {"interior_valid_s2_k3_m1_n1_h9w19_c8", {1, 9, 19, 8}, 3, 3, 1, VALID, 2, 2, 1, 1, TANH, true, true, true, 0.5f,
       16, 1e-3},
  };
  // clang-format on
  std::vector<OpCase> cases;
  for (const ConvSpec& s : depthwise_cases) cases.push_back(conv_case(s, true));
  return cases;
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
