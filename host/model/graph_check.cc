// Graph-level checks of a loaded model.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "graph/labels.h"
#include "model/graph_check.h"
#include "ops/op_descriptor.h"

namespace cltrain {

using namespace graph;

namespace {

class Checker {
 public:
  Checker(Model& m, const std::string& what) : m_(m), what_(what) {}

  void run() {
    std::vector<int> state(m_.tensors.size(), kUnset);
    for (size_t k = 0; k < m_.inputs.size(); ++k) {
      const int32_t t = m_.inputs[k];
      const Tensor& x = m_.tensors[static_cast<size_t>(t)];
      if (x.is_constant())
        fail(what_, "subgraph input " + std::to_string(k) + ": " + tensor_label(m_, t) + " is constant");
      if (x.dtype != CLTRAIN_FLOAT32 && x.dtype != CLTRAIN_INT32)
        fail(what_, "subgraph input " + std::to_string(k) + ": " + tensor_label(m_, t) + " is not float32 or int32");
      state[static_cast<size_t>(t)] = kInput;
    }
    for (size_t i = 0; i < m_.operators.size(); ++i) {
      Operator& op = m_.operators[i];
      label_ = operator_label(m_, i);
      check_slots(m_, i, what_);
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        const int32_t t = op.inputs[k];
        if (t < 0) continue;
        if (!m_.tensors[static_cast<size_t>(t)].is_constant() && state[static_cast<size_t>(t)] == kUnset)
          fail(what_, label_ + ": input " + std::to_string(k) + " " + tensor_label(m_, t) +
                          " is read before any operator computes it");
      }
      for (size_t k = 0; k < op.outputs.size(); ++k) {
        const int32_t t = op.outputs[k];
        const char* why = m_.tensors[static_cast<size_t>(t)].is_constant() ? "is constant"
                          : state[static_cast<size_t>(t)] == kInput        ? "is a subgraph input"
                          : state[static_cast<size_t>(t)] == kComputed     ? "is computed twice"
                                                                           : nullptr;
        if (why) fail(what_, label_ + ": output " + std::to_string(k) + " " + tensor_label(m_, t) + " " + why);
        if (m_.tensors[static_cast<size_t>(t)].dtype != CLTRAIN_FLOAT32)
          fail(what_, label_ + ": output " + tensor_label(m_, t) + " is not float32");
        state[static_cast<size_t>(t)] = kComputed;
      }
      // An output without a shape (a converter's placeholder, loader.cc) takes the computed one.
      bool open = !op.outputs.empty();
      for (int32_t t : op.outputs) open = open && m_.tensors[static_cast<size_t>(t)].shape.empty();
      check_operands(m_, i, what_, open);
    }
    for (size_t k = 0; k < m_.outputs.size(); ++k) {
      const int32_t t = m_.outputs[k];
      if (state[static_cast<size_t>(t)] != kComputed)
        fail(what_,
             "subgraph output " + std::to_string(k) + ": " + tensor_label(m_, t) + " is not computed by any operator");
    }
    // An int32 tensor computed at run time (the model's input: token ids) goes only where an op
    // takes one (GATHER's ids); constant ones are operands the checks above turned into params.
    for (size_t i = 0; i < m_.operators.size(); ++i) {
      const Operator& op = m_.operators[i];
      const OpDescriptor& d = *find_op(op.op);
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        const int32_t t = op.inputs[k];
        if (t >= 0 && m_.tensors[static_cast<size_t>(t)].dtype == CLTRAIN_UINT8)
          fail(what_, operator_label(m_, i) + ": input " + std::to_string(k) + " " + tensor_label(m_, t) +
                          ": bool tensors are supported only in the index guard of an embedding");
        if (t < 0 || m_.tensors[static_cast<size_t>(t)].dtype != CLTRAIN_INT32 ||
            m_.tensors[static_cast<size_t>(t)].is_constant() || (k < 32 && (d.int32_inputs >> k & 1u)))
          continue;
        fail(what_, operator_label(m_, i) + ": input " + std::to_string(k) + " " + tensor_label(m_, t) +
                        ": int32 tensors are supported only as constant operands and as ids");
      }
    }
    for (size_t k = 0; k < m_.outputs.size(); ++k)
      if (m_.tensors[static_cast<size_t>(m_.outputs[k])].dtype != CLTRAIN_FLOAT32)
        fail(what_,
             "subgraph output " + std::to_string(k) + ": " + tensor_label(m_, m_.outputs[k]) + " is not float32");
  }

 private:
  enum { kUnset = 0, kInput = 1, kComputed = 2 };

  Model& m_;
  const std::string& what_;
  std::string label_;
};

}  // namespace

void check_graph(Model& m, const std::string& what) { Checker(m, what).run(); }

}  // namespace cltrain
