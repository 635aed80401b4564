// The convolution-family ops in the model code: what the loader reads from options and operands,
// the builder's shapes and weights, the named CNN models and their figures, set_batch_size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "graph/builtin_names.h"
#include "test_util.h"

namespace cltrain {
namespace {

using test::find_operator;
using test::find_tensor;
using test::floats;
using test::int32s;
using ::testing::HasSubstr;

std::vector<int32_t> ops_of(const Model& m) {
  std::vector<int32_t> v;
  for (const Operator& op : m.operators) v.push_back(op.op);
  return v;
}

std::map<int32_t, int> op_counts(const Model& m) {
  std::map<int32_t, int> n;
  for (const Operator& op : m.operators) ++n[op.op];
  return n;
}

const Operator& op_writing(const Model& m, const std::string& output) {
  const int32_t i = find_operator(m, output);
  EXPECT_GE(i, 0) << output;
  return m.operators[static_cast<size_t>(std::max(i, 0))];
}

const Tensor& tensor_named(const Model& m, const std::string& name) {
  const int32_t i = find_tensor(m, name);
  EXPECT_GE(i, 0) << name;
  return m.tensors[static_cast<size_t>(std::max(i, 0))];
}

// How many operator inputs read each tensor.
std::vector<int> readers(const Model& m) {
  std::vector<int> n(m.tensors.size());
  for (const Operator& op : m.operators)
    for (int32_t t : op.inputs)
      if (t >= 0) ++n[static_cast<size_t>(t)];
  return n;
}

TEST(ModelCnn, MnistKaggleLayout) {
  const Model m = make_named_model("mnist-kaggle", 32);
  EXPECT_EQ(count_parameters(m), 484714u);
  EXPECT_EQ(test::parameter_bytes(m), 1938856u);
  EXPECT_EQ(ops_of(m),
            std::vector<int32_t>({CLTRAIN_OP_CONV_2D, CLTRAIN_OP_CONV_2D, CLTRAIN_OP_MAX_POOL_2D, CLTRAIN_OP_CONV_2D,
                                  CLTRAIN_OP_CONV_2D, CLTRAIN_OP_MAX_POOL_2D, CLTRAIN_OP_RESHAPE,
                                  CLTRAIN_OP_FULLY_CONNECTED, CLTRAIN_OP_FULLY_CONNECTED, CLTRAIN_OP_SOFTMAX}));
  const struct {
    const char* name;
    int k, filters;
    std::vector<int32_t> out;
  } convs[] = {{"conv1", 5, 32, {32, 28, 28, 32}},
               {"conv2", 5, 32, {32, 28, 28, 32}},
               {"conv3", 3, 64, {32, 14, 14, 64}},
               {"conv4", 3, 64, {32, 14, 14, 64}}};
  for (const auto& c : convs) {
    SCOPED_TRACE(c.name);
    const Operator& op = op_writing(m, c.name);
    EXPECT_EQ(op.params.padding, CLTRAIN_PADDING_SAME);
    EXPECT_EQ(op.params.stride_h, 1);
    EXPECT_EQ(op.params.stride_w, 1);
    EXPECT_EQ(op.params.dilation_h, 1);
    EXPECT_EQ(op.params.dilation_w, 1);
    EXPECT_EQ(op.params.activation, CLTRAIN_ACT_RELU);
    const Tensor& w = m.tensors[static_cast<size_t>(op.inputs[1])];
    EXPECT_EQ(w.shape[0], c.filters);
    EXPECT_EQ(w.shape[1], c.k);
    EXPECT_EQ(w.shape[2], c.k);
    EXPECT_EQ(tensor_named(m, c.name).shape, c.out);
  }
  for (const char* pool : {"pool1", "pool2"}) {
    const Operator& op = op_writing(m, pool);
    EXPECT_EQ(op.params.filter_h, 2);
    EXPECT_EQ(op.params.filter_w, 2);
    EXPECT_EQ(op.params.stride_h, 2);
    EXPECT_EQ(op.params.stride_w, 2);
  }
  EXPECT_EQ(tensor_named(m, "pool2").shape, std::vector<int32_t>({32, 7, 7, 64}));
  EXPECT_EQ(tensor_named(m, "flatten").shape, std::vector<int32_t>({32, 3136}));
  EXPECT_EQ(op_writing(m, "fc1").params.activation, CLTRAIN_ACT_RELU);
  EXPECT_EQ(op_writing(m, "fc2").params.activation, CLTRAIN_ACT_NONE);
  EXPECT_EQ(tensor_named(m, "softmax").shape, std::vector<int32_t>({32, 10}));
}

TEST(ModelCnn, MobileNetV2Figures) {
  const Model m = make_named_model("mobilenetv2", 10);
  EXPECT_EQ(count_parameters(m), 3487816u);
  EXPECT_EQ(test::parameter_bytes(m), 13951264u);
  // All forward activations: the input and every operator's output, Pad, Add and Mean included.
  EXPECT_EQ(test::activation_bytes(m), 361322240u);
  auto n = op_counts(m);
  EXPECT_EQ(n[CLTRAIN_OP_CONV_2D], 35);  // Conv1, 16 expansions, 17 projections, Conv_1
  EXPECT_EQ(n[CLTRAIN_OP_DEPTHWISE_CONV_2D], 17);
  EXPECT_EQ(n[CLTRAIN_OP_PAD], 4);
  EXPECT_EQ(n[CLTRAIN_OP_ADD], 10);
  EXPECT_EQ(n[CLTRAIN_OP_MEAN], 1);
  EXPECT_EQ(n[CLTRAIN_OP_FULLY_CONNECTED], 1);
  EXPECT_EQ(n[CLTRAIN_OP_SOFTMAX], 1);
  EXPECT_EQ(m.operators.size(), 69u);
  EXPECT_EQ(m.tensors[static_cast<size_t>(m.inputs[0])].shape, std::vector<int32_t>({10, 224, 224, 3}));
  EXPECT_EQ(m.tensors[static_cast<size_t>(m.outputs[0])].shape, std::vector<int32_t>({10, 1000}));

  const Operator& first = m.operators[0];
  EXPECT_EQ(first.op, CLTRAIN_OP_CONV_2D);
  EXPECT_EQ(first.params.stride_h, 2);
  EXPECT_EQ(first.params.padding, CLTRAIN_PADDING_SAME);
  EXPECT_EQ(tensor_named(m, "Conv1").shape, std::vector<int32_t>({10, 112, 112, 32}));

  for (size_t i = 0; i < m.operators.size(); ++i) {
    const Operator& op = m.operators[i];
    SCOPED_TRACE("operator " + std::to_string(i));
    switch (op.op) {
      case CLTRAIN_OP_CONV_2D: {
        const Tensor& w = m.tensors[static_cast<size_t>(op.inputs[1])];
        const bool project = m.tensors[static_cast<size_t>(op.outputs[0])].name.find("project") != std::string::npos;
        EXPECT_EQ(op.params.activation, project ? CLTRAIN_ACT_NONE : CLTRAIN_ACT_RELU6);
        if (i > 0) {
          EXPECT_EQ(w.shape[1] * w.shape[2], 1);  // 1x1 after the first
        }
        ASSERT_EQ(op.inputs.size(), 3u);  // batch norm folded: every conv has a bias
        break;
      }
      case CLTRAIN_OP_DEPTHWISE_CONV_2D: {
        EXPECT_EQ(op.params.activation, CLTRAIN_ACT_RELU6);
        EXPECT_EQ(op.params.depth_multiplier, 1);
        const Operator& prev = m.operators[i - 1];
        if (op.params.stride_h == 2) {  // Pad ((0,1),(0,1)) + VALID
          EXPECT_EQ(op.params.padding, CLTRAIN_PADDING_VALID);
          ASSERT_EQ(prev.op, CLTRAIN_OP_PAD);
          EXPECT_EQ(prev.outputs[0], op.inputs[0]);
          EXPECT_EQ(int32s(m.tensors[static_cast<size_t>(prev.inputs[1])]),
                    std::vector<int32_t>({0, 0, 0, 1, 0, 1, 0, 0}));
          const int32_t before[CLTRAIN_MAX_RANK] = {0, 0, 0, 0, 0, 0}, after[CLTRAIN_MAX_RANK] = {0, 1, 1, 0, 0, 0};
          EXPECT_EQ(0, std::memcmp(prev.params.pad_before, before, sizeof before));
          EXPECT_EQ(0, std::memcmp(prev.params.pad_after, after, sizeof after));
        } else {
          EXPECT_EQ(op.params.stride_h, 1);
          EXPECT_EQ(op.params.padding, CLTRAIN_PADDING_SAME);
          EXPECT_NE(prev.op, CLTRAIN_OP_PAD);
        }
        break;
      }
      case CLTRAIN_OP_ADD: {  // the block input plus the projection, same shape
        EXPECT_EQ(op.params.activation, CLTRAIN_ACT_NONE);
        EXPECT_EQ(m.tensors[static_cast<size_t>(op.inputs[0])].shape,
                  m.tensors[static_cast<size_t>(op.inputs[1])].shape);
        EXPECT_EQ(m.operators[i - 1].outputs[0], op.inputs[1]);
        break;
      }
      case CLTRAIN_OP_MEAN: {
        EXPECT_EQ(int32s(m.tensors[static_cast<size_t>(op.inputs[1])]), std::vector<int32_t>({1, 2}));
        EXPECT_EQ(op.params.axes_mask, 0b0110);
        EXPECT_EQ(op.params.keep_dims, 0);
        EXPECT_EQ(m.tensors[static_cast<size_t>(op.inputs[0])].shape, std::vector<int32_t>({10, 7, 7, 1280}));
        EXPECT_EQ(m.tensors[static_cast<size_t>(op.outputs[0])].shape, std::vector<int32_t>({10, 1280}));
        EXPECT_EQ(m.operators[i + 1].op, CLTRAIN_OP_FULLY_CONNECTED);
        break;
      }
      default: break;
    }
  }
  // Keras' names for the parts of a block.
  EXPECT_GE(find_tensor(m, "expanded_conv_depthwise"), 0);
  EXPECT_GE(find_tensor(m, "block_1_pad"), 0);
  EXPECT_GE(find_tensor(m, "block_2_add"), 0);
  EXPECT_GE(find_tensor(m, "block_16_project"), 0);
  EXPECT_EQ(tensor_named(m, "block_16_project").shape, std::vector<int32_t>({10, 7, 7, 320}));
}

TEST(ModelCnn, BranchedHasResidualAndSharedTensors) {
  const Model m = make_named_model("branched", 8);
  EXPECT_EQ(count_parameters(m), 9098u);
  EXPECT_EQ(m.tensors[static_cast<size_t>(m.inputs[0])].shape, std::vector<int32_t>({8, 28, 28, 1}));
  EXPECT_EQ(m.tensors[static_cast<size_t>(m.outputs[0])].shape, std::vector<int32_t>({8, 10}));
  const std::vector<int> n = readers(m);
  // The residual Add reads conv1's output, which the residual path's first conv reads too.
  const Operator& add = op_writing(m, "res/add");
  ASSERT_EQ(add.op, CLTRAIN_OP_ADD);
  EXPECT_EQ(add.params.activation, CLTRAIN_ACT_RELU);
  EXPECT_EQ(add.inputs[1], find_tensor(m, "conv1"));
  EXPECT_EQ(n[static_cast<size_t>(find_tensor(m, "conv1"))], 2);
  // Its output feeds a MaxPool and an AveragePool, concatenated on channels.
  EXPECT_EQ(n[static_cast<size_t>(find_tensor(m, "res/add"))], 2);
  const Operator& concat = op_writing(m, "concat");
  EXPECT_EQ(concat.params.axis, 3);
  EXPECT_EQ(tensor_named(m, "concat").shape, std::vector<int32_t>({8, 14, 14, 16}));
  EXPECT_EQ(op_writing(m, "maxpool1").op, CLTRAIN_OP_MAX_POOL_2D);
  EXPECT_EQ(op_writing(m, "avgpool1").op, CLTRAIN_OP_AVERAGE_POOL_2D);
  EXPECT_EQ(tensor_named(m, "flatten").shape, std::vector<int32_t>({8, 784}));
}

TEST(ModelCnn, CnnTinyHasEveryNewOp) {
  const Model m = make_named_model("cnn-tiny", 4);
  EXPECT_EQ(count_parameters(m), 570u);
  auto n = op_counts(m);
  for (int32_t op :
       {CLTRAIN_OP_CONV_2D, CLTRAIN_OP_DEPTHWISE_CONV_2D, CLTRAIN_OP_MAX_POOL_2D, CLTRAIN_OP_AVERAGE_POOL_2D,
        CLTRAIN_OP_MEAN, CLTRAIN_OP_PAD, CLTRAIN_OP_ADD, CLTRAIN_OP_SUB, CLTRAIN_OP_MUL, CLTRAIN_OP_DIV,
        CLTRAIN_OP_RELU6, CLTRAIN_OP_TANH, CLTRAIN_OP_LOGISTIC, CLTRAIN_OP_CONCATENATION})
    EXPECT_GE(n[op], 1) << cltrain_op_name(op);
  EXPECT_EQ(op_writing(m, "dwconv").params.depth_multiplier, 2);
  EXPECT_EQ(tensor_named(m, "dwconv").shape, std::vector<int32_t>({4, 7, 7, 16}));
  EXPECT_EQ(tensor_named(m, "gate_mean").shape, std::vector<int32_t>({4, 1, 1, 16}));
  EXPECT_EQ(tensor_named(m, "concat").shape, std::vector<int32_t>({4, 7, 7, 32}));
  EXPECT_EQ(m.tensors[static_cast<size_t>(m.outputs[0])].shape, std::vector<int32_t>({4, 10}));
}

// Glorot uniform: conv fan_in = KH*KW*I, fan_out = KH*KW*O; depthwise fan_in = KH*KW,
// fan_out = KH*KW*M. Biases zero.
TEST(ModelCnn, ConvWeightsGlorotUniform) {
  ModelBuilder b(5);
  int x = b.input({1, 10, 10, 6});
  x = b.conv2d(x, 16, 3, 5, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_NONE, 1, true, "c");
  x = b.depthwise_conv2d(x, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_NONE, 4, 1, true, "d");
  b.output(x);
  const Model m = b.build();
  const struct {
    const char* w;
    const char* bias;
    double fan_in, fan_out;
    std::vector<int32_t> shape;
  } layers[] = {{"c/weights", "c/bias", 3 * 5 * 6, 3 * 5 * 16, {16, 3, 5, 6}},
                {"d/weights", "d/bias", 3 * 3, 3 * 3 * 4, {1, 3, 3, 64}}};
  for (const auto& l : layers) {
    SCOPED_TRACE(l.w);
    const Tensor& wt = tensor_named(m, l.w);
    EXPECT_EQ(wt.shape, l.shape);
    const double limit = std::sqrt(6.0 / (l.fan_in + l.fan_out));
    double max_abs = 0, sum = 0;
    const std::vector<float> w = floats(wt);
    for (float v : w) {
      ASSERT_GE(v, -limit);
      ASSERT_LE(v, limit);
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(v)));
      sum += v;
    }
    EXPECT_GT(max_abs, 0.9 * limit);
    EXPECT_LT(std::fabs(sum / w.size()), 0.1 * limit);
    for (float v : floats(tensor_named(m, l.bias))) EXPECT_EQ(v, 0.0f);
  }
  // Same seed, same weights.
  const Model a = make_named_model("mnist-kaggle", 1), a2 = make_named_model("mnist-kaggle", 2);
  for (size_t i = 0; i < a.tensors.size(); ++i) EXPECT_TRUE(a.tensors[i].data == a2.tensors[i].data);
}

