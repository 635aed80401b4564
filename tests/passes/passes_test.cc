// A test per rewrite pass (host/passes/passes.cc): a model where it fires, the line it logs
// (Model::rewrites, Engine::rewrites), what it changed, and a model where it must not fire.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "circle_generated.h"
#include "engine.h"
#include "model/builder.h"
#include "model/export.h"
#include "model/model.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {
namespace {

const std::string kData = CLTRAIN_KERAS_DATA;
const std::string kTorchData = CLTRAIN_TORCH_DATA;

// The change the pass logged, or "" when it logged none.
std::string change_of(const std::vector<Rewrite>& log, const std::string& pass) {
  for (const Rewrite& r : log)
    if (r.pass == pass) return r.change;
  return "";
}

// The same from Engine::rewrites' lines ("pass: change").
std::string change_of_lines(const std::vector<std::string>& lines, const std::string& pass) {
  for (const std::string& l : lines)
    if (l.rfind(pass + ": ", 0) == 0) return l.substr(pass.size() + 2);
  return "";
}

size_t count_op(const Model& m, int32_t op) {
  return static_cast<size_t>(
      std::count_if(m.operators.begin(), m.operators.end(), [&](const Operator& o) { return o.op == op; }));
}

std::unique_ptr<Engine> prepared(std::unique_ptr<Engine> e, Settings s = {}) {
  s.backends = {"cpu"};
  s.batch_size = 2;
  e->set_settings(s);
  e->prepare();
  return e;
}

std::unique_ptr<Engine> engine_of(const ModelBuilder& b) {
  return Engine::from_buffer(write_model(b.build(), "circle"), "built.circle");
}

// A small dense model none of the passes changes.
ModelBuilder plain_mlp() {
  ModelBuilder b;
  const int x = b.input({1, 8});
  const int h = b.fully_connected(x, 6, CLTRAIN_ACT_RELU);
  b.output(b.softmax(b.fully_connected(h, 3, CLTRAIN_ACT_NONE)));
  return b;
}

TEST(PassList, OneListInStageOrderWithUniqueNames) {
  std::set<std::string> names;
  PassStage last = PassStage::kImport;
  for (const Pass& p : pass_list()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name << " listed twice";
    EXPECT_GE(static_cast<int>(p.stage), static_cast<int>(last)) << p.name << " is out of its stage's place";
    last = p.stage;
  }
  EXPECT_EQ(names.size(), 27u);
}

TEST(PassList, NothingFiresOnAPlainModel) {
  auto e = prepared(engine_of(plain_mlp()));
  EXPECT_TRUE(e->rewrites().empty()) << e->rewrites()[0];
}

// Keras' Embedding: SELECT_V2(LESS(ids, 0), ADD(ids, V), ids) before its GATHER.
TEST(IndexGuards, FoldsKerasEmbeddingGuard) {
  const Model m = load_model(kData + "/embedding_pool.tflite");
  EXPECT_EQ(change_of(m.rewrites, "index-guards").rfind("folded 1 index guard ", 0), 0u)
      << change_of(m.rewrites, "index-guards");
  EXPECT_EQ(m.folded_ops.size(), 3u);
  ASSERT_EQ(count_op(m, CLTRAIN_OP_GATHER), 1u);
  for (const Operator& op : m.operators) {
    if (op.op != CLTRAIN_OP_GATHER) continue;
    EXPECT_EQ(op.inputs[1], m.inputs[0]);  // reads the ids themselves
  }
}

// litert-torch's F.log_softmax(x, dim=-1): REDUCE_MAX, MAXIMUM(-inf), RESHAPE, SUB, EXP,
// SUM(keepDims), LOG, SUB (tools/zoo/torch_models.py log_softmax_mlp) loads as one LOG_SOFTMAX.
TEST(LogSoftmax, LitertTorchsArithmeticLoadsAsOneOperator) {
  const Model m = load_model(kTorchData + "/log_softmax_mlp.tflite");
  EXPECT_EQ(change_of(m.rewrites, "log-softmax"),
            "loaded 1 log_softmax written as REDUCE_MAX, SUB, EXP, SUM, LOG, SUB as LOG_SOFTMAX (the same "
            "arithmetic, one operator)");
  EXPECT_EQ(m.folded_ops.size(), 7u);  // all but the last SUB, which became the LOG_SOFTMAX
  ASSERT_EQ(m.operators.size(), 3u);
  const Operator& ls = m.operators.back();
  EXPECT_EQ(ls.op, CLTRAIN_OP_LOG_SOFTMAX);
  EXPECT_EQ(ls.inputs[0], m.operators[1].outputs[0]);  // the logits, not the shifted copy
  EXPECT_EQ(ls.outputs[0], m.outputs[0]);
  // Written back as the file had it: the eight operators, byte for byte.
  EXPECT_EQ(export_model(m, {}, "tflite"), m.file);
}

// The same arithmetic over the batch axis (dim=0) is no LOG_SOFTMAX: nothing folds, and the
// file's operators load as they are (REDUCE_MAX, MAXIMUM, SUM, ...).
TEST(LogSoftmax, neg_OtherAxisIsNotFolded) {
  const Model m = load_model(kTorchData + "/log_softmax_dim0.tflite");
  EXPECT_EQ(change_of(m.rewrites, "log-softmax"), "");
  EXPECT_TRUE(m.folded_ops.empty());
  EXPECT_EQ(count_op(m, CLTRAIN_OP_LOG_SOFTMAX), 0u);
  EXPECT_EQ(count_op(m, CLTRAIN_OP_MAXIMUM), 1u);
  EXPECT_EQ(count_op(m, CLTRAIN_OP_SUM), 1u);
  EXPECT_EQ(count_op(m, CLTRAIN_OP_REDUCE_MAX), 1u);
}

// Keras' dilated Conv2D (SAME and VALID, an input of 11 that the converter pads to 12 and crops
// back) and DepthwiseConv2D (rates 2 and 3): SPACE_TO_BATCH_ND, a VALID convolution,
// BATCH_TO_SPACE_ND each load as one convolution with its dilation and padding.
TEST(DilatedConvolutions, KerasAtrousConvolutionsLoadAsOne) {
  const Model m = load_model(kData + "/dilated_convs.tflite");
  EXPECT_EQ(change_of(m.rewrites, "dilated-convolutions"),
            "loaded 3 dilated convolutions written as SPACE_TO_BATCH_ND, convolution, BATCH_TO_SPACE_ND as one "
            "convolution with its dilation (the batch operators fold)");
  EXPECT_EQ(m.folded_ops.size(), 6u);
  std::vector<std::vector<int32_t>> geometry;  // op, padding, dilation h, dilation w
  for (const Operator& op : m.operators)
    if (op.op == CLTRAIN_OP_CONV_2D || op.op == CLTRAIN_OP_DEPTHWISE_CONV_2D)
      geometry.push_back({op.op, op.params.padding, op.params.dilation_h, op.params.dilation_w});
  EXPECT_EQ(geometry, (std::vector<std::vector<int32_t>>{{CLTRAIN_OP_CONV_2D, CLTRAIN_PADDING_SAME, 2, 2},
                                                         {CLTRAIN_OP_DEPTHWISE_CONV_2D, CLTRAIN_PADDING_SAME, 2, 3},
                                                         {CLTRAIN_OP_CONV_2D, CLTRAIN_PADDING_VALID, 2, 2}}));
  EXPECT_EQ(m.operators.front().inputs[0], m.inputs[0]);  // reads the image itself
  // Written back as the file had it.
  EXPECT_EQ(export_model(m, {}, "tflite"), m.file);
}

// A TCN's causal Conv1D stack: PAD, SPACE_TO_BATCH_ND, EXPAND_DIMS, CONV_2D, RESHAPE,
// BATCH_TO_SPACE_ND; the convolution reads and writes tensors of the undivided length.
TEST(DilatedConvolutions, CausalConv1DStack) {
  const Model m = load_model(kData + "/tcn.tflite");
  EXPECT_EQ(change_of(m.rewrites, "dilated-convolutions").rfind("loaded 3 dilated convolutions ", 0), 0u);
  std::vector<int32_t> rates;
  for (const Operator& op : m.operators)
    if (op.op == CLTRAIN_OP_CONV_2D) {
      rates.push_back(op.params.dilation_w);
      EXPECT_EQ(op.params.dilation_h, 1);
      const std::vector<int32_t>& y = m.tensors[static_cast<size_t>(op.outputs[0])].shape;
      ASSERT_EQ(y.size(), 4u);
      EXPECT_EQ(y[1], 1);
      EXPECT_EQ(y[2], 16);  // the whole sequence, not a phase of it
    }
  EXPECT_EQ(rates, (std::vector<int32_t>{2, 4, 2}));
  EXPECT_EQ(count_op(m, CLTRAIN_OP_PAD), 2u);  // the causal padding stays a PAD
  EXPECT_EQ(export_model(m, {}, "tflite"), m.file);
}

// Flatten with an open batch: SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE's shape.
TEST(ShapeOperators, ComputedOnTheHost) {
  const Model m = load_model(kData + "/mlp_flatten.tflite");
  const std::string c = change_of(m.rewrites, "shape-operators");
  EXPECT_EQ(c, "computes " + std::to_string(m.shape_ops.size()) +
                   " shape operators on the host (int32 constants for the operators that read them)");
  EXPECT_GE(m.shape_ops.size(), 2u);
}

TEST(SplitSlices, SplitLoadsAsSlices) {
  const Model m = load_model(kData + "/gated_slices.tflite");
  const std::string c = change_of(m.rewrites, "split-slices");
  EXPECT_NE(c.find(" as " + std::to_string(count_op(m, CLTRAIN_OP_SLICE)) + " SLICE"), std::string::npos) << c;
  EXPECT_GE(count_op(m, CLTRAIN_OP_SLICE), 2u);
}

TEST(TransposedUnpacks, LstmStepsSliceTheInput) {
  const Model m = load_model(kData + "/text_lstm.tflite");
  EXPECT_EQ(change_of(m.rewrites, "transposed-unpacks").rfind("folded 1 TRANSPOSE before UNPACK", 0), 0u)
      << change_of(m.rewrites, "transposed-unpacks");
  EXPECT_EQ(count_op(m, CLTRAIN_OP_TRANSPOSE), 0u);
}

// Keras's LSTM(return_sequences=True), unrolled, gathers its 10 steps with PACK on axis 0, a
// TRANSPOSE [1, 0, 2] to [B, 10, H] (read only by the next layer's SHAPE) and an UNPACK of the
// same stack (the next LSTM's steps): the stack loads as unit RESHAPEs and CONCATENATIONs along
// axis 1 into the TRANSPOSE's output (8 + 2 inputs, then both), the TRANSPOSE folds, and each
// UNPACK part reads its PACK input again. The int32 PACKs of the shape arithmetic stay the host's.
TEST(Packs, KerasReturnSequencesStackAlongTime) {
  const Model m = load_model(kData + "/stacked_lstm.tflite");
  EXPECT_EQ(change_of(m.rewrites, "packs"),
            "loaded 1 PACK as RESHAPEs and CONCATENATIONs, the 1 TRANSPOSE after them folded, 1 UNPACK of them read "
            "as their inputs");
  std::vector<const Operator*> concats;
  for (const Operator& op : m.operators)
    if (op.op == CLTRAIN_OP_CONCATENATION) concats.push_back(&op);
  ASSERT_EQ(concats.size(), 3u);
  EXPECT_EQ(concats[0]->inputs.size(), 8u);
  EXPECT_EQ(concats[1]->inputs.size(), 2u);
  EXPECT_EQ(concats[2]->inputs, (std::vector<int32_t>{concats[0]->outputs[0], concats[1]->outputs[0]}));
  const Tensor& stacked = m.tensors[static_cast<size_t>(concats[2]->outputs[0])];
  EXPECT_EQ(stacked.shape, (std::vector<int32_t>{1, 10, 12}));  // the batch first
  for (const Operator* c : concats) EXPECT_EQ(c->params.axis, 1);
  // Neither TRANSPOSE is left: the stack's folded here, the first LSTM's input one by transposed-unpacks.
  EXPECT_EQ(count_op(m, CLTRAIN_OP_TRANSPOSE), 0u);
  // Written back as the file had it, PACK, TRANSPOSE and UNPACK included, byte for byte.
  EXPECT_EQ(export_model(m, {}, "tflite"), m.file);
}

// A stack on axis 0 that another operator reads (keras.ops.stack then a sum over it) would move
// the batch off the first axis: not lowered, and named as unsupported in one line.
TEST(Packs, neg_AStackOnTheBatchAxisIsNamed) {
  try {
    load_model(kData + "/stack_axis0.tflite");
    FAIL() << "loaded";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("operator 2: PACK (builtin 83) is not supported"), std::string::npos)
        << e.what();
  }
}

