// ModelBuilder and the named benchmark models.
#include "model/builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "model/model_internal.h"

namespace cltrain {

ModelBuilder::ModelBuilder(uint32_t seed) : rng_(seed) {}

const Tensor& ModelBuilder::tensor(int t) const {
  if (t < 0 || static_cast<size_t>(t) >= model_.tensors.size())
    throw std::invalid_argument("ModelBuilder: no tensor " + std::to_string(t));
  return model_.tensors[static_cast<size_t>(t)];
}

std::string ModelBuilder::auto_name(const std::string& given, const char* prefix) {
  return given.empty() ? prefix + std::to_string(++counters_[prefix]) : given;
}

int ModelBuilder::add_tensor(std::string name, std::vector<int32_t> shape, int32_t dtype) {
  Tensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.dtype = dtype;
  model_.tensors.push_back(std::move(t));
  return static_cast<int>(model_.tensors.size() - 1);
}

int ModelBuilder::add_op(int32_t op, std::vector<int32_t> inputs, int output, cltrain_op_params params) {
  Operator o;
  o.op = op;
  o.inputs = std::move(inputs);
  o.outputs = {output};
  o.params = params;
  model_.operators.push_back(std::move(o));
  return output;
}

int ModelBuilder::input(std::vector<int32_t> shape, std::string name) {
  const int t = add_tensor(std::move(name), std::move(shape));
  model_.inputs.push_back(t);
  return t;
}

int ModelBuilder::glorot_tensor(std::string name, std::vector<int32_t> shape, int64_t fan_in, int64_t fan_out) {
  // Glorot (Xavier) uniform in [-limit, limit). Drawn from raw mt19937 output rather than
  // std::uniform_real_distribution so that the weights are the same with every standard library.
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  const int t = add_tensor(std::move(name), std::move(shape));
  Tensor& w = model_.tensors[static_cast<size_t>(t)];
  std::vector<float> v(static_cast<size_t>(w.elements()));
  for (float& x : v) {
    const float u = static_cast<float>(rng_() >> 8) * (1.0f / 16777216.0f);  // [0, 1)
    x = -limit + 2.0f * limit * u;
  }
  w.data.resize(v.size() * sizeof(float));
  std::memcpy(w.data.data(), v.data(), w.data.size());
  return t;
}

int ModelBuilder::zeros_tensor(std::string name, int32_t n) {
  const int t = add_tensor(std::move(name), {n});
  model_.tensors[static_cast<size_t>(t)].data.assign(static_cast<size_t>(n) * sizeof(float), 0);
  return t;
}

int ModelBuilder::int32_tensor(std::string name, std::vector<int32_t> shape, const std::vector<int32_t>& values) {
  const int t = add_tensor(std::move(name), std::move(shape), CLTRAIN_INT32);
  auto& d = model_.tensors[static_cast<size_t>(t)].data;
  d.resize(values.size() * sizeof(int32_t));
  std::memcpy(d.data(), values.data(), d.size());
  return t;
}

int ModelBuilder::fully_connected(int x, int units, int activation, bool bias, std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  if (xs.empty() || units < 1) throw std::invalid_argument("ModelBuilder::fully_connected: bad shape");
  const int32_t fan_in = xs.back();
  name = auto_name(name, "fc");
  const int wt = glorot_tensor(name + "/weights", {units, fan_in}, fan_in, units);
  const int bt = bias ? zeros_tensor(name + "/bias", units) : -1;
  std::vector<int32_t> ys = xs;
  ys.back() = units;
  const int y = add_tensor(name, ys);
  cltrain_op_params p{};
  p.activation = activation;
  return add_op(CLTRAIN_OP_FULLY_CONNECTED,
                bias ? std::vector<int32_t>{x, wt, bt} : std::vector<int32_t>{x, wt}, y, p);
}

namespace {

// Spatial output size, or std::invalid_argument naming the method.
int32_t window_size(const char* method, int32_t in, int filter, int stride, int dilation, int padding) {
  const int64_t n = detail::window_out_size(in, filter, stride, dilation, padding);
  if (n < 1) throw std::invalid_argument(std::string("ModelBuilder::") + method + ": window does not fit");
  return static_cast<int32_t>(n);
}

}  // namespace

int ModelBuilder::conv2d(int x, int filters, int kh, int kw, int stride, int padding, int activation,
                         int dilation, bool bias, std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  if (xs.size() != 4 || filters < 1) throw std::invalid_argument("ModelBuilder::conv2d: bad shape");
  const int32_t in = xs[3];
  const int32_t oh = window_size("conv2d", xs[1], kh, stride, dilation, padding);
  const int32_t ow = window_size("conv2d", xs[2], kw, stride, dilation, padding);
  name = auto_name(name, "conv");
  const int64_t area = int64_t{kh} * kw;
  const int wt = glorot_tensor(name + "/weights", {filters, kh, kw, in}, area * in, area * filters);
  const int bt = bias ? zeros_tensor(name + "/bias", filters) : -1;
  const int y = add_tensor(name, {xs[0], oh, ow, filters});
  cltrain_op_params p{};
  p.activation = activation;
  p.padding = padding;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  return add_op(CLTRAIN_OP_CONV_2D, bias ? std::vector<int32_t>{x, wt, bt} : std::vector<int32_t>{x, wt}, y, p);
}

int ModelBuilder::depthwise_conv2d(int x, int kh, int kw, int stride, int padding, int activation, int multiplier,
                                   int dilation, bool bias, std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  if (xs.size() != 4 || multiplier < 1) throw std::invalid_argument("ModelBuilder::depthwise_conv2d: bad shape");
  const int32_t channels = xs[3] * multiplier;
  const int32_t oh = window_size("depthwise_conv2d", xs[1], kh, stride, dilation, padding);
  const int32_t ow = window_size("depthwise_conv2d", xs[2], kw, stride, dilation, padding);
  name = auto_name(name, "dwconv");
  const int64_t area = int64_t{kh} * kw;
  const int wt = glorot_tensor(name + "/weights", {1, kh, kw, channels}, area, area * multiplier);
  const int bt = bias ? zeros_tensor(name + "/bias", channels) : -1;
  const int y = add_tensor(name, {xs[0], oh, ow, channels});
  cltrain_op_params p{};
  p.activation = activation;
  p.padding = padding;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  p.depth_multiplier = multiplier;
  return add_op(CLTRAIN_OP_DEPTHWISE_CONV_2D, bias ? std::vector<int32_t>{x, wt, bt} : std::vector<int32_t>{x, wt},
                y, p);
}

int ModelBuilder::pool(int32_t op, const char* prefix, int x, int fh, int fw, int stride, int padding,
                       std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  if (xs.size() != 4) throw std::invalid_argument(std::string("ModelBuilder::") + prefix + "2d: bad shape");
  const int32_t oh = window_size(prefix, xs[1], fh, stride, 1, padding);
  const int32_t ow = window_size(prefix, xs[2], fw, stride, 1, padding);
  cltrain_op_params p{};
  p.padding = padding;
  p.stride_h = p.stride_w = stride;
  p.filter_h = fh;
  p.filter_w = fw;
  return add_op(op, {x}, add_tensor(auto_name(name, prefix), {xs[0], oh, ow, xs[3]}), p);
}

int ModelBuilder::max_pool2d(int x, int fh, int fw, int stride, int padding, std::string name) {
  return pool(CLTRAIN_OP_MAX_POOL_2D, "maxpool", x, fh, fw, stride, padding, std::move(name));
}

int ModelBuilder::avg_pool2d(int x, int fh, int fw, int stride, int padding, std::string name) {
  return pool(CLTRAIN_OP_AVERAGE_POOL_2D, "avgpool", x, fh, fw, stride, padding, std::move(name));
}

int ModelBuilder::mean(int x, std::vector<int32_t> axes, bool keep_dims, std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  const int32_t rank = static_cast<int32_t>(xs.size());
  cltrain_op_params p{};
  p.keep_dims = keep_dims ? 1 : 0;
  for (int32_t a : axes) {
    if (a < -rank || a >= rank) throw std::invalid_argument("ModelBuilder::mean: axis out of range");
    p.axes_mask |= 1 << (a < 0 ? a + rank : a);
  }
  std::vector<int32_t> ys;
  for (int32_t d = 0; d < rank; ++d) {
    if (!(p.axes_mask & (1 << d))) ys.push_back(xs[static_cast<size_t>(d)]);
    else if (keep_dims) ys.push_back(1);
  }
  name = auto_name(name, "mean");
  const int at = int32_tensor(name + "/axes", {static_cast<int32_t>(axes.size())}, axes);
  return add_op(CLTRAIN_OP_MEAN, {x, at}, add_tensor(name, ys), p);
}

int ModelBuilder::pad(int x, std::vector<std::array<int32_t, 2>> paddings, std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  if (paddings.size() != xs.size() || xs.size() > CLTRAIN_MAX_RANK)
    throw std::invalid_argument("ModelBuilder::pad: one {before, after} per axis");
  cltrain_op_params p{};
  std::vector<int32_t> ys = xs, values;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (paddings[d][0] < 0 || paddings[d][1] < 0) throw std::invalid_argument("ModelBuilder::pad: negative");
    p.pad_before[d] = paddings[d][0];
    p.pad_after[d] = paddings[d][1];
    ys[d] += paddings[d][0] + paddings[d][1];
    values.push_back(paddings[d][0]);
    values.push_back(paddings[d][1]);
  }
  name = auto_name(name, "pad");
  const int pt = int32_tensor(name + "/paddings", {static_cast<int32_t>(xs.size()), 2}, values);
  return add_op(CLTRAIN_OP_PAD, {x, pt}, add_tensor(name, ys), p);
}

