#include "model/model_edits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

bool is_float_constant(const Tensor& t) { return t.is_constant() && t.dtype == CLTRAIN_FLOAT32; }

// All values the same: what an initializer (zeros, ones) gives, and so what a converter may have
// merged between layers that never shared it.
bool uniform(const Tensor& t) {
  if (t.data.size() < 8) return true;
  for (size_t i = 4; i < t.data.size(); i += 4)
    if (std::memcmp(t.data.data(), t.data.data() + i, 4) != 0) return false;
  return true;
}

int32_t append_tensor(Model& m, Tensor t) {
  t.buffer = 0;
  t.file_offset = -1;
  m.tensors.push_back(std::move(t));
  return static_cast<int32_t>(m.tensors.size() - 1);
}

}  // namespace

std::string untie_merged_constants(Model& m) {
  // Readers of each float32 constant: (operator, input slot).
  std::map<int32_t, std::vector<std::pair<size_t, size_t>>> readers;
  for (size_t i = 0; i < m.operators.size(); ++i)
    for (size_t k = 0; k < m.operators[i].inputs.size(); ++k) {
      const int32_t t = m.operators[i].inputs[k];
      if (t >= 0 && is_float_constant(m.tensors[static_cast<size_t>(t)])) readers[t].push_back({i, k});
    }
  int32_t untied = 0, copies = 0;
  for (const auto& [t, uses] : readers) {
    std::set<size_t> ops;
    for (const auto& u : uses) ops.insert(u.first);
    if (ops.size() < 2 || !uniform(m.tensors[static_cast<size_t>(t)])) continue;
    bool all_broadcast = true;  // a scalar of element-wise operators is not trained: nothing to untie
    for (size_t op : ops) all_broadcast = all_broadcast && find_op(m.operators[op].op)->broadcasts;
    if (all_broadcast && m.tensors[static_cast<size_t>(t)].elements() == 1) continue;
    // Group the readers: operators that share a constant with varied values share t too.
    std::vector<size_t> list(ops.begin(), ops.end());
    std::vector<size_t> group(list.size());
    for (size_t a = 0; a < list.size(); ++a) {
      group[a] = a;
      for (size_t b = 0; b < a && group[a] == a; ++b)
        for (int32_t x : m.operators[list[a]].inputs)
          if (x >= 0 && x != t && is_float_constant(m.tensors[static_cast<size_t>(x)]) &&
              !uniform(m.tensors[static_cast<size_t>(x)]) &&
              std::count(m.operators[list[b]].inputs.begin(), m.operators[list[b]].inputs.end(), x)) {
            group[a] = group[b];
            break;
          }
    }
    std::map<size_t, int32_t> tensor_of_group;  // the first group keeps t
    for (size_t a = 0; a < list.size(); ++a) {
      const size_t g = group[a];
      if (tensor_of_group.empty()) tensor_of_group[g] = t;
      if (!tensor_of_group.count(g)) {
        Tensor copy = m.tensors[static_cast<size_t>(t)];
        copy.name += "/untied" + std::to_string(tensor_of_group.size());
        tensor_of_group[g] = append_tensor(m, std::move(copy));
        ++copies;
      }
      for (int32_t& x : m.operators[list[a]].inputs)
        if (x == t) x = tensor_of_group[g];
    }
    if (tensor_of_group.size() > 1) ++untied;
  }
  if (untied == 0) return "";
  return std::to_string(untied) + " constant" + (untied == 1 ? "" : "s") +
         " that the converter merged (equal values read by layers that do not share weights) now train as " +
         std::to_string(untied + copies) + " separate weights, one per layer";
}

int32_t count_missing_biases(const Model& m) {
  int32_t n = 0;
  for (const Operator& op : m.operators) {
    const OpDescriptor& d = *find_op(op.op);
    const size_t slot = static_cast<size_t>(d.bias_slot);
    if (d.bias_slot >= 0 && (op.inputs.size() <= slot || op.inputs[slot] < 0)) ++n;
  }
  return n;
}

int32_t add_missing_biases(Model& m) {
  int32_t n = 0;
  std::map<int32_t, int32_t> bias_of_kernel;  // operators sharing a kernel share the new bias
  for (Operator& op : m.operators) {
    const OpDescriptor& d = *find_op(op.op);
    const size_t slot = static_cast<size_t>(d.bias_slot);
    if (d.bias_slot < 0 || (op.inputs.size() > slot && op.inputs[slot] >= 0)) continue;
    const int32_t kernel = op.inputs.at(1);
    auto it = bias_of_kernel.find(kernel);
    int32_t bias;
    if (it != bias_of_kernel.end()) {
      bias = it->second;
    } else {
      const Tensor& y = m.tensors[static_cast<size_t>(op.outputs.at(0))];
      Tensor b;
      b.name = m.tensors[static_cast<size_t>(kernel)].name + "/added_bias";
      b.shape = {y.shape.empty() ? 1 : y.shape.back()};
      b.dtype = CLTRAIN_FLOAT32;
      b.data.assign(static_cast<size_t>(b.shape[0]) * 4, 0);
      bias = append_tensor(m, std::move(b));
      bias_of_kernel[kernel] = bias;
    }
    if (op.inputs.size() <= slot) op.inputs.resize(slot + 1, -1);
    op.inputs[slot] = bias;
    ++n;
  }
  return n;
}

