// Helpers for the model tests: a tiny model, and raw edits of serialized models through the
// flatbuffers object API (for defects that write_model cannot express).
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "circle_generated.h"
#include "model/builder.h"
#include "model/model.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace test {

// input [2,4] -> FullyConnected 3 (ReLU) -> Reshape [-1,3] -> Softmax: every op we support.
inline Model tiny_model() {
  ModelBuilder b(7);
  int x = b.input({2, 4}, "input");
  x = b.fully_connected(x, 3, CLTRAIN_ACT_RELU, true, "fc");
  x = b.reshape(x, {-1, 3}, "flat");
  x = b.relu(x);
  x = b.softmax(x, 1.0f, "out");
  b.output(x);
  return b.build();
}

// input [2,6,6,2] through every model op of the list, with options off their defaults: dilation,
// depth multiplier, strides, both paddings, negative axes, keep_dims, broadcasting, every
// supported fused activation.
inline Model every_op_model() {
  ModelBuilder b(11);
  const int x = b.input({2, 6, 6, 2}, "input");
  const int c = b.conv2d(x, 3, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 2, true, "conv");  // [2,6,6,3]
  const int d = b.depthwise_conv2d(c, 2, 2, 2, CLTRAIN_PADDING_VALID, CLTRAIN_ACT_RELU6, 2, 1, true,
                                   "dw");                                    // [2,3,3,6]
  const int p = b.pad(d, {{{0, 0}}, {{1, 0}}, {{0, 2}}, {{0, 0}}}, "pad");   // [2,4,5,6]
  const int mp = b.max_pool2d(p, 2, 2, 2, CLTRAIN_PADDING_SAME, "maxpool");  // [2,2,3,6]
  const int ap = b.avg_pool2d(p, 3, 2, 2, CLTRAIN_PADDING_SAME, "avgpool");  // [2,2,3,6]
  const int k = b.concat({mp, ap}, -1, "concat");                            // [2,2,3,12]
  const int m = b.mean(k, {-2}, true, "mean");                               // [2,2,1,12]
  const int s = b.sub(k, m, CLTRAIN_ACT_NONE, "sub");                        // [2,2,3,12]
  const int l = b.logistic(s, "logistic");
  const int mu = b.mul(b.tanh(s, "tanh"), l, CLTRAIN_ACT_RELU_N1_TO_1, "mul");
  const int a = b.add(mu, m, CLTRAIN_ACT_TANH, "add");
  const int r6 = b.relu6(b.div(a, l, CLTRAIN_ACT_RELU6, "div"), "relu6");
  const int t = b.transpose(r6, {0, 3, -3, 2}, "transpose");  // [2,12,2,3]
  // Attention's product of two activations: t t^T per leading index.
  const int bm = b.op(CLTRAIN_OP_BATCH_MATMUL, {t, b.transpose(t, {0, 1, 3, 2}, "transpose_t")}, {},
                      "batch_matmul");  // [2,12,2,2]
  // A Conv2DTranspose upsampling it (stride 2, SAME, ReLU), pooled back and added.
  const int tc = b.transpose_conv(bm, 2, 3, 3, 2, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 24, 4, true,
                                  "tconv");                                                 // [2,24,4,2]
  const int up = b.add(bm, b.avg_pool2d(tc, 2, 2, 2, CLTRAIN_PADDING_SAME, "tconv_pool"));  // [2,12,2,2]
  // Resized up (bilinear, half-pixel centres, as Keras's UpSampling2D) and back (nearest,
  // aligned corners), added.
  const int rs = b.resize(CLTRAIN_OP_RESIZE_NEAREST_NEIGHBOR,
                          b.resize(CLTRAIN_OP_RESIZE_BILINEAR, up, 24, 4, false, true, "resize_up"), 12, 2, true, false,
                          "resize_down");
  int y = b.reshape(b.add(up, rs), {2, -1}, "flat");  // [2,48]
  y = b.fully_connected(y, 6, CLTRAIN_ACT_TANH, true, "fc");
  y = b.slice(y, {0, 1}, {-1, 5}, "slice");     // [2,5]: a gate of an LSTM's SPLIT
  y = b.add(y, b.fill({2, 5}, 0.25f, "fill"));  // an RNN's initial state, here not zero
  y = b.relu(y, "relu");
  y = b.padv2(y, {{{0, 0}}, {{1, 0}}}, -1.5f, "padv2");  // [2,6]
  // A row's range: REDUCE_MAX and REDUCE_MIN over the last axis, kept as [2,1].
  y = b.sub(y,
            b.sub(b.reduce(CLTRAIN_OP_REDUCE_MAX, y, {-1}, true, "row_max"),
                  b.reduce(CLTRAIN_OP_REDUCE_MIN, y, {-1}, true, "row_min"), CLTRAIN_ACT_NONE, "row_range"),
            CLTRAIN_ACT_NONE, "less_range");
  // A LayerNormalization's ops: the squared difference from the row mean, NEG, RSQRT of a
  // positive value.
  y = b.op(CLTRAIN_OP_SQUARED_DIFFERENCE, {y, b.mean(y, {-1}, true, "row_mean")});
  y = b.sub(y, b.reduce(CLTRAIN_OP_SUM, y, {-1}, true, "row_sum"), CLTRAIN_ACT_NONE, "less_sum");
  // MAXIMUM and MINIMUM of two activations, broadcast ([2,6] with the row range [2,1]).
  y = b.op(CLTRAIN_OP_MINIMUM,
           {b.op(CLTRAIN_OP_MAXIMUM, {y, b.reduce(CLTRAIN_OP_MEAN, y, {-1}, true, "row_mean0")}), y});
  // The comparisons, each a 0/1 mask of y against its row mean (Keras's tf.where activations:
  // selu, hard_shrink) added to y; no gradient flows through a mask.
  const int row_mean2 = b.reduce(CLTRAIN_OP_MEAN, y, {-1}, true, "row_mean2");
  for (int32_t op : {CLTRAIN_OP_GREATER, CLTRAIN_OP_GREATER_EQUAL, CLTRAIN_OP_LESS, CLTRAIN_OP_LESS_EQUAL,
                     CLTRAIN_OP_EQUAL, CLTRAIN_OP_NOT_EQUAL})
    y = b.add(y, b.op(op, {y, row_mean2}));
  // TILE as UpSampling1D writes it: [2,6] -> [2,6,1] -> x2 -> [2,6,2] -> [2,12], sliced back to [2,6].
  y = b.slice(b.reshape(b.tile(b.reshape(y, {2, 6, 1}), {1, 1, 2}), {2, 12}), {0, 0}, {-1, 6});
  y = b.op(CLTRAIN_OP_NEG, {y});
  y = b.op(CLTRAIN_OP_RSQRT, {b.logistic(y, "positive")});
  // GELU in both forms (its options: GeluOptions.approximate).
  cltrain_op_params gelu{};
  gelu.approximate = 1;
  y = b.op(CLTRAIN_OP_GELU, {b.op(CLTRAIN_OP_GELU, {y})}, gelu);
  // The pointwise ops: LEAKY_RELU (its options: LeakyReluOptions.alpha), ELU, ABS; SQUARE, EXP,
  // SQRT and LOG of a value in (0.5, 1), where they stay finite.
  cltrain_op_params leaky{};
  leaky.alpha = 0.2f;
  y = b.op(CLTRAIN_OP_ABS, {b.op(CLTRAIN_OP_ELU, {b.op(CLTRAIN_OP_LEAKY_RELU, {y}, leaky)})});
  y = b.op(CLTRAIN_OP_SQUARE, {b.logistic(y, "unit")});
  y = b.op(CLTRAIN_OP_LOG, {b.op(CLTRAIN_OP_SQRT, {b.op(CLTRAIN_OP_EXP, {y})})});
  y = b.op(CLTRAIN_OP_LOG_SOFTMAX, {y});  // PyTorch's classifiers trained with NLLLoss end here
  // Every other element-wise op without options, once each: an op added to the list is in here.
  for (const OpDescriptor* op : all_ops()) {
    const bool used = op->op == CLTRAIN_OP_RELU || op->op == CLTRAIN_OP_RELU6 || op->op == CLTRAIN_OP_TANH ||
                      op->op == CLTRAIN_OP_LOGISTIC || op->op == CLTRAIN_OP_RSQRT || op->op == CLTRAIN_OP_SLICE ||
                      op->op == CLTRAIN_OP_ELU || op->op == CLTRAIN_OP_SQRT || op->op == CLTRAIN_OP_LOG;
    if (op->kind == CLTRAIN_KIND_MODEL && op->max_inputs == 1 && op->options == fb::BuiltinOptions::NONE && !used)
      y = b.op(op->op, {y});
  }
  b.output(b.softmax(y, 0.5f, "out"));
  return b.build();
}