// Keras Dense on a rank-3 input without a static shape: RESHAPE -> FULLY_CONNECTED -> RESHAPE.
TEST(RowReshapes, TensordotKeepsItsLeadingDimensions) {
  const Model m = load_model(kData + "/transformer.tflite");
  EXPECT_EQ(change_of(m.rewrites, "row-reshapes"),
            "folded the RESHAPEs around 4 FULLY_CONNECTED operators (a Dense on rank 3 or more)");
  size_t rank3 = 0;  // FULLY_CONNECTEDs reading [B, S, K] themselves: the rows keep the batch apart
  for (const Operator& op : m.operators)
    rank3 += op.op == CLTRAIN_OP_FULLY_CONNECTED && m.tensors[static_cast<size_t>(op.inputs[0])].shape.size() == 3;
  EXPECT_GE(rank3, 4u);
  EXPECT_TRUE(change_of(load_model(kData + "/mlp_flatten.tflite").rewrites, "row-reshapes").empty());
}

// A dense model with h [1,6] -> RESHAPE [1,6,1] -> RESHAPE [1,6] in the middle; with `converted`,
// the two RESHAPEs written as a converter writes them: EXPAND_DIMS(h, axis) and SQUEEZE(e,
// squeeze_dims) (squeeze_axis: the dimension SQUEEZE names).
std::vector<uint8_t> squeeze_expand_file(bool converted, int32_t squeeze_axis = 2) {
  ModelBuilder b;
  const int x = b.input({1, 8});
  const int h = b.fully_connected(x, 6, CLTRAIN_ACT_RELU);
  const int s = b.reshape(b.reshape(h, {1, 6, 1}), {1, 6});
  b.output(b.softmax(b.fully_connected(s, 3, CLTRAIN_ACT_NONE)));
  std::vector<uint8_t> bytes = write_model(b.build(), "tflite");
  if (!converted) return bytes;
  std::unique_ptr<fb::ModelT> m(fb::GetModel(bytes.data())->UnPack());
  fb::SubGraphT& sg = *m->subgraphs[0];
  auto code = [&](int32_t builtin) {
    auto oc = std::make_unique<fb::OperatorCodeT>();
    oc->deprecated_builtin_code = static_cast<int8_t>(builtin);
    oc->builtin_code = builtin;
    m->operator_codes.push_back(std::move(oc));
    return static_cast<uint32_t>(m->operator_codes.size() - 1);
  };
  fb::OperatorT& expand = *sg.operators[1];
  fb::OperatorT& squeeze = *sg.operators[2];
  expand.opcode_index = code(70);
  expand.builtin_options.Reset();
  fb::TensorT& axis = *sg.tensors[static_cast<size_t>(expand.inputs[1])];  // its shape operand, now the axis
  axis.shape = {};
  m->buffers[axis.buffer]->data = {2, 0, 0, 0};
  squeeze.opcode_index = code(43);
  squeeze.inputs.resize(1);
  fb::SqueezeOptionsT o;
  o.squeeze_dims = {squeeze_axis};
  squeeze.builtin_options.Set(std::move(o));
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fb::Model::Pack(fbb, m.get()), "TFL3");
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

