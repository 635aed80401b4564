// Graph-level checks of a loaded model, and the message helpers the model code shares.
#include <algorithm>
#include <cstdint>
#include <cstring>

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

std::string activation_str(int32_t act) {
  switch (act) {
    case CLTRAIN_ACT_NONE: return "NONE";
    case CLTRAIN_ACT_RELU: return "RELU";
    case CLTRAIN_ACT_RELU_N1_TO_1: return "RELU_N1_TO_1";
    case CLTRAIN_ACT_RELU6: return "RELU6";
    case CLTRAIN_ACT_TANH: return "TANH";
    case 5: return "SIGN_BIT";
    default: return "activation " + std::to_string(act);
  }
}

int64_t window_out_size(int64_t in, int64_t filter, int64_t stride, int64_t dilation, int32_t padding) {
  if (stride < 1 || filter < 1 || dilation < 1) return -1;
  if (padding == CLTRAIN_PADDING_SAME) return (in + stride - 1) / stride;
  if (padding != CLTRAIN_PADDING_VALID) return -1;
  const int64_t span = in - (filter - 1) * dilation;  // filter, dilation < 2^31: no overflow
  return span <= 0 ? 0 : (span + stride - 1) / stride;
}

namespace {

struct Arity {
  size_t min_inputs, max_inputs, outputs;
  size_t optional_from;  // inputs from this position on may be -1
};

Arity arity(int32_t op) {
  switch (op) {
    case CLTRAIN_OP_FULLY_CONNECTED:
    case CLTRAIN_OP_CONV_2D:
    case CLTRAIN_OP_DEPTHWISE_CONV_2D: return {2, 3, 1, 2};  // x, W, optional bias
    case CLTRAIN_OP_RESHAPE: return {1, 2, 1, 1};            // x, optional shape operand
    case CLTRAIN_OP_MEAN:                                    // x, axes
    case CLTRAIN_OP_PAD:                                     // x, paddings
    case CLTRAIN_OP_ADD:
    case CLTRAIN_OP_SUB:
    case CLTRAIN_OP_MUL:
    case CLTRAIN_OP_DIV: return {2, 2, 1, 2};
    case CLTRAIN_OP_RELU:
    case CLTRAIN_OP_RELU6:
    case CLTRAIN_OP_TANH:
    case CLTRAIN_OP_LOGISTIC:
    case CLTRAIN_OP_SOFTMAX:
    case CLTRAIN_OP_MAX_POOL_2D:
    case CLTRAIN_OP_AVERAGE_POOL_2D: return {1, 1, 1, 1};
    // Its backward writes one gradient per input, at most CLTRAIN_MAX_STEP_IO.
    case CLTRAIN_OP_CONCATENATION: return {1, CLTRAIN_MAX_STEP_IO, 1, CLTRAIN_MAX_STEP_IO};
    default: return {0, CLTRAIN_MAX_STEP_IO, 1, 0};
  }
}

// The constant int32 operand an op reads at position 1 ("shape", "axes", "paddings"), or nullptr.
const char* constant_operand(int32_t op) {
  switch (op) {
    case CLTRAIN_OP_RESHAPE: return "shape";
    case CLTRAIN_OP_MEAN: return "axes";
    case CLTRAIN_OP_PAD: return "paddings";
    default: return nullptr;
  }
}

std::vector<int32_t> int32_values(const Tensor& t) {
  std::vector<int32_t> v(t.data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

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
      if (x.dtype != CLTRAIN_FLOAT32)
        fail(what_, "subgraph input " + std::to_string(k) + ": " + tensor_label(m_, t) + " is not float32");
      state[static_cast<size_t>(t)] = kInput;
    }
    for (size_t i = 0; i < m_.operators.size(); ++i) {
      Operator& op = m_.operators[i];
      label_ = operator_label(m_, i);
      check_arity(op);
      if (const char* what = constant_operand(op.op)) {
        if (op.inputs.size() > 1 && op.inputs[1] >= 0) {
          const Tensor& s = in(op, 1);
          if (!s.is_constant() || s.dtype != CLTRAIN_INT32)
            bad(std::string(what) + " operand " + tensor_label(m_, op.inputs[1]) + " is not a constant int32 tensor" +
                (s.is_constant() ? "" : std::string(" (computed ") + what + " are not supported)"));
        }
      }
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
    // Any other int32 tensor is one no operator reads as a constant operand.
    for (size_t t = 0; t < m_.tensors.size(); ++t)
      if (m_.tensors[t].dtype == CLTRAIN_INT32 && !m_.tensors[t].is_constant())
        fail(what_, tensor_label(m_, static_cast<int32_t>(t)) +
                        ": int32 tensors are supported only as constant operands");
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

  // The declared output shape must be the one the op computes.
  void expect_output(const Operator& op, const std::vector<int64_t>& computed) const {
    std::vector<int32_t> c;
    bool fits = true;
    for (int64_t d : computed) {
      fits = fits && d >= 1 && d <= INT32_MAX;
      c.push_back(static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(d, 0), INT32_MAX)));
    }
    if (!fits) bad("computed output shape is out of range");
    if (out(op, 0).shape != c)
      bad("output shape " + shape_str(out(op, 0).shape) + " differs from the computed " + shape_str(c));
  }

