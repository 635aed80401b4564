// Pass activation-fusion (training): a standalone RELU, RELU6 or TANH whose input is computed by
// an operator that fuses activations (FullyConnected, Conv2D, DepthwiseConv2D, ADD, SUB, MUL,
// DIV) with none, and read by it alone, becomes that operator's fused activation: one forward and
// one backward step fewer. TensorFlow's converter fuses most of these itself; it leaves the TANH
// of a Keras SimpleRNN's step (ADD, TANH), of GRU candidates the gru-cells pass does not take
// (reset_after=False, litert-torch's nn.GRU) and of the state of LSTMs the lstm-cells pass does
// not take. The fused activation computes with the same functions (kernels/common.cl clt_act,
// the CPU's apply_activation) and the same derivative from y, so the losses stay bitwise as they
// were. Runs after the cell passes, which read the standalone TANHs of their patterns.
#include <vector>

#include "ops/op_descriptor.h"
#include "passes/passes.h"

namespace cltrain {

std::string activation_fusion_pass(PassInput& in) {
  TrainingOps& t = *in.training;
  std::vector<Operator>& ops = t.ops;
  std::vector<int32_t> readers(t.model.tensors.size(), 0), producer(t.model.tensors.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (t.fused[i]) continue;
    for (int32_t x : ops[i].inputs)
      if (x >= 0) ++readers[static_cast<size_t>(x)];
    for (int32_t x : ops[i].outputs)
      if (x >= 0) producer[static_cast<size_t>(x)] = static_cast<int32_t>(i);
  }
  int32_t n = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operator& a = ops[i];
    if (t.fused[i] || a.inputs.size() != 1 || a.outputs.size() != 1) continue;
    const int32_t act = a.op == CLTRAIN_OP_RELU    ? CLTRAIN_ACT_RELU
                        : a.op == CLTRAIN_OP_RELU6 ? CLTRAIN_ACT_RELU6
                        : a.op == CLTRAIN_OP_TANH  ? CLTRAIN_ACT_TANH
                                                   : CLTRAIN_ACT_NONE;
    const int32_t x = a.inputs[0];
    if (act == CLTRAIN_ACT_NONE || x < 0 || x == t.prediction || readers[static_cast<size_t>(x)] != 1) continue;
    const int32_t p = producer[static_cast<size_t>(x)];
    if (p < 0) continue;
    Operator& prod = ops[static_cast<size_t>(p)];
    if (find_op(prod.op)->fused_activation != FusedActivation::kAny || prod.params.activation != CLTRAIN_ACT_NONE ||
        prod.outputs.size() != 1 || prod.outputs[0] != x)
      continue;
    prod.params.activation = act;
    prod.outputs[0] = a.outputs[0];
    producer[static_cast<size_t>(a.outputs[0])] = p;
    t.fused[i] = true;
    t.folded_into[static_cast<int32_t>(i)] = p;
    ++n;
  }
  return n ? "fused " + std::to_string(n) + " standalone activation" + (n == 1 ? "" : "s") +
                 " into the operator before " + (n == 1 ? "it" : "each")
           : "";
}

}  // namespace cltrain