// What the loader takes from options and operands, with the values files from converters use.
TEST(ModelCnn, LoaderReadsOptionsAndOperands) {
  const Model built = test::every_op_model();
  const Model m = load_model_from_memory(write_model(built, "tflite"), "every-op.tflite");
  const Operator& conv = op_writing(m, "conv");
  EXPECT_EQ(conv.params.padding, CLTRAIN_PADDING_SAME);
  EXPECT_EQ(conv.params.dilation_h, 2);
  EXPECT_EQ(conv.params.dilation_w, 2);
  EXPECT_EQ(conv.params.stride_h, 1);
  EXPECT_EQ(conv.params.activation, CLTRAIN_ACT_RELU);
  const Operator& dw = op_writing(m, "dw");
  EXPECT_EQ(dw.params.padding, CLTRAIN_PADDING_VALID);
  EXPECT_EQ(dw.params.stride_w, 2);
  EXPECT_EQ(dw.params.depth_multiplier, 2);
  EXPECT_EQ(dw.params.activation, CLTRAIN_ACT_RELU6);
  const Operator& ap = op_writing(m, "avgpool");
  EXPECT_EQ(ap.params.filter_h, 3);
  EXPECT_EQ(ap.params.filter_w, 2);
  EXPECT_EQ(ap.params.stride_h, 2);
  EXPECT_EQ(op_writing(m, "concat").params.axis, 3);  // -1, made non-negative
  const Operator& mean = op_writing(m, "mean");
  EXPECT_EQ(int32s(m.tensors[static_cast<size_t>(mean.inputs[1])]), std::vector<int32_t>({-2}));
  EXPECT_EQ(mean.params.axes_mask, 0b0100);
  EXPECT_EQ(mean.params.keep_dims, 1);
  const Operator& pad = op_writing(m, "pad");
  EXPECT_EQ(pad.params.pad_before[1], 1);
  EXPECT_EQ(pad.params.pad_after[2], 2);
  EXPECT_EQ(pad.params.pad_after[1], 0);
  EXPECT_EQ(op_writing(m, "mul").params.activation, CLTRAIN_ACT_RELU_N1_TO_1);
  EXPECT_EQ(op_writing(m, "add").params.activation, CLTRAIN_ACT_TANH);
  EXPECT_EQ(op_writing(m, "div").params.activation, CLTRAIN_ACT_RELU6);
  EXPECT_EQ(op_writing(m, "sub").params.activation, CLTRAIN_ACT_NONE);
}

