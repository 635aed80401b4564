#include "session_setup.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "backend.h"
#include "train_config.h"
#include "training_graph.h"

namespace cltrain {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

const char* role_key(int r) {
  static const char* keys[CLTRAIN_ROLE_COUNT] = {"non_const", "trainable", "back_prop", "gradient",
                                                 "optimizer", "disposable", "layer_scope"};
  return keys[r];
}

std::vector<std::unique_ptr<Backend>> open_backends(const Options& o) {
  std::vector<std::string> names = o.backends;
  names.erase(std::remove(names.begin(), names.end(), std::string("cpu")), names.end());
  names.push_back("cpu");  // the CPU backend is always last
  cltrain_backend_config config = default_backend_config();
  config.device_index = o.device;
  std::vector<std::unique_ptr<Backend>> out;
  for (const auto& name : names) {
    std::string why;
    auto b = open_backend(name, config, &why);
    if (!b) {
      std::fprintf(stderr, "cltrain: warning: %s; continuing without it\n", why.c_str());
      continue;
    }
    out.push_back(std::move(b));
  }
  return out;
}

TrainOptions train_options(const Options& o) {
  TrainOptions t;
  t.loss = o.loss == 1 ? CLTRAIN_OP_LOSS_MSE : CLTRAIN_OP_LOSS_CCE;
  t.reduction = o.loss_reduction == 1 ? CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE : CLTRAIN_REDUCTION_SUM;
  t.optimizer = o.optimizer == 1 ? CLTRAIN_OP_UPDATE_SGD : CLTRAIN_OP_UPDATE_ADAM;
  t.learning_rate = o.learning_rate;
  t.num_trainable_ops = o.num_of_trainable_ops;
  return t;
}

}  // namespace

PreparedSession load_and_prepare(const Options& o) {
  PreparedSession p;
  const auto t_load = Clock::now();
  p.model = load_model(o.model);
  const auto& in_shape = p.model.tensors[static_cast<size_t>(p.model.inputs.at(0))].shape;
  p.batch = o.batch_size ? *o.batch_size : (in_shape.empty() ? 1 : in_shape[0]);
  set_batch_size(p.model, p.batch);
  p.ms_load = ms_since(t_load);
  const auto& in = p.model.tensors[static_cast<size_t>(p.model.inputs[0])].shape;
  const auto& out = p.model.tensors[static_cast<size_t>(p.model.outputs.at(0))].shape;
  p.input_size = p.output_size = 1;
  for (size_t i = 1; i < in.size(); ++i) p.input_size *= static_cast<uint64_t>(in[i]);
  for (size_t i = 1; i < out.size(); ++i) p.output_size *= static_cast<uint64_t>(out[i]);

  const auto t_prepare = Clock::now();
  TrainOptions options = train_options(o);
  if (!o.train_config.empty())
    options.op_ranks = read_train_config(o.train_config, static_cast<int32_t>(p.model.operators.size()));
  p.session = std::make_unique<Session>(build_training_graph(p.model, options), open_backends(o));
  p.session->prepare();
  p.ms_prepare = ms_since(t_prepare);
  return p;
}

nlohmann::json memory_json(const Session& session) {
  nlohmann::json mem = nlohmann::json::object();
  for (const auto& m : session.memory()) {
    nlohmann::json b;
    for (int r = 0; r < CLTRAIN_ROLE_COUNT; ++r) b[role_key(r)] = m.report.role_peak[r];
    b["total"] = m.report.pool_bytes;
    b["lower_bound"] = m.report.lower_bound;
    mem[m.backend] = b;
  }
  return mem;
}

nlohmann::json placement_json(const Session& session) {
  nlohmann::json placement = nlohmann::json::object();
  const auto p = session.model_op_placement();
  for (size_t i = 0; i < p.size(); ++i) placement[std::to_string(i)] = p[i];
  return placement;
}

}  // namespace cltrain
