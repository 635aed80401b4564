// The named benchmark models (`cltrain make-model NAME`), built with ModelBuilder.
#include "graph/labels.h"
#include "model/builder.h"

namespace cltrain {

// The named benchmark models (`cltrain make-model NAME`). Layouts, figures and the published
// numbers they compare with are in docs (shared/reference/models.md); tests/model asserts the
// parameter counts and activation bytes stated here. Every model takes a batch B as the first
// dimension, NHWC float32; the convolution-family models take Fashion-MNIST's [B,28,28,1] (except
// mobilenetv2) and end in FullyConnected 10 + Softmax.
//
//  mlp           [B,784] -> FC 128 ReLU -> FC 10 -> Softmax. 101,770 parameters.
//  mnist-kaggle  [B,28,28,1] -> Conv 32 5x5 SAME ReLU -> Conv 32 5x5 SAME ReLU -> MaxPool 2x2/2
//                -> Conv 64 3x3 SAME ReLU -> Conv 64 3x3 SAME ReLU -> MaxPool 2x2/2
//                -> Reshape [-1,3136] -> FC 128 ReLU -> FC 10 -> Softmax. 484,714 parameters
//                (1,938,856 bytes); the "mnist" model of onert's training work.
//  mobilenetv2   MobileNetV2 1.0, [B,224,224,3], 1000 classes, as Keras lays it out and the TFLite
//                converter converts it (batch norm folded into conv biases, ReLU6 fused): Conv 3x3/2
//                SAME 32; inverted residual blocks (t,c,n,s) = (1,16,1,1) (6,24,2,2) (6,32,3,2)
//                (6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1), each [Conv 1x1 -> in*t ReLU6 if t != 1]
//                -> [Pad ((0,1),(0,1)) + DepthwiseConv 3x3/2 VALID, or DepthwiseConv 3x3/1 SAME] ReLU6
//                -> Conv 1x1 -> c (linear) [-> Add the block input if stride 1 and in = c]; Conv 1x1
//                1280 ReLU6 -> Mean over H,W (axes [1,2], keep_dims false) -> FC 1000 -> Softmax.
//                Keras' layer names. 3,487,816 parameters (13,951,264 bytes); the non-constant
//                tensors (input, every op's output) take 361,322,240 bytes at B = 10.
//  branched      [B,28,28,1] -> Conv 8 3x3 SAME ReLU = t; t -> Conv 8 3x3 SAME ReLU -> Conv 8 3x3 SAME
//                (linear) = u; Add(u, t) ReLU = r (residual); r -> MaxPool 2x2/2 and r -> AvgPool
//                2x2/2, Concatenation on channels [B,14,14,16] -> MaxPool 2x2/2 -> Reshape [-1,784]
//                -> FC 10 -> Softmax. 9,098 parameters. A residual Add and tensors read by two ops
//                (t, r), for the gradient accumulation of the training graph.
//  cnn-tiny      [B,28,28,1], every op of the convolution work once, small and cheap:
//                Conv 8 3x3/2 SAME ReLU6 [B,14,14,8] -> Pad ((0,1),(0,1)) -> DepthwiseConv 3x3/2 VALID
//                x2 = d [B,7,7,16]; g = Mul(Tanh(d), Logistic(d)); m = Mean(Logistic(d), axes [1,2],
//                keep_dims) [B,1,1,16]; q = Div(g, m) (broadcast); u = Sub(q, ReLU6(d)); a = Add(
//                MaxPool 3x3/1 SAME (u), AvgPool 3x3/1 SAME (u)) ReLU; Concatenation(a, u) on channels
//                [B,7,7,32] -> Mean over H,W -> FC 10 -> Softmax. 570 parameters.
namespace {

Model make_mlp(int32_t batch) {
  ModelBuilder b;
  int x = b.input({batch, 784}, "input");
  x = b.fully_connected(x, 128, CLTRAIN_ACT_RELU, true, "fc1");
  x = b.fully_connected(x, 10, CLTRAIN_ACT_NONE, true, "fc2");
  x = b.softmax(x, 1.0f, "softmax");
  b.output(x);
  return b.build();
}

Model make_mnist_kaggle(int32_t batch) {
  ModelBuilder b;
  int x = b.input({batch, 28, 28, 1}, "input");
  x = b.conv2d(x, 32, 5, 5, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "conv1");
  x = b.conv2d(x, 32, 5, 5, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "conv2");
  x = b.max_pool2d(x, 2, 2, 2, CLTRAIN_PADDING_VALID, "pool1");
  x = b.conv2d(x, 64, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "conv3");
  x = b.conv2d(x, 64, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "conv4");
  x = b.max_pool2d(x, 2, 2, 2, CLTRAIN_PADDING_VALID, "pool2");
  x = b.reshape(x, {-1, 3136}, "flatten");
  x = b.fully_connected(x, 128, CLTRAIN_ACT_RELU, true, "fc1");
  x = b.fully_connected(x, 10, CLTRAIN_ACT_NONE, true, "fc2");
  b.output(b.softmax(x, 1.0f, "softmax"));
  return b.build();
}

Model make_mobilenetv2(int32_t batch) {
  ModelBuilder b;
  int x = b.input({batch, 224, 224, 3}, "input_1");
  x = b.conv2d(x, 32, 3, 3, 2, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU6, 1, true, "Conv1");
  struct Stage {
    int t, c, n, s;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int block = 0;
  for (const Stage& st : stages) {
    for (int i = 0; i < st.n; ++i, ++block) {
      const int stride = i == 0 ? st.s : 1;
      const int32_t in = b.shape(x)[3];
      const std::string prefix = block == 0 ? "expanded_conv_" : "block_" + std::to_string(block) + "_";
      int y = x;
      if (st.t != 1)
        y = b.conv2d(y, in * st.t, 1, 1, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU6, 1, true, prefix + "expand");
      if (stride == 2) {
        y = b.pad(y, {{{0, 0}}, {{0, 1}}, {{0, 1}}, {{0, 0}}}, prefix + "pad");
        y = b.depthwise_conv2d(y, 3, 3, 2, CLTRAIN_PADDING_VALID, CLTRAIN_ACT_RELU6, 1, 1, true, prefix + "depthwise");
      } else {
        y = b.depthwise_conv2d(y, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU6, 1, 1, true, prefix + "depthwise");
      }
      y = b.conv2d(y, st.c, 1, 1, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_NONE, 1, true, prefix + "project");
      if (stride == 1 && in == st.c) y = b.add(x, y, CLTRAIN_ACT_NONE, prefix + "add");
      x = y;
    }
  }
  x = b.conv2d(x, 1280, 1, 1, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU6, 1, true, "Conv_1");
  x = b.mean(x, {1, 2}, false, "global_average_pooling2d");
  x = b.fully_connected(x, 1000, CLTRAIN_ACT_NONE, true, "predictions");
  b.output(b.softmax(x, 1.0f, "softmax"));
  return b.build();
}

Model make_branched(int32_t batch) {
  ModelBuilder b;
  const int x = b.input({batch, 28, 28, 1}, "input");
  const int t = b.conv2d(x, 8, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "conv1");
  int u = b.conv2d(t, 8, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU, 1, true, "res/conv1");
  u = b.conv2d(u, 8, 3, 3, 1, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_NONE, 1, true, "res/conv2");
  const int r = b.add(u, t, CLTRAIN_ACT_RELU, "res/add");
  const int mp = b.max_pool2d(r, 2, 2, 2, CLTRAIN_PADDING_VALID, "maxpool1");
  const int ap = b.avg_pool2d(r, 2, 2, 2, CLTRAIN_PADDING_VALID, "avgpool1");
  int y = b.concat({mp, ap}, 3, "concat");
  y = b.max_pool2d(y, 2, 2, 2, CLTRAIN_PADDING_VALID, "maxpool2");
  y = b.reshape(y, {-1, 784}, "flatten");
  y = b.fully_connected(y, 10, CLTRAIN_ACT_NONE, true, "fc");
  b.output(b.softmax(y, 1.0f, "softmax"));
  return b.build();
}

Model make_cnn_tiny(int32_t batch) {
  ModelBuilder b;
  int x = b.input({batch, 28, 28, 1}, "input");
  x = b.conv2d(x, 8, 3, 3, 2, CLTRAIN_PADDING_SAME, CLTRAIN_ACT_RELU6, 1, true, "conv");
  x = b.pad(x, {{{0, 0}}, {{0, 1}}, {{0, 1}}, {{0, 0}}}, "pad");
  const int d = b.depthwise_conv2d(x, 3, 3, 2, CLTRAIN_PADDING_VALID, CLTRAIN_ACT_NONE, 2, 1, true, "dwconv");
  const int s = b.logistic(d, "gate");
  const int g = b.mul(b.tanh(d, "tanh"), s, CLTRAIN_ACT_NONE, "gated");
  const int m = b.mean(s, {1, 2}, true, "gate_mean");
  const int q = b.div(g, m, CLTRAIN_ACT_NONE, "normalized");
  const int u = b.sub(q, b.relu6(d, "relu6"), CLTRAIN_ACT_NONE, "diff");
  // One op per statement: the order of a call's arguments is the compiler's (GCC on x86-64 made
  // the average pool first, on aarch64 the max pool), and the model must be the same everywhere.
  const int avg = b.avg_pool2d(u, 3, 3, 1, CLTRAIN_PADDING_SAME, "avgpool");
  const int max = b.max_pool2d(u, 3, 3, 1, CLTRAIN_PADDING_SAME, "maxpool");
  const int a = b.add(max, avg, CLTRAIN_ACT_RELU, "pools");
  int y = b.concat({a, u}, -1, "concat");
  y = b.mean(y, {1, 2}, false, "global_mean");
  y = b.fully_connected(y, 10, CLTRAIN_ACT_NONE, true, "fc");
  b.output(b.softmax(y, 1.0f, "softmax"));
  return b.build();
}

struct Named {
  const char* name;
  Model (*make)(int32_t batch);
};

// Add new benchmark models here, and describe them above.
const Named kNamed[] = {
    {"mlp", make_mlp},           {"mnist-kaggle", make_mnist_kaggle}, {"mobilenetv2", make_mobilenetv2},
    {"branched", make_branched}, {"cnn-tiny", make_cnn_tiny},
};

}  // namespace

std::vector<std::string> named_models() {
  std::vector<std::string> names;
  for (const Named& n : kNamed) names.push_back(n.name);
  return names;
}

Model make_named_model(const std::string& name, int32_t batch) {
  if (batch < 1) throw ModelError("batch size " + std::to_string(batch) + " must be at least 1");
  for (const Named& n : kNamed)
    if (name == n.name) return n.make(batch);
  std::string known;
  for (const Named& n : kNamed) known += (known.empty() ? "" : ", ") + std::string(n.name);
  throw ModelError("unknown model '" + graph::printable(name) + "' (known: " + known + ")");
}

uint64_t count_parameters(const Model& m) {
  uint64_t n = 0;
  for (const Tensor& t : m.tensors)
    if (t.is_constant() && t.dtype == CLTRAIN_FLOAT32) n += t.elements();
  return n;
}

}  // namespace cltrain