  void check_activation(const Operator& op, bool only_none) const {
    const int32_t a = op.params.activation;
    if (a < CLTRAIN_ACT_NONE || a > CLTRAIN_ACT_TANH)
      bad("fused activation " + std::to_string(a) + " is not supported");
    if (only_none && a != CLTRAIN_ACT_NONE)
      bad("fused activation " + activation_str(a) + " is not supported (only NONE)");
  }

  void require_rank4(const Tensor& x, const char* what, const char* layout) const {
    if (x.shape.size() != 4) bad(std::string(what) + " shape " + shape_str(x.shape) + " is not " + layout);
  }

  // Output spatial size of a window op along one axis; one line if the window does not fit.
  int64_t window(const Operator& op, int axis, int64_t filter, int64_t stride, int64_t dilation) const {
    const cltrain_op_params& p = op.params;
    if (p.padding != CLTRAIN_PADDING_SAME && p.padding != CLTRAIN_PADDING_VALID)
      bad("padding " + std::to_string(p.padding) + " is not SAME (0) or VALID (1)");
    const char* hw = axis == 1 ? "height" : "width";
    if (stride < 1) bad(std::string("stride ") + hw + " " + std::to_string(stride) + " is less than 1");
    if (dilation < 1) bad(std::string("dilation ") + hw + " " + std::to_string(dilation) + " is less than 1");
    if (filter < 1) bad(std::string("filter ") + hw + " " + std::to_string(filter) + " is less than 1");
    const int64_t in_size = in(op, 0).shape[static_cast<size_t>(axis)];
    const int64_t n = window_out_size(in_size, filter, stride, dilation, p.padding);
    if (n < 1)
      bad(std::string("filter ") + hw + " " + std::to_string(filter) +
          (dilation > 1 ? " (dilation " + std::to_string(dilation) + ")" : "") + " does not fit input " + hw +
          " " + std::to_string(in_size) + " with VALID padding");
    return n;
  }

  void check_conv(Operator& op) {
    const bool depthwise = op.op == CLTRAIN_OP_DEPTHWISE_CONV_2D;
    require_float(op, 0);
    require_float(op, 1);
    const Tensor& x = in(op, 0);
    const Tensor& w = in(op, 1);
    require_rank4(x, "input", "[N,H,W,C]");
    require_rank4(w, "weights", depthwise ? "[1,KH,KW,C*M]" : "[O,KH,KW,I]");
    const int64_t channels = x.shape[3];
    int64_t out_channels;
    if (depthwise) {
      if (w.shape[0] != 1 || channels < 1 || w.shape[3] % channels != 0)
        bad("weights shape " + shape_str(w.shape) + " is not [1,KH,KW,C*M] for input " + shape_str(x.shape));
      const int32_t m = static_cast<int32_t>(w.shape[3] / channels);
      if (op.params.depth_multiplier != 0 && op.params.depth_multiplier != m)
        bad("depth multiplier " + std::to_string(op.params.depth_multiplier) + " does not match weights " +
            shape_str(w.shape) + " for input " + shape_str(x.shape));
      op.params.depth_multiplier = m;
      out_channels = w.shape[3];
    } else {
      if (w.shape[3] != channels)
        bad("weights shape " + shape_str(w.shape) + " does not fit input " + shape_str(x.shape) +
            " (weights are [O,KH,KW,I] with I the input's channels)");
      out_channels = w.shape[0];
    }
    if (op.inputs.size() > 2 && op.inputs[2] >= 0) {
      require_float(op, 2);
      const Tensor& b = in(op, 2);
      if (b.shape.size() != 1 || b.shape[0] != out_channels)
        bad("bias shape " + shape_str(b.shape) + " is not [" + std::to_string(out_channels) + "]");
    }
    check_activation(op, false);
    const int64_t oh = window(op, 1, w.shape[1], op.params.stride_h, op.params.dilation_h);
    const int64_t ow = window(op, 2, w.shape[2], op.params.stride_w, op.params.dilation_w);
    expect_output(op, {x.shape[0], oh, ow, out_channels});
  }

