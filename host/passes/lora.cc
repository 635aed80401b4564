// Pass lora (setup): low-rank adapters beside the chosen FullyConnected weights (--lora).
#include "passes/model_edits.h"

#include <cmath>
#include <map>
#include <random>

#include "ops/op_descriptor.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {

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

std::string lora_pass(PassInput& in) {
  const SetupChoices& c = *in.choices;
  if (c.lora_rank <= 0) return "";
  in.results->base = *in.m;
  const float alpha = c.lora_alpha > 0 ? c.lora_alpha : static_cast<float>(c.lora_rank);
  in.results->lora = add_lora(*in.m, c.lora_rank, alpha, c.chosen);
  const size_t n = in.results->lora.size();
  return n ? "added rank-" + std::to_string(c.lora_rank) + " adapters to " + std::to_string(n) + " weight" +
                 (n == 1 ? "" : "s")
           : "";
}

}  // namespace cltrain
