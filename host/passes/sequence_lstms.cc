// Pass sequence-lstms (import): UNIDIRECTIONAL_SEQUENCE_LSTM, the fused LSTM TensorFlow's converter
// writes for a Keras LSTM with a fixed batch (tf_keras 2.x), loads as its cell graph over the
// steps, the gates as Keras computes them:
//   i = σ(x_t W_i + b_i + h U_i)   f = σ(x_t W_f + b_f + h U_f)   g = act(x_t W_c + b_c + h U_c)
//   o = σ(x_t W_o + b_o + h U_o)   c = f c + i g (clipped to ±cell_clip where set)   h = o act(c)
// each product a FullyConnected reading the file's own weight tensors (each shared by the steps,
// as the layer's are), x_t a SLICE of the sequence, the h of every step gathered by
// CONCATENATIONs into the [B, T, H] (or [T, B, H]) output. The state inputs are variable tensors
// in the file; each batch starts from zeros, as Keras's stateless LSTM does (the step-0 products
// of h and c are left out). All parts of the file's operator: export writes it back as it was,
// with the trained weights. Variants Keras's LSTM does not write (CIFG, peepholes, projection,
// layer normalisation) are refused in one line.
#include <cstring>
#include <string>
#include <vector>

#include "circle_generated.h"
#include "graph/graph.h"
#include "passes/lowering.h"
#include "passes/passes.h"

