// Graph-level checks of a loaded model, and the message helpers the model code shares.
#include <algorithm>

#include "model/model_internal.h"

namespace cltrain {
namespace detail {

void fail(const std::string& what, const std::string& msg) { throw ModelError(what + ": " + msg); }

std::string printable(const std::string& s, size_t max_len) {
  std::string out;
  for (char c : s) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  return out;
}

std::string shape_str(const std::vector<int32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string tensor_label(const Model& m, int32_t t) {
  std::string s = "tensor " + std::to_string(t);
  if (t >= 0 && static_cast<size_t>(t) < m.tensors.size())
    s += " '" + printable(m.tensors[static_cast<size_t>(t)].name) + "'";
  return s;
}

std::string operator_label(const Model& m, size_t i) {
  return "operator " + std::to_string(i) + " (" + cltrain_op_name(m.operators[i].op) + ")";
}

namespace {

struct Arity {
  size_t min_inputs, max_inputs, outputs;
  size_t optional_from;  // inputs from this position on may be -1
};

Arity arity(int32_t op) {
  switch (op) {
    case CLTRAIN_OP_FULLY_CONNECTED: return {2, 3, 1, 2};  // x, W, optional bias
    case CLTRAIN_OP_RESHAPE: return {1, 2, 1, 1};          // x, optional shape operand
    case CLTRAIN_OP_RELU:
    case CLTRAIN_OP_SOFTMAX: return {1, 1, 1, 1};
    default: return {0, CLTRAIN_MAX_STEP_IO, 1, 0};
  }
}

class Checker {
 public:
  Checker(const Model& m, const std::string& what) : m_(m), what_(what) {}

  void run() {
    std::vector<int> state(m_.tensors.size(), kUnset);
    for (size_t k = 0; k < m_.inputs.size(); ++k) {
      const int32_t t = m_.inputs[k];
      const Tensor& x = m_.tensors[static_cast<size_t>(t)];
      if (x.is_constant())
        fail(what_, "subgraph input " + std::to_string(k) + ": " + tensor_label(m_, t) + " is constant");
      if (x.dtype != CLTRAIN_FLOAT32)
        fail(what_, "subgraph input " + std::to_string(k) + ": " + tensor_label(m_, t) + " is not float32");
      state[static_cast<size_t>(t)] = kInput;
    }
    for (size_t i = 0; i < m_.operators.size(); ++i) {
      const Operator& op = m_.operators[i];
      label_ = operator_label(m_, i);
      check_arity(op);
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
        if (why)
          fail(what_, label_ + ": output " + std::to_string(k) + " " + tensor_label(m_, t) + " " + why);
        if (m_.tensors[static_cast<size_t>(t)].dtype != CLTRAIN_FLOAT32)
          fail(what_, label_ + ": output " + tensor_label(m_, t) + " is not float32");
        state[static_cast<size_t>(t)] = kComputed;
      }
      check_operands(op);
    }
    for (size_t k = 0; k < m_.outputs.size(); ++k) {
      const int32_t t = m_.outputs[k];
      if (state[static_cast<size_t>(t)] != kComputed)
        fail(what_, "subgraph output " + std::to_string(k) + ": " + tensor_label(m_, t) +
                        " is not computed by any operator");
    }
  }

 private:
  enum { kUnset = 0, kInput = 1, kComputed = 2 };

  const Tensor& in(const Operator& op, size_t k) const {
    return m_.tensors[static_cast<size_t>(op.inputs[k])];
  }
  const Tensor& out(const Operator& op, size_t k) const {
    return m_.tensors[static_cast<size_t>(op.outputs[k])];
  }

  [[noreturn]] void bad(const std::string& msg) const { fail(what_, label_ + ": " + msg); }

  void check_arity(const Operator& op) const {
    const Arity a = arity(op.op);
    if (op.inputs.size() < a.min_inputs || op.inputs.size() > a.max_inputs)
      bad("has " + std::to_string(op.inputs.size()) + " inputs, expected " + std::to_string(a.min_inputs) +
          (a.max_inputs > a.min_inputs ? " to " + std::to_string(a.max_inputs) : ""));
    if (op.outputs.size() != a.outputs)
      bad("has " + std::to_string(op.outputs.size()) + " outputs, expected " + std::to_string(a.outputs));
    for (size_t k = 0; k < std::min(op.inputs.size(), a.optional_from); ++k)
      if (op.inputs[k] < 0) bad("input " + std::to_string(k) + " is required");
  }

  void require_float(const Operator& op, size_t k) const {
    if (in(op, k).dtype != CLTRAIN_FLOAT32)
      bad("input " + std::to_string(k) + " " + tensor_label(m_, op.inputs[k]) + " is not float32");
  }

  void same_shape(const Operator& op) const {
    if (in(op, 0).shape != out(op, 0).shape)
      bad("output shape " + shape_str(out(op, 0).shape) + " differs from input shape " +
          shape_str(in(op, 0).shape));
  }

  // Shapes and types each op's kernels rely on.
  void check_operands(const Operator& op) const {
    switch (op.op) {
      case CLTRAIN_OP_FULLY_CONNECTED: {
        require_float(op, 0);
        require_float(op, 1);
        const Tensor& x = in(op, 0);
        const Tensor& w = in(op, 1);
        if (w.shape.size() != 2) bad("weights shape " + shape_str(w.shape) + " is not [units, inputs]");
        const uint64_t units = static_cast<uint64_t>(w.shape[0]), k = static_cast<uint64_t>(w.shape[1]);
        if (x.elements() % k != 0)
          bad("input shape " + shape_str(x.shape) + " does not fit weights " + shape_str(w.shape));
        const Tensor& y = out(op, 0);
        if (y.shape.empty() || static_cast<uint64_t>(y.shape.back()) != units ||
            y.elements() != x.elements() / k * units)
          bad("output shape " + shape_str(y.shape) + " does not match input " + shape_str(x.shape) +
              " and weights " + shape_str(w.shape));
        if (op.inputs.size() > 2 && op.inputs[2] >= 0) {
          require_float(op, 2);
          if (in(op, 2).elements() != units || in(op, 2).shape.size() != 1)
            bad("bias shape " + shape_str(in(op, 2).shape) + " is not [" + std::to_string(units) + "]");
        }
        break;
      }
      case CLTRAIN_OP_RESHAPE:
        require_float(op, 0);
        if (in(op, 0).elements() != out(op, 0).elements())
          bad("cannot reshape " + shape_str(in(op, 0).shape) + " to " + shape_str(out(op, 0).shape));
        if (op.inputs.size() > 1 && op.inputs[1] >= 0) {
          const Tensor& s = in(op, 1);
          if (!s.is_constant() || s.dtype != CLTRAIN_INT32 || s.shape.size() != 1)
            bad("shape operand " + tensor_label(m_, op.inputs[1]) + " is not a constant int32 vector");
        }
        break;
      case CLTRAIN_OP_RELU:
        require_float(op, 0);
        same_shape(op);
        break;
      case CLTRAIN_OP_SOFTMAX:
        require_float(op, 0);
        if (in(op, 0).shape.empty()) bad("input is a scalar");
        same_shape(op);
        break;
      default: break;
    }
  }

  const Model& m_;
  const std::string& what_;
  std::string label_;
};

}  // namespace

void check_graph(const Model& m, const std::string& what) { Checker(m, what).run(); }

}  // namespace detail
}  // namespace cltrain