TEST(SqueezeExpand, LoadAsReshapesAndTrainAsThey) {
  const Model m = load_model_from_memory(squeeze_expand_file(true), "converted.tflite");
  EXPECT_EQ(change_of(m.rewrites, "squeeze-expand"),
            "loaded 1 SQUEEZE and 1 EXPAND_DIMS as RESHAPEs (the same elements, another shape)");
  EXPECT_EQ(count_op(m, CLTRAIN_OP_RESHAPE), 2u);
  // At another batch, the same losses as the model written with RESHAPEs, bit for bit.
  Settings s;
  s.optimizer = Optimizer::kSgd;
  s.learning_rate = 0.1f;
  s.batch_size = 3;
  s.backends = {"cpu"};
  std::vector<float> x(3 * 8), y(3 * 3, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.25f - 0.6f;
  y[0] = y[4] = y[8] = 1.0f;
  std::vector<float> losses[2];
  for (bool converted : {false, true}) {
    auto e = Engine::from_buffer(squeeze_expand_file(converted), "m.tflite");
    e->set_settings(s);
    e->prepare();
    for (int step = 0; step < 3; ++step) {
      e->set_input(x.data(), x.size());
      e->set_expected(y.data(), y.size());
      losses[converted].push_back(e->train_step());
    }
  }
  EXPECT_EQ(losses[0], losses[1]);
}

TEST(SqueezeExpand, neg_TheBatchAxisStaysUnsupported) {
  try {
    load_model_from_memory(squeeze_expand_file(true, 0), "batch_axis.tflite");
    ADD_FAILURE() << "a SQUEEZE of the batch axis loaded";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("SQUEEZE (builtin 43)"), std::string::npos) << e.what();
  }
}

TEST(BroadcastRanks, ConstantsTakeTheOtherOperandsRank) {
  const Model m = load_model(kData + "/dense_layernorm.tflite");
  const std::string c = change_of(m.rewrites, "broadcast-ranks");
  ASSERT_FALSE(c.empty());
  for (const Operator& op : m.operators) {
    if (op.inputs.size() != 2 || (op.op != CLTRAIN_OP_MUL && op.op != CLTRAIN_OP_ADD) || op.inputs[1] < 0) continue;
    EXPECT_EQ(m.tensors[static_cast<size_t>(op.inputs[0])].shape.size(),
              m.tensors[static_cast<size_t>(op.inputs[1])].shape.size());
  }
}

// dw_block: the converter merged three convolutions' zero biases into one tensor.
TEST(UntieConstants, MergedZeroBiasesTrainApart) {
  auto e = prepared(Engine::from_file(kData + "/dw_block.tflite"));
  const std::string c = change_of(e->model().rewrites, "untie-constants");
  EXPECT_EQ(c.rfind("1 constant that the converter merged", 0), 0u) << c;
  EXPECT_GT(e->model().tensors.size(), static_cast<size_t>(e->model().file_tensor_count));
}

// A bias with varied values read by two layers of their own (the converter kept one copy of equal
// initial biases, as Keras's unit_forget_bias gives each LSTM of a stack) trains as two; the same
// bias read by two operators of one kernel (an unrolled RNN's steps) stays one, as does a kernel
// two operators share.
TEST(UntieConstants, EqualBiasesOfTwoLayersTrainApartOneLayersStepsDoNot) {
  const auto two_layers = [](bool share_kernel) {
    ModelBuilder b;
    const int x = b.input({1, 4});
    b.output(b.softmax(b.add(b.fully_connected(x, 3, CLTRAIN_ACT_NONE), b.fully_connected(x, 3, CLTRAIN_ACT_NONE))));
    Model m = b.build();
    std::vector<Operator*> fcs;
    for (Operator& op : m.operators)
      if (op.op == CLTRAIN_OP_FULLY_CONNECTED) fcs.push_back(&op);
    const float forget[3] = {0.0f, 1.0f, 0.0f};
    Tensor& bias = m.tensors[static_cast<size_t>(fcs[0]->inputs[2])];
    bias.data.assign(reinterpret_cast<const uint8_t*>(forget), reinterpret_cast<const uint8_t*>(forget + 3));
    fcs[1]->inputs[2] = fcs[0]->inputs[2];
    if (share_kernel) fcs[1]->inputs[1] = fcs[0]->inputs[1];
    return Engine::from_buffer(write_model(m, "circle"), "built.circle");
  };
  auto apart = prepared(two_layers(false));
  EXPECT_EQ(change_of(apart->model().rewrites, "untie-constants").rfind("1 constant that the converter merged", 0), 0u);
  auto steps = prepared(two_layers(true));
  EXPECT_EQ(change_of(steps->model().rewrites, "untie-constants"), "");
}

// Two stacked LSTMs, unrolled over 2 steps: each step adds the layer's bias after x_t W + h U. Both
// start at unit_forget_bias's [0, 1, 0, 0] per unit, which the converter keeps once: it trains as one
// bias per layer (each shared by its steps), as Keras's two.
TEST(UntieConstants, EqualBiasesAddedAfterTwoLayersProductsTrainApart) {
  auto e = prepared(Engine::from_file(kData + "/stacked_lstm_forget_bias.tflite"));
  EXPECT_EQ(change_of(e->model().rewrites, "untie-constants"),
            "1 constant that the converter merged (equal values read by layers that do not share weights) now train "
            "as 2 separate weights, one per layer");
  std::map<int32_t, int> adds_of_bias;
  for (const Operator& op : e->model().operators)
    if (op.op == CLTRAIN_OP_ADD)
      for (int32_t x : op.inputs)
        if (x >= 0 && is_float_constant(e->model().tensors[static_cast<size_t>(x)])) ++adds_of_bias[x];
  ASSERT_EQ(adds_of_bias.size(), 2u);
  for (const auto& [bias, adds] : adds_of_bias)
    EXPECT_EQ(adds, 2) << e->model().tensors[static_cast<size_t>(bias)].name;
}