// Converters leave depth_multiplier 0 (the weights say it), give axes negative and in any order,
// and write arithmetic and Mean without options.
TEST(ModelCnn, LoaderNormalizesConverterForms) {
  const Model built = test::every_op_model();
  const int32_t dw = find_operator(built, "dw"), concat = find_operator(built, "concat"),
                mean = find_operator(built, "mean"), mul = find_operator(built, "mul");
  const std::vector<uint8_t> b = test::edit_raw(write_model(built, "tflite"), [&](fb::ModelT& fm) {
    auto& ops = fm.subgraphs[0]->operators;
    ops[static_cast<size_t>(dw)]->builtin_options.AsDepthwiseConv2DOptions()->depth_multiplier = 0;
    ops[static_cast<size_t>(concat)]->builtin_options.AsConcatenationOptions()->axis = -1;
    ops[static_cast<size_t>(mul)]->builtin_options.Reset();
    const int32_t axes = ops[static_cast<size_t>(mean)]->inputs[1];
    const int32_t buf = static_cast<int32_t>(fm.subgraphs[0]->tensors[static_cast<size_t>(axes)]->buffer);
    const int32_t two = 2;
    std::memcpy(fm.buffers[static_cast<size_t>(buf)]->data.data(), &two, 4);
  });
  const Model m = load_model_from_memory(b, "converted.tflite");
  EXPECT_EQ(m.operators[static_cast<size_t>(dw)].params.depth_multiplier, 2);
  EXPECT_EQ(m.operators[static_cast<size_t>(concat)].params.axis, 3);
  EXPECT_EQ(m.operators[static_cast<size_t>(mul)].params.activation, CLTRAIN_ACT_NONE);
  EXPECT_EQ(m.operators[static_cast<size_t>(mean)].params.axes_mask, 0b0100);

  ModelBuilder mb;
  int x = mb.input({2, 4, 5, 3});
  x = mb.mean(x, {2, -3, 1}, false, "m");  // repeated, negative
  mb.output(x);
  const Model mm = load_model_from_memory(write_model(mb.build(), "circle"), "m.circle");
  EXPECT_EQ(mm.operators[0].params.axes_mask, 0b0110);
  EXPECT_EQ(mm.tensors[static_cast<size_t>(mm.outputs[0])].shape, std::vector<int32_t>({2, 3}));
}