int ModelBuilder::binary(int32_t op, const char* prefix, int a, int b, int activation, std::string name) {
  const std::vector<int32_t> as = tensor(a).shape, bs = tensor(b).shape;
  if (as.size() != bs.size()) throw std::invalid_argument(std::string("ModelBuilder::") + prefix + ": ranks differ");
  std::vector<int32_t> ys(as.size());
  for (size_t d = 0; d < as.size(); ++d) {
    if (as[d] != bs[d] && as[d] != 1 && bs[d] != 1)
      throw std::invalid_argument(std::string("ModelBuilder::") + prefix + ": shapes do not broadcast");
    ys[d] = std::max(as[d], bs[d]);
  }
  cltrain_op_params p{};
  p.activation = activation;
  return add_op(op, {a, b}, add_tensor(auto_name(name, prefix), ys), p);
}

int ModelBuilder::add(int a, int b, int activation, std::string name) {
  return binary(CLTRAIN_OP_ADD, "add", a, b, activation, std::move(name));
}
int ModelBuilder::sub(int a, int b, int activation, std::string name) {
  return binary(CLTRAIN_OP_SUB, "sub", a, b, activation, std::move(name));
}
int ModelBuilder::mul(int a, int b, int activation, std::string name) {
  return binary(CLTRAIN_OP_MUL, "mul", a, b, activation, std::move(name));
}
int ModelBuilder::div(int a, int b, int activation, std::string name) {
  return binary(CLTRAIN_OP_DIV, "div", a, b, activation, std::move(name));
}