// tf_keras's fused LSTM loads as its cell (lstm_fused's FiveSteps compare its training with
// tf_keras's); a variant Keras does not write (here peepholes: slot 9 given) is refused in one line
// that names the operator and what it has.
TEST(SequenceLstms, TheFusedLstmLoadsAsItsCellAndAPeepholeOneIsRefused) {
  std::ifstream f(kData + "/lstm_fused.tflite", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const Model m = load_model_from_memory(bytes, "lstm_fused.tflite");
  EXPECT_EQ(change_of(m.rewrites, "sequence-lstms"),
            "loaded 1 UNIDIRECTIONAL_SEQUENCE_LSTM operator as the LSTM cell over its 10 steps (each batch from zero "
            "states, as Keras's)");
  // Per step 4 products of x_t (3 at step 0: no cell state to forget) and 4 of h (none at step 0).
  EXPECT_EQ(count_op(m, CLTRAIN_OP_FULLY_CONNECTED), 1u + 3u + 9u * 8u);
  std::unique_ptr<fb::ModelT> t(fb::GetModel(bytes.data())->UnPack());
  for (auto& op : t->subgraphs[0]->operators)
    if (op->inputs.size() == 24) op->inputs[9] = op->inputs[13];  // a cell-to-input peephole
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fb::Model::Pack(fbb, t.get()), "TFL3");
  try {
    load_model_from_memory(std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()),
                           "peephole.tflite");
    ADD_FAILURE() << "a peephole LSTM loaded";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("(UNIDIRECTIONAL_SEQUENCE_LSTM): it has peephole connections"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Keras's SimpleRNN(8) over 10 steps as TensorFlow's converter writes it with a fixed batch of 8: a
// WHILE loop (condition subgraph 1, body subgraph 2), unrolled at load; trained, and exported as
// the loop it was, with the trained weights (and the bias add_missing_biases gave it) in its body.
TEST(WhileLoops, AKerasLoopUnrollsTrainsAndExportsAsTheLoop) {
  const std::vector<uint8_t> bytes = file_bytes(kData + "/while_simple_rnn.tflite");
  Model m = load_model_from_memory(bytes, "while_simple_rnn.tflite");
  EXPECT_EQ(change_of(m.rewrites, "while-loops"), "unrolled 1 WHILE loop (10 steps) into the main graph");
  EXPECT_EQ(count_op(m, CLTRAIN_OP_FULLY_CONNECTED), 2u * 10u + 1u);  // x_t W and h U per step, the Dense
  EXPECT_EQ(count_op(m, CLTRAIN_OP_FILL), 1u);                        // the zero state: not a weight
  EXPECT_EQ(count_op(m, CLTRAIN_OP_TANH), 10u);
  // The file's 9 operators, the loop's steps counted as the one WHILE (train configs index them);
  // so in every WHILE model of tests/keras.
  EXPECT_EQ(file_operator_count(m), 9u);
  for (const char* name : {"while_lstm", "while_gru", "while_bilstm", "while_stacked", "while_masked_lstm"}) {
    const std::vector<uint8_t> f = file_bytes(kData + "/" + name + ".tflite");
    EXPECT_EQ(file_operator_count(load_model_from_memory(f, name)),
              fb::GetModel(f.data())->subgraphs()->Get(0)->operators()->size())
        << name;
  }
  // All the steps read one kernel and one recurrent kernel, the body's, at their place in the file.
  std::set<int32_t> kernels;
  for (const Operator& op : m.operators)
    if (op.op == CLTRAIN_OP_FULLY_CONNECTED && op.body_subgraph == 2) kernels.insert(op.inputs[1]);
  ASSERT_EQ(kernels.size(), 2u);
  for (int32_t k : kernels) EXPECT_GE(m.tensors[static_cast<size_t>(k)].file_offset, 0);
  try {
    set_batch_size(m, 16);
    ADD_FAILURE() << "the batch of an unrolled loop changed";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("unrolled for the file's batch of 8"), std::string::npos) << e.what();
  }

  Settings s;
  s.backends = {"cpu"};
  // Without add_missing_biases: the body's x_t W and the Dense are named once each, not per step.
  auto plain = Engine::from_buffer(bytes, "while_simple_rnn.tflite");
  plain->set_settings(s);
  plain->prepare();
  ASSERT_EQ(plain->warnings().size(), 1u);
  EXPECT_EQ(plain->warnings()[0].rfind("2 FullyConnected/Conv2D/DepthwiseConv2D operators have no bias", 0), 0u)
      << plain->warnings()[0];
  s.add_missing_biases = true;
  auto e = Engine::from_buffer(bytes, "while_simple_rnn.tflite");
  e->set_settings(s);
  e->prepare();
  std::vector<int32_t> ids(8 * 10);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i * 7 % 50);
  std::vector<float> y(8 * 4, 0.0f);
  for (size_t i = 0; i < 8; ++i) y[i * 4 + i % 4] = 1.0f;
  e->set_input_int32(ids.data(), ids.size());
  e->set_expected(y.data(), y.size());
  e->train_step();
  const std::string path = ::testing::TempDir() + "while_simple_rnn_trained.tflite";
  e->export_circle(path);
  const std::vector<uint8_t> out = file_bytes(path);
  std::remove(path.c_str());
  const fb::Model* before = fb::GetModel(bytes.data());
  const fb::Model* after = fb::GetModel(out.data());
  ASSERT_EQ(after->subgraphs()->size(), 3u);
  const fb::SubGraph* main = after->subgraphs()->Get(0);
  EXPECT_EQ(main->operators()->size(), before->subgraphs()->Get(0)->operators()->size());
  bool loop = false;
  for (const fb::Operator* op : *main->operators())
    loop = loop || after->operator_codes()->Get(op->opcode_index())->builtin_code() == 119;
  EXPECT_TRUE(loop) << "the export has no WHILE";
  // The body's kernels hold trained values; its x_t W operator reads the added bias.
  const auto values = [](const fb::Model* fm, const fb::SubGraph* g, int32_t t) {
    const fb::Buffer* b = fm->buffers()->Get(g->tensors()->Get(static_cast<uint32_t>(t))->buffer());
    return b->data() ? std::vector<uint8_t>(b->data()->begin(), b->data()->end()) : std::vector<uint8_t>{};
  };
  const fb::SubGraph* body_before = before->subgraphs()->Get(2);
  const fb::SubGraph* body_after = after->subgraphs()->Get(2);
  int trained = 0, with_bias = 0;
  for (uint32_t i = 0; i < body_after->operators()->size(); ++i) {
    const auto* in = body_after->operators()->Get(i)->inputs();
    if (after->operator_codes()->Get(body_after->operators()->Get(i)->opcode_index())->builtin_code() != 9) continue;
    trained += values(after, body_after, in->Get(1)) != values(before, body_before, in->Get(1));
    with_bias += in->size() > 2 && in->Get(2) >= 0;
  }
  EXPECT_EQ(trained, 2);
  EXPECT_EQ(with_bias, 1);
  // It loads (and unrolls) again.
  EXPECT_EQ(change_of(load_model_from_memory(out, "trained.tflite").rewrites, "while-loops"),
            "unrolled 1 WHILE loop (10 steps) into the main graph");
}