// Token ids [2,5] (int32) through a Keras Embedding's GATHER from an [11,4] table, the mean over
// the sequence and a Dense classifier: the ops every_op_model (a float input) cannot hold.
inline Model embedding_model() {
  ModelBuilder b(13);
  const int ids = b.input({2, 5}, "ids", CLTRAIN_INT32);
  int y = b.embedding(ids, 11, 4, "embedding");  // [2,5,4]
  y = b.mean(y, {1}, false, "pool");             // [2,4]
  y = b.fully_connected(y, 3, CLTRAIN_ACT_NONE, true, "fc");
  b.output(b.softmax(y, 1.0f, "out"));
  return b.build();
}

// Replaces a constant tensor's shape, with zero data of the new size.
inline void reshape_constant(Model& m, size_t t, std::vector<int32_t> shape) {
  m.tensors[t].shape = std::move(shape);
  m.tensors[t].data.assign(m.tensors[t].elements() * 4, 0);
}

// Index of the first tensor named name; -1 if none.
inline int32_t find_tensor(const Model& m, const std::string& name) {
  for (size_t i = 0; i < m.tensors.size(); ++i)
    if (m.tensors[i].name == name) return static_cast<int32_t>(i);
  return -1;
}

// Index of the first operator that writes the tensor named name; -1 if none.
inline int32_t find_operator(const Model& m, const std::string& output) {
  const int32_t t = find_tensor(m, output);
  for (size_t i = 0; i < m.operators.size(); ++i)
    if (!m.operators[i].outputs.empty() && m.operators[i].outputs[0] == t) return static_cast<int32_t>(i);
  return -1;
}

