// Builtin operator codes of the circle/tflite format: names, and the mapping to cltrain ops.
#pragma once

#include <cstdint>
#include <string>

namespace cltrain {

// Builtin codes with a meaning of their own in the loader.
constexpr int32_t kBuiltinCustom = 32;
constexpr int32_t kBuiltinPlaceholderForGreaterOpCodes = 127;

// Name of a BuiltinOperator code ("CONV_2D"), or nullptr if the code is unknown.
const char* builtin_op_name(int32_t code);

// "CONV_2D (builtin 3)", or "builtin 999" for an unknown code.
std::string describe_builtin(int32_t code);

// The cltrain_op (a model op of CLTRAIN_OP_LIST) a builtin code maps to, or -1.
int32_t builtin_to_op(int32_t code);

// The builtin code of a cltrain_op, or -1 if the op is not a model op of the format.
int32_t op_to_builtin(int32_t op);

}  // namespace cltrain