  void check_pool(const Operator& op) const {
    require_float(op, 0);
    const Tensor& x = in(op, 0);
    require_rank4(x, "input", "[N,H,W,C]");
    check_activation(op, true);
    const int64_t oh = window(op, 1, op.params.filter_h, op.params.stride_h, 1);
    const int64_t ow = window(op, 2, op.params.filter_w, op.params.stride_w, 1);
    expect_output(op, {x.shape[0], oh, ow, x.shape[3]});
  }

  void check_mean(Operator& op) {
    require_float(op, 0);
    const Tensor& x = in(op, 0);
    const Tensor& a = in(op, 1);
    if (a.shape.size() > 1) bad("axes operand shape " + shape_str(a.shape) + " is not a vector");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int32_t mask = 0;
    for (int32_t v : int32_values(a)) {
      if (v < -rank || v >= rank)
        bad("axis " + std::to_string(v) + " is out of range for input " + shape_str(x.shape));
      mask |= 1 << (v < 0 ? v + rank : v);
    }
    op.params.axes_mask = mask;
    op.params.keep_dims = op.params.keep_dims != 0;
    std::vector<int64_t> y;
    for (int64_t d = 0; d < rank; ++d) {
      if (!(mask & (1 << d))) y.push_back(x.shape[static_cast<size_t>(d)]);
      else if (op.params.keep_dims) y.push_back(1);
    }
    expect_output(op, y);
  }

  void check_pad(Operator& op) {
    require_float(op, 0);
    const Tensor& x = in(op, 0);
    const Tensor& p = in(op, 1);
    const int32_t rank = static_cast<int32_t>(x.shape.size());
    if (p.shape != std::vector<int32_t>{rank, 2})
      bad("paddings shape " + shape_str(p.shape) + " is not [" + std::to_string(rank) + ",2] for input " +
          shape_str(x.shape));
    const std::vector<int32_t> v = int32_values(p);
    if (v.size() != 2 * static_cast<size_t>(rank)) bad("paddings operand has " + std::to_string(v.size()) + " values");
    std::vector<int64_t> y;
    for (int32_t d = 0; d < CLTRAIN_MAX_RANK; ++d) {
      op.params.pad_before[d] = op.params.pad_after[d] = 0;
      if (d >= rank) continue;
      const int32_t before = v[2 * static_cast<size_t>(d)], after = v[2 * static_cast<size_t>(d) + 1];
      if (before < 0 || after < 0)
        bad("paddings of axis " + std::to_string(d) + " (" + std::to_string(before) + "," + std::to_string(after) +
            ") are negative");
      op.params.pad_before[d] = before;
      op.params.pad_after[d] = after;
      y.push_back(int64_t{x.shape[static_cast<size_t>(d)]} + before + after);
    }
    expect_output(op, y);
  }

  void check_binary(const Operator& op) const {
    require_float(op, 0);
    require_float(op, 1);
    check_activation(op, false);
    const std::vector<int32_t>& a = in(op, 0).shape;
    const std::vector<int32_t>& b = in(op, 1).shape;
    if (a.size() != b.size())
      bad("operand shapes " + shape_str(a) + " and " + shape_str(b) + " differ in rank (broadcasting needs equal ranks)");
    std::vector<int64_t> y;
    for (size_t d = 0; d < a.size(); ++d) {
      if (a[d] != b[d] && a[d] != 1 && b[d] != 1)
        bad("cannot broadcast " + shape_str(a) + " with " + shape_str(b) + " (dimension " + std::to_string(d) +
            ": " + std::to_string(a[d]) + " vs " + std::to_string(b[d]) + "; each must be equal or 1)");
      y.push_back(std::max(a[d], b[d]));
    }
    expect_output(op, y);
  }