// An export that rebuilds the file (here for the Dense bias add_missing_biases gives) keeps the
// options of every operator, the loop body's SPLIT's number of parts among them (TensorFlow Lite
// reads them; a lost one made it crash).
TEST(WhileLoops, ARebuiltExportKeepsTheBodysOptions) {
  Settings s;
  s.backends = {"cpu"};
  s.add_missing_biases = true;
  auto e = Engine::from_file(kData + "/while_lstm.tflite");
  e->set_settings(s);
  e->prepare();
  const std::string path = ::testing::TempDir() + "while_lstm_exported.tflite";
  e->export_circle(path);
  const std::vector<uint8_t> out = file_bytes(path);
  std::remove(path.c_str());
  const fb::Model* m = fb::GetModel(out.data());
  int splits = 0;
  for (const fb::SubGraph* g : *m->subgraphs())
    for (const fb::Operator* op : *g->operators())
      if (m->operator_codes()->Get(op->opcode_index())->builtin_code() == 49) {
        ASSERT_NE(op->builtin_options_as_SplitOptions(), nullptr);
        EXPECT_EQ(op->builtin_options_as_SplitOptions()->num_splits(), 4);
        ++splits;
      }
  EXPECT_EQ(splits, 1);
  EXPECT_GT(m->subgraphs()->Get(0)->tensors()->size(), fb::GetModel(file_bytes(kData + "/while_lstm.tflite").data())
                                                           ->subgraphs()
                                                           ->Get(0)
                                                           ->tensors()
                                                           ->size());  // rebuilt: the bias appended
}

// Two loops whose equal biases the converter stored once (a Bidirectional's unit_forget_bias):
// each direction trains its own, and export gives the second a buffer of its own.
TEST(WhileLoops, TwoLoopsSharingABufferExportTheirOwnValues) {
  std::unique_ptr<fb::ModelT> t(fb::GetModel(file_bytes(kData + "/while_bilstm.tflite").data())->UnPack());
  // The bias each body adds (its ADD's constant [24]): the second body's reads the first's buffer.
  std::vector<std::pair<size_t, size_t>> biases;  // (subgraph, tensor)
  for (size_t g = 1; g < t->subgraphs.size(); ++g)
    for (const auto& tensor : t->subgraphs[g]->tensors)
      if (tensor->shape == std::vector<int32_t>{24} && tensor->buffer > 0)
        biases.push_back({g, static_cast<size_t>(&tensor - &t->subgraphs[g]->tensors[0])});
  ASSERT_EQ(biases.size(), 2u);
  const uint32_t shared = t->subgraphs[biases[0].first]->tensors[biases[0].second]->buffer;
  t->subgraphs[biases[1].first]->tensors[biases[1].second]->buffer = shared;
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fb::Model::Pack(fbb, t.get()), "TFL3");
  const std::vector<uint8_t> bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  Settings s;
  s.backends = {"cpu"};
  auto e = Engine::from_buffer(bytes, "shared_bias.tflite");
  e->set_settings(s);
  e->prepare();
  std::vector<int32_t> ids(8 * 10);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i * 3 % 50);
  std::vector<float> y(8 * 4, 0.0f);
  for (size_t i = 0; i < 8; ++i) y[i * 4 + i % 4] = 1.0f;
  e->set_input_int32(ids.data(), ids.size());
  e->set_expected(y.data(), y.size());
  e->train_step();
  const std::string path = ::testing::TempDir() + "shared_bias_exported.tflite";
  e->export_circle(path);
  const std::vector<uint8_t> out = file_bytes(path);
  std::remove(path.c_str());
  const fb::Model* m = fb::GetModel(out.data());
  const auto bias = [&](size_t k) {
    const fb::Tensor* x = m->subgraphs()
                              ->Get(static_cast<uint32_t>(biases[k].first))
                              ->tensors()
                              ->Get(static_cast<uint32_t>(biases[k].second));
    const fb::Buffer* b = m->buffers()->Get(x->buffer());
    return std::make_pair(x->buffer(), std::vector<uint8_t>(b->data()->begin(), b->data()->end()));
  };
  EXPECT_NE(bias(0).first, bias(1).first);
  EXPECT_NE(bias(0).second, bias(1).second);  // each direction's trained values
  EXPECT_EQ(bias(0).second.size(), 24u * 4u);
}