namespace cltrain {
namespace {

constexpr int32_t kSequenceLstm = 44;
// The operator's input slots (TensorFlow Lite's LSTM layout).
enum Slot : size_t {
  kX = 0,
  kInputW = 1,       // 1..4: input to input, forget, cell, output gate
  kRecurrentW = 5,   // 5..8: recurrent to the same gates
  kPeephole = 9,     // 9..11
  kBias = 12,        // 12..15
  kProjection = 16,  // 16..17
  kLayerNorm = 20,   // 20..23
};

bool present(const FileOperator& fo, size_t slot) { return slot < fo.inputs.size() && fo.inputs[slot] >= 0; }

// Why cltrain cannot load fo as Keras's LSTM cell, or "".
std::string unsupported(const FileOperator& fo, const Model& m, const fb::UnidirectionalSequenceLSTMOptions* o) {
  if (fo.inputs.size() < 20 || fo.outputs.size() != 1) return "inputs or outputs are not the 24 and 1 of its layout";
  if (!present(fo, kInputW) || !present(fo, kRecurrentW)) return "its input gate is coupled to the forget gate (CIFG)";
  for (size_t s = kPeephole; s < kPeephole + 3; ++s)
    if (present(fo, s)) return "it has peephole connections";
  if (present(fo, kProjection) || present(fo, kProjection + 1)) return "it has a projection";
  for (size_t s = kLayerNorm; s < fo.inputs.size(); ++s)
    if (present(fo, s)) return "it has layer normalisation coefficients";
  for (size_t s = kInputW; s < kBias + 4; ++s) {
    if (s >= kPeephole && s < kBias) continue;
    if (!present(fo, s)) return "gate input " + std::to_string(s) + " is absent";
    const Tensor& t = m.tensors[static_cast<size_t>(fo.inputs[s])];
    if (!t.is_constant() || t.dtype != CLTRAIN_FLOAT32) return "its weights are not float32 constants";
  }
  if (o && o->proj_clip() != 0.0f) return "it clips a projection";
  if (o && o->fused_activation_function() != fb::ActivationFunctionType::TANH &&
      o->fused_activation_function() != fb::ActivationFunctionType::NONE)
    return "its activation is not tanh";
  const Tensor& x = m.tensors[static_cast<size_t>(fo.inputs[kX])];
  if (x.shape.size() != 3 || x.dtype != CLTRAIN_FLOAT32) return "its input is not a float32 [B, T, I] sequence";
  return "";
}

}  // namespace

std::string sequence_lstms_pass(PassInput& in) {
  Model& m = *in.m;
  int lowered = 0, steps = 0;
  for (FileOperator& fo : *in.file) {
    if (fo.fate != FileOperator::Fate::kPending || fo.code != kSequenceLstm) continue;
    const auto* o = fo.op->builtin_options_as_UnidirectionalSequenceLSTMOptions();
    if (const std::string why = unsupported(fo, m, o); !why.empty())
      throw ModelError(fo.label + " (UNIDIRECTIONAL_SEQUENCE_LSTM): " + why + "; cltrain loads Keras's LSTM cell only");
    const bool time_major = o && o->time_major();
    const bool tanh = !o || o->fused_activation_function() == fb::ActivationFunctionType::TANH;
    const float clip = o ? o->cell_clip() : 0.0f;
    // Copies: the tensors appended below move m.tensors.
    const Tensor x = m.tensors[static_cast<size_t>(fo.inputs[kX])];
    const int32_t batch = x.shape[time_major ? 1 : 0], steps_n = x.shape[time_major ? 0 : 1];
    const int32_t units = m.tensors[static_cast<size_t>(fo.inputs[kInputW])].shape.at(0);
    const size_t time_axis = time_major ? 0 : 1;
    Lowering l{m, fo, {}};
    const Tensor y = m.tensors[static_cast<size_t>(fo.outputs[0])];
    const auto state = [&](const std::string& suffix) { return l.tensor(y, {batch, units}, suffix); };
    const auto unary = [&](int32_t op, int32_t a, const std::string& suffix) {
      const int32_t r = state(suffix);
      l.ops.push_back(l.part(op, {a}, r));
      return r;
    };
    const auto binary = [&](int32_t op, int32_t a, int32_t b, const std::string& suffix) {
      const int32_t r = state(suffix);
      l.ops.push_back(l.part(op, {a, b}, r));
      return r;
    };
    const auto scalar = [&](float v, const std::string& suffix) {
      Tensor c;
      c.name = y.name + suffix;
      c.shape = {1};
      c.dtype = CLTRAIN_FLOAT32;
      c.data.resize(4);
      std::memcpy(c.data.data(), &v, 4);
      return append_tensor(m, std::move(c));
    };
    const int32_t upper = clip > 0 ? scalar(clip, "/cell_clip") : -1;
    const int32_t lower = clip > 0 ? scalar(-clip, "/cell_clip_neg") : -1;
    int32_t h = -1, c = -1;
    std::vector<int32_t> outputs;
    for (int32_t t = 0; t < steps_n; ++t) {
      const std::string at = "/step" + std::to_string(t);
      const std::vector<int32_t> unit_shape =
          time_major ? std::vector<int32_t>{1, batch, x.shape[2]} : std::vector<int32_t>{batch, 1, x.shape[2]};
      const int32_t slice = l.tensor(x, unit_shape, at + "/x");
      Operator s = l.part(CLTRAIN_OP_SLICE, {fo.inputs[kX]}, slice);
      s.params.pad_before[time_axis] = t;
      s.params.pad_after[time_axis] = steps_n - 1 - t;
      l.ops.push_back(std::move(s));
      const int32_t xt = l.tensor(x, {batch, x.shape[2]}, at + "/x_t");
      l.ops.push_back(l.part(CLTRAIN_OP_RESHAPE, {slice}, xt));
      int32_t gate[4] = {-1, -1, -1, -1};
      static const char* const names[4] = {"/i", "/f", "/g", "/o"};
      for (size_t k = 0; k < 4; ++k) {
        if (k == 1 && c < 0) continue;  // step 0: no cell state to forget (and no operator whose output nobody reads)
        const int32_t xw = state(at + names[k] + "_x");
        Operator fx = l.part(CLTRAIN_OP_FULLY_CONNECTED, {xt, fo.inputs[kInputW + k], fo.inputs[kBias + k]}, xw);
        fx.file_slots = {-1, static_cast<int32_t>(kInputW + k), static_cast<int32_t>(kBias + k)};
        l.ops.push_back(std::move(fx));
        int32_t z = xw;
        if (h >= 0) {
          const int32_t hu = state(at + names[k] + "_h");
          Operator fh = l.part(CLTRAIN_OP_FULLY_CONNECTED, {h, fo.inputs[kRecurrentW + k], -1}, hu);
          fh.file_slots = {-1, static_cast<int32_t>(kRecurrentW + k), -1};
          l.ops.push_back(std::move(fh));
          z = binary(CLTRAIN_OP_ADD, xw, hu, at + names[k] + "_z");
        }
        const int32_t act = k == 2 ? (tanh ? CLTRAIN_OP_TANH : -1) : CLTRAIN_OP_LOGISTIC;
        gate[k] = act < 0 ? z : unary(act, z, at + names[k]);
      }
      const int32_t ig = binary(CLTRAIN_OP_MUL, gate[0], gate[2], at + "/ig");
      c = c < 0 ? ig : binary(CLTRAIN_OP_ADD, binary(CLTRAIN_OP_MUL, gate[1], c, at + "/fc"), ig, at + "/c");
      if (clip > 0)
        c = binary(CLTRAIN_OP_MAXIMUM, binary(CLTRAIN_OP_MINIMUM, c, upper, at + "/c_max"), lower, at + "/c_clipped");
      h = binary(CLTRAIN_OP_MUL, gate[3], tanh ? unary(CLTRAIN_OP_TANH, c, at + "/tanh_c") : c, at + "/h");
      std::vector<int32_t> one =
          time_major ? std::vector<int32_t>{1, batch, units} : std::vector<int32_t>{batch, 1, units};
      const int32_t ht = l.tensor(y, one, at + "/h_t");
      l.ops.push_back(l.part(CLTRAIN_OP_RESHAPE, {h}, ht));
      outputs.push_back(ht);
    }
    std::vector<int32_t> out_shape =
        time_major ? std::vector<int32_t>{steps_n, batch, units} : std::vector<int32_t>{batch, steps_n, units};
    l.concatenate(std::move(outputs), static_cast<int32_t>(time_axis), fo.outputs[0], out_shape);
    fo.lowered = std::move(l.ops);
    fo.fate = FileOperator::Fate::kLowered;
    ++lowered;
    steps += steps_n;
  }
  if (!lowered) return "";
  return "loaded " + std::to_string(lowered) + " UNIDIRECTIONAL_SEQUENCE_LSTM operator" + (lowered == 1 ? "" : "s") +
         " as the LSTM cell over its " + std::to_string(steps) + " steps (each batch from zero states, as Keras's)";
}

}  // namespace cltrain