TEST(ModelCnn, BuilderShapes) {
  ModelBuilder b;
  const int x = b.input({3, 9, 8, 2});
  EXPECT_EQ(b.shape(b.conv2d(x, 4, 3, 3, 2, CLTRAIN_PADDING_SAME, 0)), std::vector<int32_t>({3, 5, 4, 4}));
  EXPECT_EQ(b.shape(b.conv2d(x, 4, 3, 3, 2, CLTRAIN_PADDING_VALID, 0)), std::vector<int32_t>({3, 4, 3, 4}));
  EXPECT_EQ(b.shape(b.conv2d(x, 4, 3, 3, 1, CLTRAIN_PADDING_VALID, 0, 3)), std::vector<int32_t>({3, 3, 2, 4}));
  EXPECT_EQ(b.shape(b.depthwise_conv2d(x, 2, 2, 3, CLTRAIN_PADDING_SAME, 0, 3)), std::vector<int32_t>({3, 3, 3, 6}));
  EXPECT_EQ(b.shape(b.max_pool2d(x, 2, 2, 2, CLTRAIN_PADDING_VALID)), std::vector<int32_t>({3, 4, 4, 2}));
  EXPECT_EQ(b.shape(b.avg_pool2d(x, 3, 3, 2, CLTRAIN_PADDING_SAME)), std::vector<int32_t>({3, 5, 4, 2}));
  EXPECT_EQ(b.shape(b.mean(x, {1, 2}, true)), std::vector<int32_t>({3, 1, 1, 2}));
  EXPECT_EQ(b.shape(b.pad(x, {{{0, 0}}, {{2, 1}}, {{0, 3}}, {{1, 1}}})), std::vector<int32_t>({3, 12, 11, 4}));
  EXPECT_EQ(b.shape(b.concat({x, x, x}, 2)), std::vector<int32_t>({3, 9, 24, 2}));
  const int one = b.mean(x, {2}, true);
  EXPECT_EQ(b.shape(b.mul(x, one)), std::vector<int32_t>({3, 9, 8, 2}));
  EXPECT_EQ(b.shape(b.div(one, x)), std::vector<int32_t>({3, 9, 8, 2}));
  EXPECT_THROW(b.conv2d(x, 4, 10, 3, 1, CLTRAIN_PADDING_VALID, 0), std::invalid_argument);
  EXPECT_THROW(b.conv2d(x, 4, 3, 3, 0, CLTRAIN_PADDING_SAME, 0), std::invalid_argument);
  EXPECT_THROW(b.max_pool2d(b.mean(x, {1}, false), 2, 2, 2, CLTRAIN_PADDING_SAME), std::invalid_argument);
  EXPECT_THROW(b.add(x, b.mean(x, {1}, false)), std::invalid_argument);
  EXPECT_THROW(b.add(x, b.pad(x, {{{0, 0}}, {{0, 1}}, {{0, 0}}, {{0, 0}}})), std::invalid_argument);
  EXPECT_THROW(b.concat({x, b.mean(x, {1}, true)}, 3), std::invalid_argument);
  EXPECT_THROW(b.concat({x}, 4), std::invalid_argument);
  EXPECT_THROW(b.mean(x, {4}, true), std::invalid_argument);
  EXPECT_THROW(b.pad(x, {{{0, 0}}}), std::invalid_argument);
}