// nn.GRU through litert-torch: the first step's h_0 W_hh + b_hh (h_0 = 0) folded into three
// constants, b_hh's r, z and n parts each repeated for the 4 samples. They are read as those parts
// of b_hh, which trains through them; export writes them back from the trained b_hh.
TEST(FoldedBiases, AFirstStepsFoldedBiasIsReadAsThePartOfTheBias) {
  Settings s;
  s.backends = {"cpu"};
  s.batch_size = 4;
  auto e = Engine::from_file(kTorchData + "/gru.tflite");
  e->set_settings(s);
  e->prepare();
  const Model& m = e->model();
  EXPECT_EQ(change_of(m.rewrites, "folded-biases"),
            "read 3 constants that repeat a part of a FullyConnected's bias for every sample (a recurrent layer's "
            "first step, its zero-state product folded by the converter) as that part of the bias, trained with it");
  ASSERT_EQ(m.derived.size(), 3u);
  std::set<int32_t> sources;
  for (const DerivedConstant& d : m.derived) {
    sources.insert(d.source);
    EXPECT_EQ(d.count, 16);
    // No operator reads the folded constant any more.
    for (const Operator& op : m.operators)
      for (int32_t t : op.inputs) EXPECT_NE(t, d.tensor) << m.tensors[static_cast<size_t>(d.tensor)].name;
  }
  EXPECT_EQ(sources.size(), 1u);  // b_hh
  std::vector<float> x(4 * 6 * 8), y(4 * 3, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.1f;
  for (size_t i = 0; i < 4; ++i) y[i * 3 + i % 3] = 1.0f;
  e->set_input(x.data(), x.size());
  e->set_expected(y.data(), y.size());
  e->train_step();
  const std::string path = ::testing::TempDir() + "gru_folded_exported.tflite";
  e->export_circle(path);
  const Model out = load_model(path);
  std::remove(path.c_str());
  for (const DerivedConstant& d : m.derived) {
    const Tensor& c = out.tensors[static_cast<size_t>(d.tensor)];
    const Tensor& b = out.tensors[static_cast<size_t>(d.source)];
    const Tensor& before = m.tensors[static_cast<size_t>(d.source)];
    EXPECT_NE(std::memcmp(b.data.data(), before.data.data(), b.data.size()), 0) << "b_hh did not train";
    for (uint64_t r = 0; r < c.elements() / 16; ++r)
      EXPECT_EQ(std::memcmp(c.data.data() + r * 64, b.data.data() + static_cast<size_t>(d.offset) * 4, 64), 0)
          << c.name << " row " << r;
  }
}

// tf.while_loop stepping as many times as the input's sum says: refused in one line.
TEST(WhileLoops, neg_ALoopWhoseStepsTheDataDecidesIsRefused) {
  try {
    load_model(kData + "/while_data_steps.tflite");
    ADD_FAILURE() << "a data-dependent loop loaded";
  } catch (const ModelError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("(WHILE): its number of steps is not known at load"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_EQ(
      change_of(load_model_from_memory(write_model(plain_mlp().build(), "circle"), "mlp").rewrites, "while-loops"), "");
}

// Keras's Embedding(mask_zero=True) before an LSTM: the mask is NOT_EQUAL of the ids, carried into
// the loop, and a SELECT_V2 per carried value in the body. The mask becomes 0/1 floats from a fixed
// table (never trained), the selects c a + (1 - c) b; tests/keras trains it as Keras does.
TEST(Masks, AnEmbeddingsMaskIsAFixedGatherAndItsSelectsArithmetic) {
  Settings s;
  s.backends = {"cpu"};
  auto e = Engine::from_file(kData + "/while_masked_lstm.tflite");
  e->set_settings(s);
  e->prepare();
  const Model& m = e->model();
  EXPECT_EQ(change_of(m.rewrites, "masks"),
            "computed 1 NOT_EQUAL mask of an Embedding's ids as 0/1 floats (a GATHER from a fixed table)");
  EXPECT_NE(change_of(m.rewrites, "selects").find("SELECT_V2 operators of floats under a 0/1 mask"), std::string::npos);
  ASSERT_EQ(m.fixed_constants.size(), 1u);
  const Tensor& table = m.tensors[static_cast<size_t>(m.fixed_constants[0])];
  EXPECT_EQ(table.shape, (std::vector<int32_t>{12, 1}));
  float first = 1, second = 0;
  std::memcpy(&first, table.data.data(), 4);
  std::memcpy(&second, table.data.data() + 4, 4);
  EXPECT_EQ(first, 0.0f);  // id 0: masked
  EXPECT_EQ(second, 1.0f);
  const std::vector<std::string> trained = e->trained_weight_names();
  EXPECT_EQ(std::count(trained.begin(), trained.end(), table.name), 0) << "the mask's table trains";
  EXPECT_FALSE(trained.empty());
}

// Keras's LSTM(dropout=0.2): the converter keeps the SeedGenerator's state updates (CALL_ONCE of an
// initialising subgraph, VAR_HANDLE, and per draw READ_VARIABLE, an INT64 ADD, ASSIGN_VARIABLE),
// which reach no output: left out, their INT64 and RESOURCE tensors with them; the model trains.
TEST(StateUpdates, ADropoutLayersSeedUpdatesAreLeftOut) {
  Settings s;
  s.backends = {"cpu"};
  auto e = Engine::from_file(kData + "/dropout_lstm.tflite");
  e->set_settings(s);
  e->prepare();
  const std::string line = change_of(e->model().rewrites, "state-updates");
  EXPECT_NE(line.find("operators that only update a variable (a dropout layer's random seed"), std::string::npos)
      << line;
  EXPECT_EQ(change_of(e->model().rewrites, "while-loops"), "unrolled 1 WHILE loop (3 steps) into the main graph");
  std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6};
  std::vector<float> y = {1, 0, 0, 0, 1, 0};
  e->set_input_int32(ids.data(), ids.size());
  e->set_expected(y.data(), y.size());
  const double first = e->train_step();
  e->set_input_int32(ids.data(), ids.size());
  e->set_expected(y.data(), y.size());
  EXPECT_LT(e->train_step(), first);
}

// An operator cltrain does not have in a loop's body is named once, not once per step.
TEST(WhileLoops, neg_AnUnsupportedBodyOperatorIsNamedOnce) {
  std::unique_ptr<fb::ModelT> t(fb::GetModel(file_bytes(kData + "/while_simple_rnn.tflite").data())->UnPack());
  auto code = std::make_unique<fb::OperatorCodeT>();
  code->deprecated_builtin_code = 127;
  code->builtin_code = 128;  // CUMSUM
  t->operator_codes.push_back(std::move(code));
  int changed = 0;
  for (auto& op : t->subgraphs[2]->operators)
    if (t->operator_codes[op->opcode_index]->builtin_code == 3 ||
        t->operator_codes[op->opcode_index]->deprecated_builtin_code == 28) {  // TANH
      op->opcode_index = static_cast<uint32_t>(t->operator_codes.size() - 1);
      ++changed;
    }
  ASSERT_EQ(changed, 1);
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fb::Model::Pack(fbb, t.get()), "TFL3");
  try {
    load_model_from_memory(std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()),
                           "cumsum.tflite");
    ADD_FAILURE() << "an unsupported operator loaded";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("operator 5: CUMSUM (builtin 128) is not supported"), std::string::npos)
        << e.what();
  }
}

TEST(MissingBiases, AddedOnlyWhenAsked) {
  ModelBuilder b;
  const int x = b.input({1, 4});
  b.output(b.softmax(b.fully_connected(b.fully_connected(x, 5, CLTRAIN_ACT_RELU, false), 3, CLTRAIN_ACT_NONE, false)));
  Settings s;
  auto without = prepared(engine_of(b), s);
  EXPECT_TRUE(change_of(without->model().rewrites, "missing-biases").empty());
  ASSERT_EQ(without->warnings().size(), 1u);
  EXPECT_EQ(without->warnings()[0].rfind("2 FullyConnected/Conv2D/DepthwiseConv2D operators have no bias", 0), 0u);
  s.add_missing_biases = true;
  auto with = prepared(engine_of(b), s);
  EXPECT_EQ(change_of(with->model().rewrites, "missing-biases"), "added 2 zero biases");
  EXPECT_EQ(with->rewrites(), std::vector<std::string>{"missing-biases: added 2 zero biases"});
  for (const Operator& op : with->model().operators) {
    if (op.op != CLTRAIN_OP_FULLY_CONNECTED) continue;
    EXPECT_GE(op.inputs.at(2), 0);
  }
}

// An unrolled Keras SimpleRNN sums x_t W and h U per step, one layer with one bias. With its zero
// bias dropped, the 5 x_t W operators (one kernel) get one shared trained bias, as Keras's single
// bias; the h U ones none; the Dense its own: 6 operators, 2 biases. With the bias kept (fused
// into x_t W by the converter) nothing misses one.
TEST(MissingBiases, AnUnrolledRnnStepIsOneLayerWithOneBias) {
  Settings s;
  s.add_missing_biases = true;
  auto zero = prepared(Engine::from_file(kData + "/simple_rnn_zero_bias.tflite"), s);
  EXPECT_EQ(change_of(zero->model().rewrites, "missing-biases"), "added 6 zero biases");
  std::set<int32_t> biases;
  int without = 0;
  for (const Operator& op : zero->model().operators) {
    if (op.op != CLTRAIN_OP_FULLY_CONNECTED) continue;
    if (op.inputs.size() > 2 && op.inputs[2] >= 0)
      biases.insert(op.inputs[2]);
    else
      ++without;
  }
  EXPECT_EQ(biases.size(), 2u);
  EXPECT_EQ(without, 5);  // h U, steps 0 to 4
  auto kept = prepared(Engine::from_file(kData + "/simple_rnn_bias.tflite"), s);
  EXPECT_EQ(change_of(kept->model().rewrites, "missing-biases"), "");
  s.add_missing_biases = false;
  EXPECT_TRUE(prepared(Engine::from_file(kData + "/simple_rnn_bias.tflite"), s)->warnings().empty());
}

// A GRU with reset_after=False, unrolled over 3 steps: x_t W is split into the z, r, h gates,
// h U_zr sliced into z and r, (r h) U_h summed with the h part. Keras has one bias, on x_t W: the
// x_t W operators get one (shared), the recurrent ones none; and the Dense after them its own.
TEST(MissingBiases, AGruSummingPartsHasOneBiasOnItsInputSide) {
  Settings s;
  s.add_missing_biases = true;
  auto e = prepared(Engine::from_file(kData + "/gru_reset_before_zero_bias.tflite"), s);
  EXPECT_EQ(change_of(e->model().rewrites, "missing-biases"), "added 4 zero biases");
  std::map<int64_t, int> with_bias;  // by the FullyConnected's output width
  int without = 0;
  for (const Operator& op : e->model().operators) {
    if (op.op != CLTRAIN_OP_FULLY_CONNECTED) continue;
    if (op.inputs.size() > 2 && op.inputs[2] >= 0)
      ++with_bias[e->model().tensors[static_cast<size_t>(op.outputs[0])].shape.back()];
    else
      ++without;
  }
  EXPECT_EQ(with_bias, (std::map<int64_t, int>{{3, 1}, {12, 3}}));  // the Dense; x_t W of the 3 steps
  EXPECT_EQ(without, 6);                                            // h U_zr and (r h) U_h, 3 steps each
}

