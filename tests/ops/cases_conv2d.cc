// CONV_2D: forward in [x, W, b] out [y], backward in [x, W, y, dy] out [dx, dW, db], over strides,
// dilations, SAME/VALID padding (even filters: uneven padding), fused activations, and the
// backward variants the training graph makes: a first layer (no dx), a frozen filter (no dW, x -1),
// a bias-only layer, the producer's activation applied to dx; sizes for CLBlast's indirect GEMM
// and scratch bounds that chunk the OpenCL GEMMs. cpu_numerics_test.cc holds the CPU to the
// numerics' float chains on every case here.
#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

constexpr int32_t SAME = CLTRAIN_PADDING_SAME, VALID = CLTRAIN_PADDING_VALID;

std::vector<OpCase> make_cases() {
  // One spec a line.
  // clang-format off
  const int32_t NONE = CLTRAIN_ACT_NONE, RELU = CLTRAIN_ACT_RELU, RELU6 = CLTRAIN_ACT_RELU6, TANH = CLTRAIN_ACT_TANH;
  const std::vector<ConvSpec> conv = {
      {"same_s1_k3_n2_h5w6_i3_o4", {2, 5, 6, 3}, 3, 3, 4, SAME, 1, 1, 1, 1, RELU},
      {"valid_s2x1_k3x2_n2_h7w6_i2_o3", {2, 7, 6, 2}, 3, 2, 3, VALID, 2, 1, 1, 1, NONE},
      // An even filter: SAME pads less before than after.
      {"same_s2_k4_nobias_n1_h8w7_i3_o5", {1, 8, 7, 3}, 4, 4, 5, SAME, 2, 2, 1, 1, RELU6, false, true, true, 2.0f},
      {"valid_dil2_k3_n2_h8w7_i2_o3", {2, 8, 7, 2}, 3, 3, 3, VALID, 1, 1, 2, 2, TANH},
      {"same_dil2x3_k3_n1_h7w9_i2_o3", {1, 7, 9, 2}, 3, 3, 3, SAME, 1, 1, 2, 3, NONE},
      {"first_layer_same_k5_n2_h8w8_i1_o8", {2, 8, 8, 1}, 5, 5, 8, SAME, 1, 1, 1, 1, RELU, true, false, true, 1.0f, 32,
       1e-3},
      // 5 input and 19 output channels: partial SIMD vectors everywhere.
      {"tails_same_s1_k3_n2_h6w6_i5_o19", {2, 6, 6, 5}, 3, 3, 19, SAME, 1, 1, 1, 1, CLTRAIN_ACT_RELU_N1_TO_1, true,
       true, true, 0.3f, 32, 1e-3},
      {"frozen_same_k3_n2_h5w5_i4_o6", {2, 5, 5, 4}, 3, 3, 6, SAME, 1, 1, 1, 1, NONE, true, true, false},
      {"bias_only_valid_k3_n2_h5w5_i3_o4", {2, 5, 5, 3}, 3, 3, 4, VALID, 1, 1, 1, 1, RELU, true, false, false},
      // mnist-kaggle's second convolution on a smaller image: long chains, whole SIMD tiles.
      {"mnist_same_k5_n2_h10w10_i32_o32", {2, 10, 10, 32}, 5, 5, 32, SAME, 1, 1, 1, 1, RELU, true, true, true, 0.2f,
       16},
      // The producer's derivative applied to dx (params.dx_activation): a 3x3, a 1x1 (which on
      // OpenCL then gathers instead of writing dx from the GEMM), and one without dW.
      {"dxrelu_same_s1_k3_n2_h6w5_i4_o3", {2, 6, 5, 4}, 3, 3, 3, SAME, 1, 1, 1, 1, RELU, true, true, true, 1.0f, 32,
       1e-2, RELU},
      {"dxrelu6_pointwise_n2_h4w4_i8_o6", {2, 4, 4, 8}, 1, 1, 6, SAME, 1, 1, 1, 1, NONE, true, true, true, 1.0f, 32,
       1e-2, RELU6},
      {"dxrelu_frozen_valid_s2_k3_n2_h7w7_i3_o4", {2, 7, 7, 3}, 3, 3, 4, VALID, 2, 2, 1, 1, NONE, true, true, false,
       1.0f, 32, 1e-2, RELU},
      // Large enough for CLBlast's indirect GEMM (padding and transposing copies in its scratch),
      // with sizes that are not whole tiles.
      {"indirect_gemm_same_k3_n3_h13w11_i16_o24", {3, 13, 11, 16}, 3, 3, 24, SAME, 1, 1, 1, 1, TANH, true, true, true,
       0.3f, 16, 1e-3},
      {"valid_s2x3_dil2x1_k3x2_nobias_n2_h11w10_i3_o5", {2, 11, 10, 3}, 3, 2, 5, VALID, 2, 3, 2, 1, RELU6, false, true,
       true, 2.0f},
      {"same_s2_dil1x2_k3_n2_h8w9_i4_o3", {2, 8, 9, 4}, 3, 3, 3, SAME, 2, 2, 1, 2, CLTRAIN_ACT_RELU_N1_TO_1, true, true,
       true, 0.5f, 32, 1e-3},
      {"pointwise_n2_h5w4_i6_o7", {2, 5, 4, 6}, 1, 1, 7, SAME, 1, 1, 1, 1, NONE},
      {"pointwise_s2_n2_h5w5_i3_o4", {2, 5, 5, 3}, 1, 1, 4, SAME, 2, 2, 1, 1, RELU},
      // Scratch bounds of a few KiB on OpenCL: forward panels of some rows, dW panels of a few
      // taps, then of some channels of one tap, dcol of one image; chunks end mid-image.
      {"chunked_rows_taps_same_k3_n3_h7w6_i3_o4", {3, 7, 6, 3}, 3, 3, 4, SAME, 1, 1, 1, 1, NONE, true, true, true,
       1.0f, 32, 1e-2, NONE, "4000"},
      {"chunked_channels_same_k3_n3_h7w6_i5_o4", {3, 7, 6, 5}, 3, 3, 4, SAME, 1, 1, 1, 1, TANH, true, true, true,
       1.0f, 32, 1e-2, NONE, "1000"},
      // Channels in whole vectors of gemm.cl's tiles (16 and 32): dW's panel read from x in place
      // (B_CONV) under strides, dilations, VALID and uneven SAME padding.
      {"implicit_panel_valid_s2x1_dil1x2_k3x2_n2_h9w11_i16_o8", {2, 9, 11, 16}, 3, 2, 8, VALID, 2, 1, 1, 2, RELU},
      {"implicit_panel_same_s2_k4_n2_h7w8_i32_o5", {2, 7, 8, 32}, 4, 4, 5, SAME, 2, 2, 1, 1, NONE, true, true, true,
       0.3f, 32, 1e-3},
      // Taps of 48 channels: dW's blocks of 64 columns start inside a tap; dx as one GEMM over dz
      // (stride 1) with taps of 40 channels (K_SEG) and the producer's ReLU as its epilogue.
      {"implicit_panel_same_k3_n2_h6w5_i48_o40_dxrelu", {2, 6, 5, 48}, 3, 3, 40, SAME, 1, 1, 1, 1, RELU, true, true,
       true, 0.3f, 32, 1e-3, RELU},
  };
  // clang-format on
  std::vector<OpCase> cases;
  for (const ConvSpec& s : conv) cases.push_back(conv_case(s, false));
  return cases;
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