// set_batch_size on the CNN models: the batch flows through Reshape targets, Pad, Mean, Concat;
// the result is what the builder makes at that batch.
// The checks of this session's ops refuse what no kernel can compute: a LEAKY_RELU's non-finite
// alpha, TILE multiples below 1 or of another rank, a MAXIMUM of shapes that do not broadcast, a
// SUM over an axis x does not have.
TEST(ModelCnn, neg_BuilderRefusesBadOperands) {
  ModelBuilder b;
  const int x = b.input({2, 3, 4});
  for (float alpha : {NAN, INFINITY}) {
    cltrain_op_params p{};
    p.alpha = alpha;
    EXPECT_THROW(b.op(CLTRAIN_OP_LEAKY_RELU, {x}, p), std::invalid_argument) << alpha;
  }
  EXPECT_THROW(b.tile(x, {1, 0, 2}), std::invalid_argument);
  EXPECT_THROW(b.tile(x, {1, 2}), std::invalid_argument);
  EXPECT_THROW(b.op(CLTRAIN_OP_MAXIMUM, {x, b.input({2, 4, 3})}), std::invalid_argument);
  EXPECT_THROW(b.reduce(CLTRAIN_OP_SUM, x, {3}, false), std::invalid_argument);
  EXPECT_EQ(b.shape(b.tile(x, {1, 2, 3})), (std::vector<int32_t>{2, 6, 12}));
}

