#include "graph/builtin_names.h"

namespace cltrain {
namespace {

// BuiltinOperator names, indexed by code, as the format defines them.
// clang-format off
const char* const kNames[] = {
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D",        // 0
    "DEPTH_TO_SPACE", "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED",    // 5
    "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION",
    "LOGISTIC",                                                                          // 14
    "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU",                              // 15
    "RELU_N1_TO_1", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN",                        // 20
    "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH", "CONCAT_EMBEDDINGS",                    // 25
    "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",                     // 30
    "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND",
    "TRANSPOSE",                                                                         // 39
    "MEAN", "SUB", "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM",                     // 40
    "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN", "EXP", "TOPK_V2", "SPLIT",            // 45
    "LOG_SOFTMAX", "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU",           // 50
    "MAXIMUM", "ARG_MAX", "MINIMUM", "LESS", "NEG",                                      // 55
    "PADV2", "GREATER", "GREATER_EQUAL", "LESS_EQUAL", "SELECT",                         // 60
    "SLICE", "SIN", "TRANSPOSE_CONV", "SPARSE_TO_DENSE", "TILE",                         // 65
    "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG", "SUM",                                   // 70
    "SQRT", "RSQRT", "SHAPE", "POW", "ARG_MIN",                                          // 75
    "FAKE_QUANT", "REDUCE_PROD", "REDUCE_MAX", "PACK", "LOGICAL_OR",                     // 80
    "ONE_HOT", "LOGICAL_AND", "LOGICAL_NOT", "UNPACK", "REDUCE_MIN",                     // 85
    "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL",                           // 90
    "FLOOR_MOD", "RANGE", "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE", // 95
    "MIRROR_PAD", "ABS", "SPLIT_V", "UNIQUE", "CEIL",                                    // 100
    "REVERSE_V2", "ADD_N", "GATHER_ND", "COS", "WHERE",                                  // 105
    "RANK", "ELU", "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE",                        // 110
    "MATRIX_SET_DIAG", "ROUND", "HARD_SWISH", "IF", "WHILE",                             // 115
    "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "SCATTER_ND", "SELECT_V2",
    "DENSIFY",                                                                           // 124
    "SEGMENT_SUM", "BATCH_MATMUL", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM",
    "CALL_ONCE",                                                                         // 129
    "BROADCAST_TO", "RFFT2D", "CONV_3D", "IMAG", "REAL",                                 // 130
    "COMPLEX_ABS", "HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE",  // 135
    "REDUCE_ALL", "CONV_3D_TRANSPOSE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", // 140
    "BROADCAST_ARGS", "RANDOM_STANDARD_NORMAL", "BUCKETIZE", "RANDOM_UNIFORM",
    "MULTINOMIAL",                                                                       // 149
    "GELU", "DYNAMIC_UPDATE_SLICE", "RELU_0_TO_1", "UNSORTED_SEGMENT_PROD",
    "UNSORTED_SEGMENT_MAX",                                                              // 154
    "UNSORTED_SEGMENT_SUM", "ATAN2", "UNSORTED_SEGMENT_MIN", "SIGN", "BITCAST",          // 155
    "BITWISE_XOR", "RIGHT_SHIFT",                                                        // 160
};
// clang-format on
constexpr int32_t kNumNames = static_cast<int32_t>(sizeof(kNames) / sizeof(kNames[0]));
static_assert(kNumNames == 162, "builtin name table must end at RIGHT_SHIFT = 161");

// circle's own operators have negative codes.
const char* circle_name(int32_t code) {
  switch (code) {
    case -2: return "INSTANCE_NORM";
    case -3: return "BCQ_FULLY_CONNECTED";
    case -4: return "BCQ_GATHER";
    case -5: return "GRU";
    case -6: return "RMS_NORM";
    default: return nullptr;
  }
}

}  // namespace

const char* builtin_op_name(int32_t code) {
  if (code >= 0 && code < kNumNames) return kNames[code];
  return circle_name(code);
}

std::string describe_builtin(int32_t code) {
  const char* name = builtin_op_name(code);
  std::string s = "builtin " + std::to_string(code);
  return name ? std::string(name) + " (" + s + ")" : s;
}

}  // namespace cltrain
