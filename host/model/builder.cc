// ModelBuilder and the named benchmark models.
#include "model/builder.h"

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

int ModelBuilder::fully_connected(int x, int units, int activation, bool bias, std::string name) {
  const std::vector<int32_t> xs = tensor(x).shape;
  if (xs.empty() || units < 1) throw std::invalid_argument("ModelBuilder::fully_connected: bad shape");
  const int32_t fan_in = xs.back();
  name = auto_name(name, "fc");

  // Glorot (Xavier) uniform in [-limit, limit). Drawn from raw mt19937 output rather than
  // std::uniform_real_distribution so that the weights are the same with every standard library.
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + units));
  std::vector<float> w(static_cast<size_t>(fan_in) * static_cast<size_t>(units));
  for (float& v : w) {
    const float u = static_cast<float>(rng_() >> 8) * (1.0f / 16777216.0f);  // [0, 1)
    v = -limit + 2.0f * limit * u;
  }
  const int wt = add_tensor(name + "/weights", {units, fan_in});
  auto& wd = model_.tensors[static_cast<size_t>(wt)].data;
  wd.resize(w.size() * sizeof(float));
  std::memcpy(wd.data(), w.data(), wd.size());

  int32_t bt = -1;
  if (bias) {
    bt = add_tensor(name + "/bias", {units});
    model_.tensors[static_cast<size_t>(bt)].data.assign(static_cast<size_t>(units) * sizeof(float), 0);
  }
  std::vector<int32_t> ys = xs;
  ys.back() = units;
  const int y = add_tensor(name, ys);
  cltrain_op_params p{};
  p.activation = activation;
  return add_op(CLTRAIN_OP_FULLY_CONNECTED,
                bias ? std::vector<int32_t>{x, wt, bt} : std::vector<int32_t>{x, wt}, y, p);
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

void ModelBuilder::output(int t) {
  tensor(t);
  model_.outputs.push_back(t);
}

Model ModelBuilder::build() const {
  Model m = model_;
  m.format = "circle";
  int32_t next = 1;
  for (Tensor& t : m.tensors) t.buffer = t.is_constant() ? next++ : 0;
  return m;
}

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

struct Named {
  const char* name;
  Model (*make)(int32_t batch);
};

// Add new benchmark models here (mnist-kaggle and mobilenetv2 once their ops exist).
const Named kNamed[] = {
    {"mlp", make_mlp},
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