TEST(ModelCnn, SetBatchSizeOnNamedModels) {
  for (const std::string& name : named_models()) {
    SCOPED_TRACE(name);
    Model m = make_named_model(name, 7);
    set_batch_size(m, 3);
    const Model direct = make_named_model(name, 3);
    ASSERT_EQ(m.tensors.size(), direct.tensors.size());
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      EXPECT_EQ(m.tensors[i].shape, direct.tensors[i].shape) << m.tensors[i].name;
      EXPECT_TRUE(m.tensors[i].data == direct.tensors[i].data) << m.tensors[i].name;
    }
    EXPECT_NO_THROW(load_model_from_memory(write_model(m, "circle"), name));
  }
  // A Reshape target that names the batch follows it.
  ModelBuilder b;
  int x = b.input({2, 4, 4, 1});
  x = b.conv2d(x, 2, 3, 3, 1, CLTRAIN_PADDING_SAME, 0);
  x = b.reshape(x, {2, 32}, "flat");
  b.output(x);
  Model m = b.build();
  set_batch_size(m, 5);
  EXPECT_EQ(int32s(tensor_named(m, "flat/shape")), std::vector<int32_t>({5, 32}));
}

TEST(ModelCnn, SetBatchSizeKeepsPerSampleOps) {
  // Mean over the batch axis works at the model's own batch, and set_batch_size to that batch
  // changes nothing.
  ModelBuilder b;
  int x = b.input({2, 3, 4});
  b.output(b.softmax(b.mean(x, {0}, true)));
  Model m = b.build();
  EXPECT_NO_THROW(set_batch_size(m, 2));
}

}  // namespace
}  // namespace cltrain