TEST(Lora, AdaptersBesideEachTrainedWeight) {
  Settings s;
  s.lora_rank = 2;
  auto e = prepared(engine_of(plain_mlp()), s);
  EXPECT_EQ(change_of(e->model().rewrites, "lora"), "added rank-2 adapters to 2 weights");
  EXPECT_EQ(count_op(e->model(), CLTRAIN_OP_FULLY_CONNECTED), 6u);  // 2 base + 2 x (A, B)
}

// PAD then a VALID convolution whose SAME padding is that pad: one SAME convolution in training.
TEST(PadFusion, PadFoldsIntoTheConvolution) {
  ModelBuilder b;
  const int x = b.input({1, 6, 6, 2});
  const int p = b.pad(x, {{{0, 0}}, {{1, 1}}, {{1, 1}}, {{0, 0}}});
  const int c = b.conv2d(p, 3, 3, 3, 1, CLTRAIN_PADDING_VALID, CLTRAIN_ACT_RELU);
  b.output(b.softmax(b.fully_connected(b.reshape(c, {-1, 108}), 4, CLTRAIN_ACT_NONE)));
  auto e = prepared(engine_of(b));
  EXPECT_EQ(e->rewrites(), std::vector<std::string>{"pad-fusion: fused 1 PAD into the convolution that reads it"});
  EXPECT_EQ(e->session().graph().folded_into.size(), 1u);
  EXPECT_TRUE(e->model().rewrites.empty());  // only the training graph's copy changed
  // Padded by 2: SAME pads 1; the PAD stays.
  ModelBuilder b2;
  const int x2 = b2.input({1, 6, 6, 2});
  const int c2 = b2.conv2d(b2.pad(x2, {{{0, 0}}, {{2, 2}}, {{2, 2}}, {{0, 0}}}), 3, 3, 3, 1, CLTRAIN_PADDING_VALID,
                           CLTRAIN_ACT_RELU);
  b2.output(b2.softmax(b2.fully_connected(b2.reshape(c2, {-1, 192}), 4, CLTRAIN_ACT_NONE)));
  EXPECT_TRUE(prepared(engine_of(b2))->rewrites().empty());
}

// Three Adam steps of a sequence model on one backend with the training passes `skip` names left
// out: the losses, every trained weight, the forward steps of `op` and the line of `pass`.
struct ThreeSteps {
  std::vector<float> losses;
  std::vector<std::vector<float>> trained;
  size_t steps_of_op = 0;
  std::string change;
  size_t launches = 0;  // forward and backward steps
};
ThreeSteps train_three_steps(const std::string& file, const char* backend, const char* skip, int32_t op,
                             const std::string& pass) {
  if (*skip) setenv("CLTRAIN_SKIP_TRAINING_PASSES", skip, 1);
  auto e = Engine::from_file(file);
  Settings s;
  s.backends = {backend};
  e->set_settings(s);
  e->prepare();
  unsetenv("CLTRAIN_SKIP_TRAINING_PASSES");
  ThreeSteps r;
  const TrainingGraph& g = e->session().graph();
  r.steps_of_op = static_cast<size_t>(std::count_if(g.steps.begin(), g.steps.begin() + g.num_forward,
                                                    [&](const cltrain_step_desc& st) { return st.op == op; }));
  r.launches = g.steps.size();
  r.change = change_of_lines(e->rewrites(), pass);
  EXPECT_TRUE(std::none_of(e->model().rewrites.begin(), e->model().rewrites.end(),
                           [&](const Rewrite& w) { return w.pass == pass; }));  // the model is unchanged
  const int64_t rows = e->batch();
  std::vector<int32_t> ids(static_cast<size_t>(rows) * e->input_size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i * 7 % 40);
  std::vector<float> y(static_cast<size_t>(rows) * e->output_size(), 0.0f);
  for (size_t i = 0; i < static_cast<size_t>(rows); ++i) y[i * e->output_size() + i % e->output_size()] = 1.0f;
  e->set_input_int32(ids.data(), ids.size());
  e->set_expected(y.data(), y.size());
  for (int k = 0; k < 3; ++k) r.losses.push_back(e->train_step());
  for (const std::string& w : e->trained_weight_names()) r.trained.push_back(e->weight(w));
  return r;
}

// The training passes that fuse: an LSTM's and a GRU's steps as TensorFlow's converter writes
// them become the cells of cltrain_ops.h, a SimpleRNN's standalone TANH the fused activation of
// its ADD, in the training graph only; the training is bitwise the unfused graph's (losses and
// every trained weight after 3 Adam steps), on the CPU and the OpenCL backend.
TEST(TrainingPasses, FusedGraphsTrainBitwiseAsUnfused) {
  struct Case {
    std::string file, pass, change;
    int32_t op;
    size_t fused, unfused;  // forward steps of op with and without the passes
  };
  const std::vector<Case> cases = {
      {kData + "/text_lstm.tflite", "lstm-cells", "fused 32 LSTM steps into a cell-state and a cell-output step each",
       CLTRAIN_OP_LSTM_CELL_STATE, 32, 0},
      {kData + "/while_bilstm.tflite", "lstm-cells",
       "fused 20 LSTM steps into a cell-state and a cell-output step each", CLTRAIN_OP_LSTM_CELL_OUTPUT, 20, 0},
      {kData + "/text_gru.tflite", "gru-cells", "fused 32 GRU steps into one cell step each", CLTRAIN_OP_GRU_CELL, 32,
       0},
      {kData + "/while_gru.tflite", "gru-cells", "fused 10 GRU steps into one cell step each", CLTRAIN_OP_GRU_CELL, 10,
       0},
      {kData + "/while_simple_rnn.tflite", "activation-fusion",
       "fused 10 standalone activations into the operator before each", CLTRAIN_OP_TANH, 0, 10},
  };
  for (const Case& c : cases)
    for (const char* backend : {"cpu", "opencl"}) {
      SCOPED_TRACE(c.file + " on " + backend);
      const ThreeSteps fused = train_three_steps(c.file, backend, "", c.op, c.pass);
      const ThreeSteps unfused =
          train_three_steps(c.file, backend, "lstm-cells,gru-cells,activation-fusion", c.op, c.pass);
      EXPECT_EQ(fused.steps_of_op, c.fused);
      EXPECT_EQ(unfused.steps_of_op, c.unfused);
      EXPECT_EQ(fused.change, c.change);
      EXPECT_EQ(unfused.change, "");
      EXPECT_EQ(fused.losses, unfused.losses);
      ASSERT_EQ(fused.trained.size(), unfused.trained.size());
      for (size_t w = 0; w < fused.trained.size(); ++w)
        EXPECT_TRUE(std::memcmp(fused.trained[w].data(), unfused.trained[w].data(), fused.trained[w].size() * 4) == 0)
            << w;
    }
}