int ModelBuilder::unary(int32_t op, const char* prefix, int x, std::string name) {
  const std::vector<int32_t> shape = tensor(x).shape;
  return add_op(op, {x}, add_tensor(auto_name(name, prefix), shape));
}

int ModelBuilder::relu6(int x, std::string name) { return unary(CLTRAIN_OP_RELU6, "relu6", x, std::move(name)); }
int ModelBuilder::tanh(int x, std::string name) { return unary(CLTRAIN_OP_TANH, "tanh", x, std::move(name)); }
int ModelBuilder::logistic(int x, std::string name) {
  return unary(CLTRAIN_OP_LOGISTIC, "logistic", x, std::move(name));
}

int ModelBuilder::concat(std::vector<int> inputs, int axis, std::string name) {
  if (inputs.empty() || inputs.size() > CLTRAIN_MAX_STEP_IO)
    throw std::invalid_argument("ModelBuilder::concat: 1 to 8 inputs");
  std::vector<int32_t> ys = tensor(inputs[0]).shape;
  const int rank = static_cast<int>(ys.size());
  if (axis < -rank || axis >= rank) throw std::invalid_argument("ModelBuilder::concat: axis out of range");
  if (axis < 0) axis += rank;
  const size_t ax = static_cast<size_t>(axis);
  ys[ax] = 0;
  for (int t : inputs) {
    const std::vector<int32_t>& s = tensor(t).shape;
    for (size_t d = 0; d < ys.size(); ++d)
      if (s.size() != ys.size() || (d != ax && s[d] != ys[d]))
        throw std::invalid_argument("ModelBuilder::concat: shapes differ off the axis");
    ys[ax] += s[ax];
  }
  cltrain_op_params p{};
  p.axis = axis;
  return add_op(CLTRAIN_OP_CONCATENATION, std::vector<int32_t>(inputs.begin(), inputs.end()),
                add_tensor(auto_name(name, "concat"), ys), p);
}

