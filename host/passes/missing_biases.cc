// Pass missing-biases (setup): a trained zero bias where the converter dropped one.
#include "passes/model_edits.h"

#include <map>

#include "ops/op_descriptor.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {

int32_t count_missing_biases(const Model& m) {
  int32_t n = 0;
  for (const Operator& op : m.operators) {
    const OpDescriptor& d = *find_op(op.op);
    const size_t slot = static_cast<size_t>(d.bias_slot);
    if (d.bias_slot >= 0 && (op.inputs.size() <= slot || op.inputs[slot] < 0)) ++n;
  }
  return n;
}

int32_t add_missing_biases(Model& m) {
  int32_t n = 0;
  std::map<int32_t, int32_t> bias_of_kernel;  // operators sharing a kernel share the new bias
  for (Operator& op : m.operators) {
    const OpDescriptor& d = *find_op(op.op);
    const size_t slot = static_cast<size_t>(d.bias_slot);
    if (d.bias_slot < 0 || (op.inputs.size() > slot && op.inputs[slot] >= 0)) continue;
    const int32_t kernel = op.inputs.at(1);
    auto it = bias_of_kernel.find(kernel);
    int32_t bias;
    if (it != bias_of_kernel.end()) {
      bias = it->second;
    } else {
      const Tensor& y = m.tensors[static_cast<size_t>(op.outputs.at(0))];
      Tensor b;
      b.name = m.tensors[static_cast<size_t>(kernel)].name + "/added_bias";
      b.shape = {y.shape.empty() ? 1 : y.shape.back()};
      b.dtype = CLTRAIN_FLOAT32;
      b.data.assign(static_cast<size_t>(b.shape[0]) * 4, 0);
      bias = append_tensor(m, std::move(b));
      bias_of_kernel[kernel] = bias;
    }
    if (op.inputs.size() <= slot) op.inputs.resize(slot + 1, -1);
    op.inputs[slot] = bias;
    ++n;
  }
  return n;
}

std::string missing_biases_pass(PassInput& in) {
  if (!in.choices->add_missing_biases) {
    if (const int32_t n = count_missing_biases(*in.m))
      in.results->warnings.push_back(
          std::to_string(n) + " FullyConnected/Conv2D/DepthwiseConv2D operator" + (n == 1 ? " has" : "s have") +
          " no bias (converters drop zero biases), so " + (n == 1 ? "it trains" : "they train") +
          " without one; add_missing_biases (--add_missing_biases) gives them a trained zero bias");
    return "";
  }
  const int32_t n = add_missing_biases(*in.m);
  return n ? "added " + std::to_string(n) + " zero bias" + (n == 1 ? "" : "es") : "";
}

}  // namespace cltrain
