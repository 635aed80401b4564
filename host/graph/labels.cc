// One-line messages about a model's tensors and operators, and the window arithmetic the graph
// check and the op descriptors share.
#include "graph/labels.h"

#include "cltrain/cltrain_ops.h"
#include "graph/activations.h"

namespace cltrain {
namespace graph {

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
  const int32_t shown = m.operators[i].file_index >= 0 ? m.operators[i].file_index : static_cast<int32_t>(i);
  return "operator " + std::to_string(shown) + " (" + cltrain_op_name(m.operators[i].op) + ")";
}

std::string activation_str(int32_t act) {
  const Activation* a = find_activation(act);
  return a ? a->name : std::to_string(act);
}

int64_t window_out_size(int64_t in, int64_t filter, int64_t stride, int64_t dilation, int32_t padding) {
  if (stride < 1 || filter < 1 || dilation < 1) return -1;
  if (padding == CLTRAIN_PADDING_SAME) return (in + stride - 1) / stride;
  if (padding != CLTRAIN_PADDING_VALID) return -1;
  const int64_t span = in - (filter - 1) * dilation;  // filter, dilation < 2^31: no overflow
  return span <= 0 ? 0 : (span + stride - 1) / stride;
}

}  // namespace graph
}  // namespace cltrain