std::vector<LoraAdapter> add_lora(Model& m, int32_t rank, float alpha, const std::vector<bool>& chosen) {
  std::vector<LoraAdapter> adapters;
  std::map<int32_t, size_t> adapter_of;  // W -> its adapters
  std::mt19937 rng(20261203);
  const float scale = alpha / static_cast<float>(rank);
  auto tensor = [&](std::string name, std::vector<int32_t> shape, const std::vector<float>& values) {
    Tensor t;
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.dtype = CLTRAIN_FLOAT32;
    if (!values.empty()) {
      t.data.resize(values.size() * 4);
      std::memcpy(t.data.data(), values.data(), t.data.size());
    }
    return append_tensor(m, std::move(t));
  };
  auto activation_tensor = [&](const std::string& name, std::vector<int32_t> shape) {
    Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.dtype = CLTRAIN_FLOAT32;
    return append_tensor(m, std::move(t));
  };
  std::map<size_t, int32_t> scale_of_rank;  // the scale as [1, ..., 1] of the output's rank
  std::vector<Operator> ops;
  for (size_t i = 0; i < m.operators.size(); ++i) {
    ops.push_back(m.operators[i]);
    if (i >= chosen.size() || !chosen[i] || m.operators[i].op != CLTRAIN_OP_FULLY_CONNECTED) continue;
    Operator& base = ops.back();
    const int32_t w = base.inputs.at(1);
    const std::vector<int32_t> ws = m.tensors[static_cast<size_t>(w)].shape;
    if (ws.size() != 2 || !m.tensors[static_cast<size_t>(w)].is_constant()) continue;
    const int32_t rows = ws[0], cols = ws[1];
    auto it = adapter_of.find(w);
    if (it == adapter_of.end()) {
      const std::string& wn = m.tensors[static_cast<size_t>(w)].name;
      std::vector<float> a(static_cast<size_t>(rank) * static_cast<size_t>(cols));
      const float bound = 1.0f / std::sqrt(static_cast<float>(cols));
      std::uniform_real_distribution<float> u(-bound, bound);
      for (float& v : a) v = u(rng);
      LoraAdapter ad;
      ad.weight = w;
      ad.a = tensor(wn + "/lora_a", {rank, cols}, a);
      ad.b = tensor(wn + "/lora_b", {rows, rank},
                    std::vector<float>(static_cast<size_t>(rows) * static_cast<size_t>(rank), 0.0f));
      ad.scale = scale;
      it = adapter_of.emplace(w, adapters.size()).first;
      adapters.push_back(ad);
    }
    const LoraAdapter& ad = adapters[it->second];
    const int32_t y = base.outputs.at(0);
    std::vector<int32_t> ys = m.tensors[static_cast<size_t>(y)].shape, hs = ys;
    hs.back() = rank;
    const std::string& yn = m.tensors[static_cast<size_t>(y)].name;
    const int32_t z = activation_tensor(yn + "/lora_base", ys);
    const int32_t h = activation_tensor(yn + "/lora_h", hs);
    const int32_t uo = activation_tensor(yn + "/lora_u", ys);
    const int32_t so = activation_tensor(yn + "/lora_scaled", ys);
    const int32_t act = base.params.activation;
    base.outputs[0] = z;
    base.params.activation = CLTRAIN_ACT_NONE;
    const int32_t x = base.inputs[0], file_index = base.file_index;
    auto added = [&](int32_t op, std::vector<int32_t> in, int32_t out, int32_t activation) {
      Operator o;
      o.op = op;
      o.inputs = std::move(in);
      o.outputs = {out};
      o.params.activation = activation;
      o.file_index = file_index;
      o.added = true;
      ops.push_back(o);
    };
    added(CLTRAIN_OP_FULLY_CONNECTED, {x, ad.a}, h, CLTRAIN_ACT_NONE);
    added(CLTRAIN_OP_FULLY_CONNECTED, {h, ad.b}, uo, CLTRAIN_ACT_NONE);
    auto sc = scale_of_rank.find(ys.size());
    if (sc == scale_of_rank.end())
      sc = scale_of_rank
               .emplace(ys.size(), tensor("lora/scale_rank" + std::to_string(ys.size()),
                                          std::vector<int32_t>(ys.size(), 1), {scale}))
               .first;
    added(CLTRAIN_OP_MUL, {uo, sc->second}, so, CLTRAIN_ACT_NONE);
    added(CLTRAIN_OP_ADD, {z, so}, y, act);
  }
  m.operators = std::move(ops);
  return adapters;
}

std::vector<float> merged_lora_weight(const std::vector<float>& w, const std::vector<float>& a,
                                      const std::vector<float>& b, int32_t rows, int32_t cols, int32_t rank,
                                      float scale) {
  std::vector<float> out(w.size());
  for (int32_t r = 0; r < rows; ++r)
    for (int32_t c = 0; c < cols; ++c) {
      double ba = 0;
      for (int32_t k = 0; k < rank; ++k)
        ba += double(b[static_cast<size_t>(r) * rank + k]) * a[static_cast<size_t>(k) * cols + c];
      const size_t i = static_cast<size_t>(r) * cols + c;
      out[i] = static_cast<float>(w[i] + double(scale) * ba);
    }
  return out;
}

}  // namespace cltrain
