#include "session_setup.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "backend.h"
#include "model/builder.h"
#include "model/export.h"
#include "train_config.h"
#include "training_graph.h"

namespace cltrain {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

const char* role_key(int r) {
  static const char* keys[CLTRAIN_ROLE_COUNT] = {"non_const", "trainable",  "back_prop",  "gradient",
                                                 "optimizer", "disposable", "layer_scope"};
  return keys[r];
}

// The cache directory the backends get: --cache-dir (or --no-cache), else $CLTRAIN_CACHE_DIR,
// else $XDG_CACHE_HOME/cltrain, else $HOME/.cache/cltrain; created with its parents. "" for
// none, also when it cannot be created (after one warning).
std::string cache_directory(const Options& o) {
  std::string dir;
  if (o.cache_dir) {
    dir = *o.cache_dir;
  } else if (const char* env = std::getenv("CLTRAIN_CACHE_DIR")) {
    dir = env;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') {
    dir = std::string(xdg) + "/cltrain";  // the XDG spec ignores a relative path
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = std::string(home) + "/.cache/cltrain";
  }
  if (dir.empty()) return dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && !std::filesystem::is_directory(dir, ec)) ec = std::make_error_code(std::errc::not_a_directory);
  if (ec) {
    std::fprintf(stderr, "cltrain: warning: cannot create the cache directory %s (%s); running without a cache\n",
                 dir.c_str(), ec.message().c_str());
    return {};
  }
  return dir;
}

std::vector<std::unique_ptr<Backend>> open_backends(const Options& o) {
  std::vector<std::string> names = o.backends;
  names.erase(std::remove(names.begin(), names.end(), std::string("cpu")), names.end());
  names.push_back("cpu");  // the CPU backend is always last
  cltrain_backend_config config = default_backend_config();
  config.device_index = o.device;
  const std::string cache_dir = cache_directory(o);
  config.cache_dir = cache_dir.empty() ? nullptr : cache_dir.c_str();
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
  if (o.adam_beta1 > 0) t.beta1 = o.adam_beta1;
  if (o.adam_beta2 > 0) t.beta2 = o.adam_beta2;
  if (o.adam_epsilon > 0) t.epsilon = o.adam_epsilon;
  return t;
}

// Options the command line left out come from the model's CIRCLE_TRAINING metadata.
void apply_training_info(Options& o, const TrainingInfo& info, int32_t num_operators) {
  auto missing = [&](const char* opt) { return o.given.count(opt) == 0; };
  if (missing("--learning_rate") && info.learning_rate > 0) o.learning_rate = info.learning_rate;
  if (missing("--optimizer")) o.optimizer = info.optimizer == TrainingInfo::kSgd ? 1 : 2;
  if (missing("--loss")) {
    if (info.loss == TrainingInfo::kSparseCategoricalCrossentropy)
      throw ModelError(o.model +
                       ": CIRCLE_TRAINING asks for sparse categorical cross-entropy, which cltrain does not "
                       "train; give --loss 1 or 2");
    o.loss = info.loss == TrainingInfo::kMeanSquaredError ? 1 : 2;
  }
  if (missing("--loss_reduction_type")) o.loss_reduction = info.reduction == TrainingInfo::kSum ? 2 : 1;
  if (missing("--epoch") && info.epochs > 0) o.epochs = info.epochs;
  if (missing("--batch_size") && info.batch_size > 0) o.batch_size = info.batch_size;
  if (missing("--num_of_trainable_ops") && missing("--train_config") && !info.trainable_ops.empty()) {
    o.info_ranks.assign(static_cast<size_t>(num_operators), kRankNone);
    for (int32_t op : info.trainable_ops) {
      if (op < 0 || op >= num_operators)
        throw ModelError(o.model + ": CIRCLE_TRAINING lists trainable operator " + std::to_string(op) +
                         ", the model has " + std::to_string(num_operators));
      o.info_ranks[static_cast<size_t>(op)] = kRankAll;
    }
  }
  o.adam_beta1 = info.beta1;
  o.adam_beta2 = info.beta2;
  o.adam_epsilon = info.epsilon;
}

}  // namespace

PreparedSession load_and_prepare(const Options& given) {
  PreparedSession p;
  p.options = given;
  Options& o = p.options;
  const auto t_load = Clock::now();
  p.model = load_model(o.model);
  if (const auto info = read_training_info(p.model))
    apply_training_info(o, *info, static_cast<int32_t>(p.model.operators.size()));
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
  options.op_ranks = o.info_ranks;
  if (!o.train_config.empty())
    options.op_ranks = read_train_config(o.train_config, static_cast<int32_t>(p.model.operators.size()));
  p.session = std::make_unique<Session>(build_training_graph(p.model, options), open_backends(o));
  p.session->prepare();
  p.ms_prepare = ms_since(t_prepare);
  return p;
}

void export_trained_model(PreparedSession& p) {
  const Options& o = p.options;
  if (o.export_circle.empty() && o.export_circleplus.empty()) return;
  std::map<int32_t, std::vector<float>> weights;
  for (int32_t w : p.session->graph().weights) weights[w] = p.session->read_persistent(w);
  if (!o.export_circle.empty()) save_file_atomic(o.export_circle, export_with_weights(p.model, weights));
  if (!o.export_circleplus.empty()) {
    TrainingInfo info;
    const TrainOptions t = train_options(o);
    info.optimizer = t.optimizer == CLTRAIN_OP_UPDATE_SGD ? 0 : 1;
    info.learning_rate = t.learning_rate;
    info.beta1 = t.beta1;
    info.beta2 = t.beta2;
    info.epsilon = t.epsilon;
    info.loss = t.loss == CLTRAIN_OP_LOSS_MSE ? 2 : 1;
    info.from_logits = false;
    info.epochs = o.epochs;
    info.batch_size = p.batch;
    info.reduction = t.reduction == CLTRAIN_REDUCTION_SUM ? 1 : 0;
    const auto& ranks = p.session->graph().op_ranks;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] != kRankNone) info.trainable_ops.push_back(static_cast<int32_t>(i));
    save_file_atomic(o.export_circleplus, export_circleplus(p.model, weights, info));
  }
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