  void check_concat(Operator& op) {
    check_activation(op, true);
    const size_t rank = in(op, 0).shape.size();
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      require_float(op, k);
      if (in(op, k).shape.size() != rank)
        bad("input " + std::to_string(k) + " shape " + shape_str(in(op, k).shape) + " differs in rank from input 0 " +
            shape_str(in(op, 0).shape));
    }
    if (rank == 0) bad("inputs are scalars");
    const int64_t axis = op.params.axis;
    if (axis < -static_cast<int64_t>(rank) || axis >= static_cast<int64_t>(rank))
      bad("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
    op.params.axis = static_cast<int32_t>(ax);
    std::vector<int64_t> y(in(op, 0).shape.begin(), in(op, 0).shape.end());
    y[ax] = 0;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const std::vector<int32_t>& s = in(op, k).shape;
      for (size_t d = 0; d < rank; ++d)
        if (d != ax && s[d] != y[d])
          bad("input " + std::to_string(k) + " shape " + shape_str(s) + " does not fit input 0 " +
              shape_str(in(op, 0).shape) + " (all dimensions but axis " + std::to_string(ax) + " must be equal)");
      y[ax] += s[ax];
    }
    expect_output(op, y);
  }

  // Shapes and types each op's kernels rely on.
  void check_operands(Operator& op) {
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
        check_activation(op, false);
        break;
      }
      case CLTRAIN_OP_RESHAPE:
        require_float(op, 0);
        if (in(op, 0).elements() != out(op, 0).elements())
          bad("cannot reshape " + shape_str(in(op, 0).shape) + " to " + shape_str(out(op, 0).shape));
        if (op.inputs.size() > 1 && op.inputs[1] >= 0) {
          if (in(op, 1).shape.size() != 1)
            bad("shape operand " + tensor_label(m_, op.inputs[1]) + " is not a constant int32 vector");
          // Each entry is the output's dimension, or -1 (inferred) once.
          const std::vector<int32_t> target = int32_values(in(op, 1));
          const std::vector<int32_t>& y = out(op, 0).shape;
          bool ok = target.size() == y.size() && std::count(target.begin(), target.end(), -1) <= 1;
          for (size_t d = 0; ok && d < y.size(); ++d) ok = target[d] == -1 || target[d] == y[d];
          if (!ok) bad("shape operand " + shape_str(target) + " does not match output shape " + shape_str(y));
        }
        break;
      case CLTRAIN_OP_RELU:
      case CLTRAIN_OP_RELU6:
      case CLTRAIN_OP_TANH:
      case CLTRAIN_OP_LOGISTIC:
        require_float(op, 0);
        same_shape(op);
        break;
      case CLTRAIN_OP_SOFTMAX:
        require_float(op, 0);
        if (in(op, 0).shape.empty()) bad("input is a scalar");
        same_shape(op);
        break;
      case CLTRAIN_OP_CONV_2D:
      case CLTRAIN_OP_DEPTHWISE_CONV_2D: check_conv(op); break;
      case CLTRAIN_OP_MAX_POOL_2D:
      case CLTRAIN_OP_AVERAGE_POOL_2D: check_pool(op); break;
      case CLTRAIN_OP_MEAN: check_mean(op); break;
      case CLTRAIN_OP_PAD: check_pad(op); break;
      case CLTRAIN_OP_ADD:
      case CLTRAIN_OP_SUB:
      case CLTRAIN_OP_MUL:
      case CLTRAIN_OP_DIV: check_binary(op); break;
      case CLTRAIN_OP_CONCATENATION: check_concat(op); break;
      default: break;
    }
  }

  Model& m_;
  const std::string& what_;
  std::string label_;
};

}  // namespace

void check_graph(Model& m, const std::string& what) { Checker(m, what).run(); }

}  // namespace detail
}  // namespace cltrain
