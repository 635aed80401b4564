// Builtin operator codes of the circle/tflite format and their names (which cltrain op a code
// loads as is its descriptor's, host/ops/op_descriptor.h).
#pragma once

#include <cstdint>
#include <string>

namespace cltrain {

// Builtin codes with a meaning of their own in the loader.
constexpr int32_t kBuiltinCustom = 32;
constexpr int32_t kBuiltinShape = 77;
constexpr int32_t kBuiltinPlaceholderForGreaterOpCodes = 127;

// Name of a BuiltinOperator code ("CONV_2D"), or nullptr if the code is unknown.
const char* builtin_op_name(int32_t code);

// "CONV_2D (builtin 3)", or "builtin 999" for an unknown code.
std::string describe_builtin(int32_t code);

}  // namespace cltrain