int ModelBuilder::relu(int x, std::string name) {
  const std::vector<int32_t> shape = tensor(x).shape;
  return add_op(CLTRAIN_OP_RELU, {x}, add_tensor(auto_name(name, "relu"), shape));
}

int ModelBuilder::reshape(int x, std::vector<int32_t> new_shape, std::string name) {
  const uint64_t total = tensor(x).elements();
  uint64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < new_shape.size(); ++i) {
    if (new_shape[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (new_shape[i] < 1) {
      throw std::invalid_argument("ModelBuilder::reshape: bad target shape");
    } else {
      known *= static_cast<uint64_t>(new_shape[i]);
    }
  }
  std::vector<int32_t> out = new_shape;
  if (infer >= 0) out[static_cast<size_t>(infer)] = static_cast<int32_t>(total / known);
  if (total % known != 0 || (infer < 0 && known != total))
    throw std::invalid_argument("ModelBuilder::reshape: element counts differ");

  name = auto_name(name, "reshape");
  const int s = add_tensor(name + "/shape", {static_cast<int32_t>(new_shape.size())}, CLTRAIN_INT32);
  auto& sd = model_.tensors[static_cast<size_t>(s)].data;
  sd.resize(new_shape.size() * sizeof(int32_t));
  std::memcpy(sd.data(), new_shape.data(), sd.size());
  return add_op(CLTRAIN_OP_RESHAPE, {x, s}, add_tensor(name, out));
}

int ModelBuilder::softmax(int x, float beta, std::string name) {
  const std::vector<int32_t> shape = tensor(x).shape;
  cltrain_op_params p{};
  p.beta = beta;
  return add_op(CLTRAIN_OP_SOFTMAX, {x}, add_tensor(auto_name(name, "softmax"), shape), p);
}

const std::vector<int32_t>& ModelBuilder::shape(int t) const { return tensor(t).shape; }

void ModelBuilder::output(int t) {
  tensor(t);
  model_.outputs.push_back(t);
}

Model ModelBuilder::build() const {
  Model m = model_;
  m.format = "circle";
  int32_t next = 1;
  for (Tensor& t : m.tensors) t.buffer = t.is_constant() ? next++ : 0;
  detail::check_graph(m, "ModelBuilder");  // what the loader would say of it (and its params)
  return m;
}

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
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
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
  const int a = b.add(b.max_pool2d(u, 3, 3, 1, CLTRAIN_PADDING_SAME, "maxpool"),
                      b.avg_pool2d(u, 3, 3, 1, CLTRAIN_PADDING_SAME, "avgpool"), CLTRAIN_ACT_RELU, "pools");
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
    {"mlp", make_mlp},
    {"mnist-kaggle", make_mnist_kaggle},
    {"mobilenetv2", make_mobilenetv2},
    {"branched", make_branched},
    {"cnn-tiny", make_cnn_tiny},
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
  throw ModelError("unknown model '" + detail::printable(name) + "' (known: " + known + ")");
}

uint64_t count_parameters(const Model& m) {
  uint64_t n = 0;
  for (const Tensor& t : m.tensors)
    if (t.is_constant() && t.dtype == CLTRAIN_FLOAT32) n += t.elements();
  return n;
}

}  // namespace cltrain
