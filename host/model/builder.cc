// ModelBuilder: models op by op, each output shaped by its op's descriptor.
#include "model/builder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "graph/labels.h"
#include "model/graph_check.h"
#include "ops/op_descriptor.h"

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

int ModelBuilder::op(int32_t op, std::vector<int32_t> inputs, cltrain_op_params params, std::string name) {
  std::string prefix = find_op(op) ? find_op(op)->name : "op";
  for (char& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const int y = add_tensor(auto_name(name, prefix.c_str()), {});
  Operator o;
  o.op = op;
  o.inputs = std::move(inputs);
  o.outputs = {y};
  o.params = params;
  model_.operators.push_back(std::move(o));
  try {
    infer_output_shape(model_, model_.operators.size() - 1, "ModelBuilder");
  } catch (const ModelError& e) {
    model_.operators.pop_back();
    model_.tensors.pop_back();
    throw std::invalid_argument(e.what());
  }
  return y;
}

int ModelBuilder::input(std::vector<int32_t> shape, std::string name, int32_t dtype) {
  const int t = add_tensor(std::move(name), std::move(shape), dtype);
  model_.inputs.push_back(t);
  return t;
}

int ModelBuilder::embedding(int ids, int rows, int width, std::string name) {
  name = auto_name(name, "embedding");
  const int table = glorot_tensor(name + "/table", {rows, width}, rows, width);
  return op(CLTRAIN_OP_GATHER, {table, ids}, {}, name);
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
  cltrain_op_params p{};
  p.activation = activation;
  return op(CLTRAIN_OP_FULLY_CONNECTED, bias ? std::vector<int32_t>{x, wt, bt} : std::vector<int32_t>{x, wt}, p, name);
}

namespace {

cltrain_op_params window_params(int stride, int padding, int activation, int dilation) {
  cltrain_op_params p{};
  p.activation = activation;
  p.padding = padding;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

}  // namespace

int ModelBuilder::conv2d(int x, int filters, int kh, int kw, int stride, int padding, int activation, int dilation,
                         bool bias, std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  if (xs.size() != 4 || filters < 1) throw std::invalid_argument("ModelBuilder::conv2d: bad shape");
  const int32_t in = xs[3];
  name = auto_name(name, "conv");
  const int64_t area = int64_t{kh} * kw;
  const int wt = glorot_tensor(name + "/weights", {filters, kh, kw, in}, area * in, area * filters);
  const int bt = bias ? zeros_tensor(name + "/bias", filters) : -1;
  return op(CLTRAIN_OP_CONV_2D, bias ? std::vector<int32_t>{x, wt, bt} : std::vector<int32_t>{x, wt},
            window_params(stride, padding, activation, dilation), name);
}

int ModelBuilder::transpose_conv(int x, int filters, int kh, int kw, int stride, int padding, int activation, int out_h,
                                 int out_w, bool bias, std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  if (xs.size() != 4 || filters < 1) throw std::invalid_argument("ModelBuilder::transpose_conv: bad shape");
  name = auto_name(name, "tconv");
  const int64_t area = int64_t{kh} * kw;
  const int st = int32_tensor(name + "/output_shape", {4}, {xs[0], out_h, out_w, filters});
  const int wt = glorot_tensor(name + "/weights", {filters, kh, kw, xs[3]}, area * xs[3], area * filters);
  std::vector<int32_t> inputs{st, wt, x};
  if (bias) inputs.push_back(zeros_tensor(name + "/bias", filters));
  return op(CLTRAIN_OP_TRANSPOSE_CONV, inputs, window_params(stride, padding, activation, 1), name);
}

int ModelBuilder::resize(int32_t resize_op, int x, int out_h, int out_w, bool align_corners, bool half_pixel_centers,
                         std::string name) {
  name = auto_name(name, "resize");
  const int st = int32_tensor(name + "/size", {2}, {out_h, out_w});
  cltrain_op_params p{};
  p.align_corners = align_corners;
  p.half_pixel_centers = half_pixel_centers;
  return op(resize_op, {x, st}, p, name);
}

int ModelBuilder::depthwise_conv2d(int x, int kh, int kw, int stride, int padding, int activation, int multiplier,
                                   int dilation, bool bias, std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  if (xs.size() != 4 || multiplier < 1) throw std::invalid_argument("ModelBuilder::depthwise_conv2d: bad shape");
  const int32_t channels = xs[3] * multiplier;
  name = auto_name(name, "dwconv");
  const int64_t area = int64_t{kh} * kw;
  const int wt = glorot_tensor(name + "/weights", {1, kh, kw, channels}, area, area * multiplier);
  const int bt = bias ? zeros_tensor(name + "/bias", channels) : -1;
  cltrain_op_params p = window_params(stride, padding, activation, dilation);
  p.depth_multiplier = multiplier;
  return op(CLTRAIN_OP_DEPTHWISE_CONV_2D, bias ? std::vector<int32_t>{x, wt, bt} : std::vector<int32_t>{x, wt}, p,
            name);
}

int ModelBuilder::pool(int32_t pool_op, const char* prefix, int x, int fh, int fw, int stride, int padding,
                       std::string name) {
  cltrain_op_params p{};
  p.padding = padding;
  p.stride_h = p.stride_w = stride;
  p.filter_h = fh;
  p.filter_w = fw;
  return op(pool_op, {x}, p, auto_name(name, prefix));
}

int ModelBuilder::max_pool2d(int x, int fh, int fw, int stride, int padding, std::string name) {
  return pool(CLTRAIN_OP_MAX_POOL_2D, "maxpool", x, fh, fw, stride, padding, std::move(name));
}

int ModelBuilder::avg_pool2d(int x, int fh, int fw, int stride, int padding, std::string name) {
  return pool(CLTRAIN_OP_AVERAGE_POOL_2D, "avgpool", x, fh, fw, stride, padding, std::move(name));
}

int ModelBuilder::mean(int x, std::vector<int32_t> axes, bool keep_dims, std::string name) {
  return reduce(CLTRAIN_OP_MEAN, x, std::move(axes), keep_dims, std::move(name));
}

int ModelBuilder::reduce(int32_t reduction, int x, std::vector<int32_t> axes, bool keep_dims, std::string name) {
  cltrain_op_params p{};
  p.keep_dims = keep_dims ? 1 : 0;
  name = auto_name(name, reduction == CLTRAIN_OP_MEAN ? "mean" : "reduce");
  const int at = int32_tensor(name + "/axes", {static_cast<int32_t>(axes.size())}, axes);
  return op(reduction, {x, at}, p, name);
}

int ModelBuilder::pad(int x, std::vector<std::array<int32_t, 2>> paddings, std::string name) {
  std::vector<int32_t> values;
  for (const auto& before_after : paddings) values.insert(values.end(), before_after.begin(), before_after.end());
  name = auto_name(name, "pad");
  const int pt = int32_tensor(name + "/paddings", {static_cast<int32_t>(paddings.size()), 2}, values);
  return op(CLTRAIN_OP_PAD, {x, pt}, {}, name);
}

int ModelBuilder::padv2(int x, std::vector<std::array<int32_t, 2>> paddings, float value, std::string name) {
  std::vector<int32_t> values;
  for (const auto& before_after : paddings) values.insert(values.end(), before_after.begin(), before_after.end());
  name = auto_name(name, "padv2");
  const int pt = int32_tensor(name + "/paddings", {static_cast<int32_t>(paddings.size()), 2}, values);
  const int vt = add_tensor(name + "/value", {});
  model_.tensors[static_cast<size_t>(vt)].data.resize(sizeof(float));
  std::memcpy(model_.tensors[static_cast<size_t>(vt)].data.data(), &value, sizeof(float));
  return op(CLTRAIN_OP_PADV2, {x, pt, vt}, {}, name);
}

int ModelBuilder::slice(int x, std::vector<int32_t> begin, std::vector<int32_t> size, std::string name) {
  name = auto_name(name, "slice");
  const int bt = int32_tensor(name + "/begin", {static_cast<int32_t>(begin.size())}, begin);
  const int st = int32_tensor(name + "/size", {static_cast<int32_t>(size.size())}, size);
  return op(CLTRAIN_OP_SLICE, {x, bt, st}, {}, name);
}

int ModelBuilder::fill(std::vector<int32_t> dims, float value, std::string name) {
  name = auto_name(name, "fill");
  const int dt = int32_tensor(name + "/dims", {static_cast<int32_t>(dims.size())}, dims);
  const int vt = add_tensor(name + "/value", {});
  model_.tensors[static_cast<size_t>(vt)].data.resize(sizeof(float));
  std::memcpy(model_.tensors[static_cast<size_t>(vt)].data.data(), &value, sizeof(float));
  return op(CLTRAIN_OP_FILL, {dt, vt}, {}, name);
}

int ModelBuilder::transpose(int x, std::vector<int32_t> perm, std::string name) {
  name = auto_name(name, "transpose");
  const int pt = int32_tensor(name + "/perm", {static_cast<int32_t>(perm.size())}, perm);
  return op(CLTRAIN_OP_TRANSPOSE, {x, pt}, {}, name);
}

int ModelBuilder::tile(int x, std::vector<int32_t> multiples, std::string name) {
  name = auto_name(name, "tile");
  const int mt = int32_tensor(name + "/multiples", {static_cast<int32_t>(multiples.size())}, multiples);
  return op(CLTRAIN_OP_TILE, {x, mt}, {}, name);
}

int ModelBuilder::binary(int32_t binary_op, const char* prefix, int a, int b, int activation, std::string name) {
  cltrain_op_params p{};
  p.activation = activation;
  return op(binary_op, {a, b}, p, auto_name(name, prefix));
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

int ModelBuilder::relu(int x, std::string name) { return op(CLTRAIN_OP_RELU, {x}, {}, auto_name(name, "relu")); }
int ModelBuilder::relu6(int x, std::string name) { return op(CLTRAIN_OP_RELU6, {x}, {}, auto_name(name, "relu6")); }
int ModelBuilder::tanh(int x, std::string name) { return op(CLTRAIN_OP_TANH, {x}, {}, auto_name(name, "tanh")); }
int ModelBuilder::logistic(int x, std::string name) {
  return op(CLTRAIN_OP_LOGISTIC, {x}, {}, auto_name(name, "logistic"));
}

int ModelBuilder::concat(std::vector<int> inputs, int axis, std::string name) {
  if (inputs.empty()) throw std::invalid_argument("ModelBuilder::concat: no inputs");
  cltrain_op_params p{};
  p.axis = axis;
  return op(CLTRAIN_OP_CONCATENATION, std::vector<int32_t>(inputs.begin(), inputs.end()), p, auto_name(name, "concat"));
}

// The shape operand as the TFLite converter writes it: an INT32 constant.
int ModelBuilder::reshape(int x, std::vector<int32_t> new_shape, std::string name) {
  name = auto_name(name, "reshape");
  const int s = int32_tensor(name + "/shape", {static_cast<int32_t>(new_shape.size())}, new_shape);
  return op(CLTRAIN_OP_RESHAPE, {x, s}, {}, name);
}

int ModelBuilder::softmax(int x, float beta, std::string name) {
  cltrain_op_params p{};
  p.beta = beta;
  return op(CLTRAIN_OP_SOFTMAX, {x}, p, auto_name(name, "softmax"));
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
  check_graph(m, "ModelBuilder");  // what the loader would say of it (and its params)
  return m;
}

}  // namespace cltrain
