// Pass compares (import): TensorFlow's converter writes the Keras activations that choose per
// element (selu, hard_shrink, soft_shrink, sparse_plus: tf.where) as comparisons of floats into
// bool tensors, ZEROS_LIKE and SELECT_V2:
//   comparisons  GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, EQUAL, NOT_EQUAL of float operands
//                give a float 0/1 mask in place of the bool tensor, and load as their op (no
//                gradient flows through a comparison); the selects pass then takes the SELECT_V2
//                that reads the mask.
//   zeros        ZEROS_LIKE(x) of a float x becomes FILL(x's shape, 0): a tensor that needs no
//                gradient, its dims carrying the batch.
//   signs        SIGN(x) of a float x (litert-torch's softshrink) becomes GREATER(x, 0) -
//                LESS(x, 0): 1, -1 or 0, exact, and no gradient through it, as PyTorch's.
// Comparisons of int32 tensors (an embedding's index guard, an RNN's step counter) are left to
// the passes that know them.
#include <cstring>
#include <string>
#include <vector>

#include "cltrain/cltrain_ops.h"
#include "passes/file_links.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {
namespace {

constexpr int32_t kLess = 58, kGreater = 61, kGreaterEqual = 62, kLessEqual = 63, kEqual = 71, kNotEqual = 72,
                  kZerosLike = 93, kSign = 158;

bool is_comparison(int32_t code) {
  return code == kLess || code == kGreater || code == kGreaterEqual || code == kLessEqual || code == kEqual ||
         code == kNotEqual;
}

bool float_operand(const Model& m, int32_t t) {
  return t >= 0 && m.tensors[static_cast<size_t>(t)].dtype == CLTRAIN_FLOAT32;
}

std::string count_of(int n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

}  // namespace

std::string compares_pass(PassInput& in) {
  Model& m = *in.m;
  int masks = 0, zeros = 0, signs = 0;
  int32_t zero = -1;  // a float 0 for the signs' comparisons
  for (FileOperator& f : *in.file) {
    if (f.fate != FileOperator::Fate::kPending || f.outputs.size() != 1 || f.outputs[0] < 0) continue;
    const int32_t y = f.outputs[0];
    if (is_comparison(f.code) && f.inputs.size() == 2 && float_operand(m, f.inputs[0]) &&
        float_operand(m, f.inputs[1]) && m.tensors[static_cast<size_t>(y)].dtype == CLTRAIN_UINT8) {
      m.tensors[static_cast<size_t>(y)].dtype = CLTRAIN_FLOAT32;
      ++masks;
    } else if (f.code == kZerosLike && f.inputs.size() == 1 && float_operand(m, f.inputs[0]) && float_operand(m, y)) {
      const Tensor& x = m.tensors[static_cast<size_t>(f.inputs[0])];
      if (x.shape.empty()) continue;  // a scalar: FILL needs dims
      Tensor dims;
      dims.name = m.tensors[static_cast<size_t>(y)].name + "/dims";
      dims.shape = {static_cast<int32_t>(x.shape.size())};
      dims.dtype = CLTRAIN_INT32;
      dims.data.resize(x.shape.size() * 4);
      std::memcpy(dims.data.data(), x.shape.data(), dims.data.size());
      Tensor value;
      value.name = m.tensors[static_cast<size_t>(y)].name + "/value";
      value.dtype = CLTRAIN_FLOAT32;
      value.data.assign(4, 0);  // 0.0f
      const int32_t d = append_tensor(m, std::move(dims)), v = append_tensor(m, std::move(value));
      f.lowered = {part_of(f, CLTRAIN_OP_FILL, {d, v}, y)};
      f.fate = FileOperator::Fate::kLowered;
      ++zeros;
    } else if (f.code == kSign && f.inputs.size() == 1 && float_operand(m, f.inputs[0]) && float_operand(m, y) &&
               !m.tensors[static_cast<size_t>(y)].shape.empty()) {
      if (zero < 0) {
        Tensor z;
        z.name = "sign/zero";
        z.shape = {1};
        z.dtype = CLTRAIN_FLOAT32;
        z.data.assign(4, 0);  // 0.0f
        zero = append_tensor(m, std::move(z));
        m.fixed_constants.push_back(zero);
      }
      const std::string name = m.tensors[static_cast<size_t>(y)].name;
      const std::vector<int32_t> shape = m.tensors[static_cast<size_t>(y)].shape;
      const auto mask = [&](const char* what) {
        Tensor t;
        t.name = name + what;
        t.shape = shape;
        t.dtype = CLTRAIN_FLOAT32;
        return append_tensor(m, std::move(t));
      };
      const int32_t above = mask("/above"), below = mask("/below"), x = f.inputs[0];
      f.lowered = {part_of(f, CLTRAIN_OP_GREATER, {x, zero}, above), part_of(f, CLTRAIN_OP_LESS, {x, zero}, below),
                   part_of(f, CLTRAIN_OP_SUB, {above, below}, y)};
      f.fate = FileOperator::Fate::kLowered;
      ++signs;
    }
  }
  std::string log;
  if (masks) log = "computed " + count_of(masks, "comparison") + " of floats as 0/1 masks";
  if (zeros) log += (log.empty() ? "loaded " : ", loaded ") + count_of(zeros, "ZEROS_LIKE") + " as FILL with 0";
  if (signs)
    log += (log.empty() ? "loaded " : ", loaded ") + count_of(signs, "SIGN") + " as GREATER(x, 0) - LESS(x, 0)";
  return log;
}

}  // namespace cltrain
