#include "graph/activations.h"

#include <iterator>

#include "cltrain/cltrain_ops.h"

namespace cltrain {
namespace {

// TANH's derivative 1 - y^2 loses too much of y in float16: its tensors stay float32.
const Activation kActivations[] = {
    {CLTRAIN_ACT_NONE, "NONE", true, 0, 0, false, true},
    {CLTRAIN_ACT_RELU, "RELU", true, 1, 1, true, true},
    {CLTRAIN_ACT_RELU_N1_TO_1, "RELU_N1_TO_1", true, 2, 1, true, true},
    {CLTRAIN_ACT_RELU6, "RELU6", true, 2, 1, true, true},
    {CLTRAIN_ACT_TANH, "TANH", true, 5, 3, true, false},
    {5, "SIGN_BIT", false, 0, 0, false, false},
};

}  // namespace

const Activation* find_activation(int32_t code) {
  for (const Activation& a : kActivations)
    if (a.code == code) return &a;
  return nullptr;
}

}  // namespace cltrain
