// The one table of fused activations (cltrain_ops.h's CLTRAIN_ACT_*, the circle/tflite codes):
// what the graph check, the messages, the FLOP counts, the training graph and the storage choice
// know of each. A new activation is one row here (and its kernels in the backends).
#pragma once

#include <cstdint>

namespace cltrain {

struct Activation {
  int32_t code;             // CLTRAIN_ACT_* (the file's ActivationFunctionType)
  const char* name;         // as the file format names it ("RELU6")
  bool supported;           // cltrain trains it
  uint64_t forward_flops;   // per output element
  uint64_t backward_flops;  // per element of the derivative
  bool derivative_from_y;   // its derivative is a function of its output (a consumer may apply it)
  bool half_storage;        // its output and derivative may be stored as float16 (--storage fp16)
};

// The activation of a code, or nullptr for a code the format does not define.
const Activation* find_activation(int32_t code);

// Whether cltrain trains the activation of this code.
inline bool activation_supported(int32_t code) {
  const Activation* a = find_activation(code);
  return a && a->supported;
}

}  // namespace cltrain