// sequence-projections: the input projections of every step as one FullyConnected over the
// sequence (with the LSTM's bias as its bias) train as the per-step projections do, within
// rounding (dW summed over the steps in one GEMM, the bias added before the state's projection):
// losses and trained weights of 3 Adam steps within 1e-5, on the CPU and OpenCL, with fewer steps.
TEST(TrainingPasses, SequenceProjectionsTrainAsPerStepProjections) {
  struct Case {
    std::string file, change;
    size_t fcs, fcs_unfused;  // forward FullyConnected steps with and without the pass
  };
  const std::vector<Case> cases = {
      {kData + "/text_lstm.tflite",
       "projected the inputs of 32 recurrent steps in 1 FullyConnected over the sequence (with 1 shared bias)", 34, 65},
      {kData + "/text_gru.tflite", "projected the inputs of 32 recurrent steps in 1 FullyConnected over the sequence",
       34, 65},
      {kData + "/while_stacked.tflite",
       "projected the inputs of 10 recurrent steps in 1 FullyConnected over the sequence (with 1 shared bias)", 0, 0},
      {kData + "/while_simple_rnn.tflite",
       "projected the inputs of 10 recurrent steps in 1 FullyConnected over the sequence", 0, 0},
      {kData + "/while_bilstm.tflite",  // a Bidirectional layer: its two directions read one sequence
       "projected the inputs of 20 recurrent steps in 2 FullyConnecteds over the sequence (with 2 shared biases)", 0,
       0},
  };
  for (const Case& c : cases)
    for (const char* backend : {"cpu", "opencl"}) {
      SCOPED_TRACE(c.file + " on " + backend);
      const ThreeSteps batched =
          train_three_steps(c.file, backend, "", CLTRAIN_OP_FULLY_CONNECTED, "sequence-projections");
      const ThreeSteps per_step = train_three_steps(c.file, backend, "sequence-projections", CLTRAIN_OP_FULLY_CONNECTED,
                                                    "sequence-projections");
      EXPECT_EQ(batched.change, c.change);
      EXPECT_EQ(per_step.change, "");
      if (c.fcs) {
        EXPECT_EQ(batched.steps_of_op, c.fcs);
        EXPECT_EQ(per_step.steps_of_op, c.fcs_unfused);
      }
      EXPECT_LT(batched.launches, per_step.launches);
      ASSERT_EQ(batched.losses.size(), per_step.losses.size());
      for (size_t k = 0; k < batched.losses.size(); ++k)
        EXPECT_NEAR(batched.losses[k], per_step.losses[k], 1e-5 * std::fabs(per_step.losses[k])) << k;
      ASSERT_EQ(batched.trained.size(), per_step.trained.size());
      double worst = 0;
      for (size_t w = 0; w < batched.trained.size(); ++w)
        for (size_t i = 0; i < batched.trained[w].size(); ++i)
          worst = std::max(worst, std::fabs(static_cast<double>(batched.trained[w][i]) - per_step.trained[w][i]) /
                                      std::max(1.0, std::fabs(static_cast<double>(per_step.trained[w][i]))));
      EXPECT_LE(worst, 1e-5);
    }
}

// The whole sequence's projections and their gradient live at once: where that graph does not fit
// --memory_budget, the engine trains the per-step projections, with a warning, and says which
// least fits when neither does.
TEST(TrainingPasses, neg_SequenceProjectionsGiveWayToTheMemoryBudget) {
  const auto prepared_with = [](uint64_t budget) {
    auto e = Engine::from_file(kData + "/text_lstm.tflite");
    Settings s;
    s.backends = {"cpu"};
    s.batch_size = 8;
    s.memory_budget = budget;
    e->set_settings(s);
    e->prepare();
    return e;
  };
  const auto projected = [](const Engine& e) {
    return change_of_lines(e.rewrites(), "sequence-projections").rfind("projected the inputs of 32", 0) == 0;
  };
  const auto warned = [](const Engine& e) {
    return std::any_of(e.warnings().begin(), e.warnings().end(), [](const std::string& w) {
      return w.find("(sequence-projections) do not fit") != std::string::npos;
    });
  };
  auto roomy = prepared_with(4u << 20);
  EXPECT_TRUE(projected(*roomy));
  EXPECT_FALSE(warned(*roomy));
  auto tight = prepared_with(820u << 10);  // text_lstm at batch 8: 1,098 KB projected, 825 KB per step
  EXPECT_FALSE(projected(*tight));
  EXPECT_TRUE(warned(*tight));
  std::vector<int32_t> ids(8 * tight->input_size(), 3);
  std::vector<float> y(8 * tight->output_size(), 0.25f);
  tight->set_input_int32(ids.data(), ids.size());
  tight->set_expected(y.data(), y.size());
  EXPECT_TRUE(std::isfinite(tight->train_step()));
  try {
    prepared_with(300u << 10);
    ADD_FAILURE() << "a budget below the per-step graph's least prepared";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("below the least this model trains in"), std::string::npos) << e.what();
  }
}

// One LSTM step built by hand, its gates in the parts order (i, f, g, o) = `parts`; with
// `leak`, the input gate is also read by the output (the step then must stay unfused).
ModelBuilder lstm_step(std::array<int32_t, 4> parts, bool leak) {
  ModelBuilder b;
  const int x = b.input({2, 6});
  const int z = b.fully_connected(x, 16, CLTRAIN_ACT_NONE);
  const int c_prev = b.fully_connected(x, 4, CLTRAIN_ACT_NONE);
  int gate[4];
  for (int k = 0; k < 4; ++k) {
    const int part = b.slice(z, {0, 4 * parts[static_cast<size_t>(k)]}, {-1, 4});
    gate[k] = k == 2 ? b.tanh(part) : b.logistic(part);
  }
  const int c = b.add(b.mul(gate[1], c_prev), b.mul(gate[0], gate[2]));
  int h = b.mul(gate[3], b.tanh(c));
  if (leak) h = b.add(h, gate[0]);
  b.output(b.softmax(b.fully_connected(h, 3, CLTRAIN_ACT_NONE)));
  return b;
}

TEST(TrainingPasses, neg_AnLstmStepWhoseGateIsReadElsewhereStaysUnfused) {
  const auto cells = [](Engine& e) {
    const TrainingGraph& g = e.session().graph();
    return std::count_if(g.steps.begin(), g.steps.begin() + g.num_forward,
                         [](const cltrain_step_desc& st) { return st.op == CLTRAIN_OP_LSTM_CELL_STATE; });
  };
  // Parts in another order than Keras's: fused, the order in the params.
  auto e = prepared(engine_of(lstm_step({2, 0, 3, 1}, false)));
  EXPECT_EQ(cells(*e), 1);
  for (const cltrain_step_desc& st : e->session().graph().steps)
    if (st.op == CLTRAIN_OP_LSTM_CELL_OUTPUT) {
      EXPECT_EQ(std::vector<int32_t>(st.params.perm, st.params.perm + 4), (std::vector<int32_t>{2, 0, 3, 1}));
    }
  auto leaked = prepared(engine_of(lstm_step({0, 1, 2, 3}, true)));
  EXPECT_EQ(cells(*leaked), 0);
  EXPECT_EQ(change_of_lines(leaked->rewrites(), "lstm-cells"), "");
}

}  // namespace
}  // namespace cltrain