// Bytes of the non-constant tensors (activations: the input and every operator's output).
inline uint64_t activation_bytes(const Model& m) {
  uint64_t n = 0;
  for (const Tensor& t : m.tensors)
    if (!t.is_constant()) n += t.elements() * 4;
  return n;
}

// Bytes of the constant float32 tensors (weights and biases).
inline uint64_t parameter_bytes(const Model& m) {
  uint64_t n = 0;
  for (const Tensor& t : m.tensors)
    if (t.is_constant() && t.dtype == CLTRAIN_FLOAT32) n += t.data.size();
  return n;
}

inline std::vector<int32_t> int32s(const Tensor& t) {
  std::vector<int32_t> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

// Unpacks bytes, applies edit, and packs again with the identifier of the original.
inline std::vector<uint8_t> edit_raw(const std::vector<uint8_t>& bytes, const std::function<void(fb::ModelT&)>& edit) {
  auto m = fb::UnPackModel(bytes.data());
  edit(*m);
  flatbuffers::FlatBufferBuilder fbb;
  const std::string ident(reinterpret_cast<const char*>(bytes.data()) + 4, 4);
  fbb.Finish(fb::Model::Pack(fbb, m.get()), ident.c_str());
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

// The ModelError message of loading bytes, or "" if it loaded.
inline std::string load_error(const std::vector<uint8_t>& bytes, const std::string& what = "m.circle") {
  try {
    load_model_from_memory(bytes, what);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

inline std::vector<float> floats(const Tensor& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace test
}  // namespace cltrain
