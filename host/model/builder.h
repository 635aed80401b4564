// Building models in code (tests, `cltrain make-model`) and writing any Model as circle/tflite.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "atomic_file.h"  // save_file_atomic (common)
#include "model/model.h"

namespace cltrain {

// Builds a Model op by op. Weights are Glorot-uniform from a fixed-seed generator, biases zero,
// so the same calls with the same seed give the same model. Methods return tensor indices.
class ModelBuilder {
 public:
  explicit ModelBuilder(uint32_t seed = 42);

  // A model input; shape[0] is the batch. dtype CLTRAIN_INT32: token ids (for embedding()).
  int input(std::vector<int32_t> shape, std::string name = "input", int32_t dtype = CLTRAIN_FLOAT32);

  // A Keras Embedding: GATHER of the int32 ids from a [rows, width] table of Glorot-uniform
  // values (NAME/table); the output is ids' shape followed by width. ("embeddingK")
  int embedding(int ids, int rows, int width, std::string name = "");

  // y = activation(x W^T + b), W [units, in] where in is x's last dimension; x is viewed as
  // [N, in]. Tensors: NAME/weights, NAME/bias, NAME (the output); NAME defaults to "fcK".
  int fully_connected(int x, int units, int activation, bool bias = true, std::string name = "");

  int relu(int x, std::string name = "");

  // new_shape may hold one -1 (inferred). Writes an INT32 constant shape operand as the
  // second input, as the TFLite converter does.
  int reshape(int x, std::vector<int32_t> new_shape, std::string name = "");

  int softmax(int x, float beta = 1.0f, std::string name = "");

  // Convolution of x [N,H,W,I]: W [filters,kh,kw,I], bias [filters]; padding a cltrain_padding,
  // the same stride and dilation along H and W. Glorot-uniform weights with fan_in = kh*kw*I,
  // fan_out = kh*kw*filters. Tensors NAME/weights, NAME/bias, NAME ("convK").
  int conv2d(int x, int filters, int kh, int kw, int stride, int padding, int activation, int dilation = 1,
             bool bias = true, std::string name = "");

  // Transposed convolution of x [N,H,W,I] to [N,out_h,out_w,filters] (Keras Conv2DTranspose):
  // the file's operands output_shape (INT32 [4], NAME/output_shape), W [filters,kh,kw,I]
  // (Glorot-uniform as conv2d's), optional bias [filters]. ("tconvK")
  int transpose_conv(int x, int filters, int kh, int kw, int stride, int padding, int activation, int out_h, int out_w,
                     bool bias = true, std::string name = "");

  // RESIZE_BILINEAR or RESIZE_NEAREST_NEIGHBOR (op) of x [N,H,W,C] to [N,out_h,out_w,C], the size
  // an INT32 constant [2] operand NAME/size. ("resizeK")
  int resize(int32_t op, int x, int out_h, int out_w, bool align_corners, bool half_pixel_centers,
             std::string name = "");

  // Depthwise convolution: W [1,kh,kw,I*multiplier], output channel c*multiplier+j reads input
  // channel c. Glorot-uniform with fan_in = kh*kw, fan_out = kh*kw*multiplier. ("dwconvK")
  int depthwise_conv2d(int x, int kh, int kw, int stride, int padding, int activation, int multiplier = 1,
                       int dilation = 1, bool bias = true, std::string name = "");

  // Pools over fh x fw windows of x [N,H,W,C]. ("maxpoolK", "avgpoolK")
  int max_pool2d(int x, int fh, int fw, int stride, int padding, std::string name = "");
  int avg_pool2d(int x, int fh, int fw, int stride, int padding, std::string name = "");

  // Mean over axes (negative ones count from the end), written as an INT32 constant axes
  // operand [len(axes)] as the converter does. ("meanK")
  int mean(int x, std::vector<int32_t> axes, bool keep_dims, std::string name = "");
  // MEAN, REDUCE_MAX or REDUCE_MIN (op) over axes.
  int reduce(int32_t op, int x, std::vector<int32_t> axes, bool keep_dims, std::string name = "");

  // Zero padding: paddings[d] = {before, after} for each axis d of x, written as an INT32
  // constant [rank,2] operand NAME/paddings. ("padK")
  int pad(int x, std::vector<std::array<int32_t, 2>> paddings, std::string name = "");
  // PADV2: value (any float) around x.
  int padv2(int x, std::vector<std::array<int32_t, 2>> paddings, float value, std::string name = "");

  // The box of x from begin, size elements along each axis (-1: to the end), written as INT32
  // constant [rank] operands NAME/begin and NAME/size. ("sliceK")
  int slice(int x, std::vector<int32_t> begin, std::vector<int32_t> size, std::string name = "");

  // A tensor of shape dims (the batch first), every element value: NAME/dims (INT32 [rank]) and
  // NAME/value (a FLOAT32 scalar) as its constant operands. ("fillK")
  int fill(std::vector<int32_t> dims, float value, std::string name = "");

  // y's axis d is x's axis perm[d], written as an INT32 constant [rank] operand NAME/perm.
  // ("transposeK")
  int transpose(int x, std::vector<int32_t> perm, std::string name = "");
  // y = x repeated multiples[d] times along each axis d, the multiples an INT32 constant [rank]
  // operand NAME/multiples. ("tileK")
  int tile(int x, std::vector<int32_t> multiples, std::string name = "");

  // y = activation(a op b), numpy broadcasting between equal ranks. ("addK", "subK", ...)
  int add(int a, int b, int activation = CLTRAIN_ACT_NONE, std::string name = "");
  int sub(int a, int b, int activation = CLTRAIN_ACT_NONE, std::string name = "");
  int mul(int a, int b, int activation = CLTRAIN_ACT_NONE, std::string name = "");
  int div(int a, int b, int activation = CLTRAIN_ACT_NONE, std::string name = "");

  int relu6(int x, std::string name = "");
  int tanh(int x, std::string name = "");
  int logistic(int x, std::string name = "");

  // Concatenation along axis (negative counts from the end). ("concatK")
  int concat(std::vector<int> inputs, int axis, std::string name = "");

  // Any model op of the op list: its output gets the shape the op's descriptor computes from
  // the inputs and params (std::invalid_argument where they do not fit). NAME defaults to the
  // op's name in lower case and a number ("hardswish1").
  int op(int32_t op, std::vector<int32_t> inputs, cltrain_op_params params = {}, std::string name = "");

  void output(int t);

  // Shape of tensor t.
  const std::vector<int32_t>& shape(int t) const;

  // The model exactly as load_model would return it (format "circle", no file bytes);
  // constant tensors get buffers 1, 2, ... in tensor order.
  Model build() const;

 private:
  int add_tensor(std::string name, std::vector<int32_t> shape, int32_t dtype = CLTRAIN_FLOAT32);
  // A constant float tensor of Glorot-uniform values in [-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).
  int glorot_tensor(std::string name, std::vector<int32_t> shape, int64_t fan_in, int64_t fan_out);
  int zeros_tensor(std::string name, int32_t n);
  int int32_tensor(std::string name, std::vector<int32_t> shape, const std::vector<int32_t>& values);
  int pool(int32_t pool_op, const char* prefix, int x, int fh, int fw, int stride, int padding, std::string name);
  int binary(int32_t binary_op, const char* prefix, int a, int b, int activation, std::string name);
  std::string auto_name(const std::string& given, const char* prefix);
  const Tensor& tensor(int t) const;

  Model model_;
  std::mt19937 rng_;
  std::map<std::string, int> counters_;  // for default names: fc1, fc2, relu1, ...
};

// Serializes any Model, valid or not (tests write broken ones on purpose), as "circle" (CIR0)
// or "tflite" (TFL3). Buffer 0 is the empty buffer; a constant tensor keeps its buffer index
// (or gets a new one if it has none) and the buffer list is as long as the largest such index.
// Each operator's builtin code and options come from its descriptor; ops that are not model ops
// throw std::invalid_argument.
std::vector<uint8_t> write_model(const Model& m, const std::string& format);

// Benchmark models by name, batch first (builder.cc describes each). Unknown names throw
// ModelError listing the known ones.
Model make_named_model(const std::string& name, int32_t batch);

// The names make_named_model knows.
std::vector<std::string> named_models();

// Number of elements of all constant float32 tensors (the model's parameters).
uint64_t count_parameters(const Model& m);

}  // namespace cltrain
