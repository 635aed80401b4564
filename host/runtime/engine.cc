#include "engine.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <type_traits>

#include "atomic_file.h"
#include "backend.h"
#include "checkpoint.h"
#include "model/export.h"
#include "passes/passes.h"
#include "planner.h"
#include "train_config.h"
#include "trainer.h"

namespace cltrain {

// "" when every value is finite, else what the first non-finite one is and where.
std::string non_finite_element(const float* v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i]))
      return std::string(std::isnan(v[i]) ? "NaN" : v[i] > 0 ? "+Inf" : "-Inf") + " at element " + std::to_string(i);
  return {};
}

namespace {

TrainOptions train_options(const Settings& s) {
  TrainOptions t;
  t.loss = s.loss == Loss::kMeanSquaredError                    ? CLTRAIN_OP_LOSS_MSE
           : s.loss == Loss::kCategoricalCrossentropyFromLogits ? CLTRAIN_OP_LOSS_CCE_LOGITS
                                                                : CLTRAIN_OP_LOSS_CCE;
  t.reduction =
      s.loss_reduction == Reduction::kSumOverBatchSize ? CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE : CLTRAIN_REDUCTION_SUM;
  t.optimizer = s.optimizer == Optimizer::kSgd ? CLTRAIN_OP_UPDATE_SGD : CLTRAIN_OP_UPDATE_ADAM;
  t.learning_rate = s.learning_rate;
  t.beta1 = s.beta1;
  t.beta2 = s.beta2;
  t.epsilon = s.epsilon;
  if (s.num_trainable_ops == -2)
    t.op_ranks = s.op_ranks;
  else
    t.num_trainable_ops = s.num_trainable_ops;
  return t;
}

// Per-operator ranks of the file's operators as ranks of Model::operators (a shape operator
// trains nothing).
std::vector<int32_t> model_ranks(const Model& m, const std::vector<int32_t>& file_ranks) {
  std::vector<int32_t> ranks(m.operators.size(), kRankNone);
  const std::vector<int32_t> index = model_operator_index(m);
  for (size_t f = 0; f < file_ranks.size() && f < index.size(); ++f)
    if (index[f] >= 0) ranks[static_cast<size_t>(index[f])] = file_ranks[f];
  return ranks;
}

// What a model's CIRCLE_TRAINING metadata says, as settings. A loss cltrain does not train
// (sparse categorical cross-entropy) becomes loss 0, which prepare refuses unless it is set.
void apply_training_info(const Model& m, Settings& s) {
  const std::optional<TrainingInfo> info = read_training_info(m);
  if (!info) return;
  if (info->learning_rate > 0) s.learning_rate = info->learning_rate;
  s.optimizer = info->optimizer == TrainingInfo::kSgd ? Optimizer::kSgd : Optimizer::kAdam;
  s.loss = info->loss == TrainingInfo::kSparseCategoricalCrossentropy ? Loss::kSparseCategoricalCrossentropy
           : info->loss == TrainingInfo::kMeanSquaredError            ? Loss::kMeanSquaredError
           : info->from_logits                                        ? Loss::kCategoricalCrossentropyFromLogits
                                                                      : Loss::kCategoricalCrossentropy;
  s.loss_reduction = info->reduction == TrainingInfo::kSum ? Reduction::kSum : Reduction::kSumOverBatchSize;
  if (info->epochs > 0) s.epochs = info->epochs;
  if (info->batch_size > 0) s.batch_size = info->batch_size;
  s.beta1 = info->beta1;
  s.beta2 = info->beta2;
  s.epsilon = info->epsilon;
  if (!info->trainable_ops.empty()) {
    std::vector<int32_t> ranks(file_operator_count(m), kRankNone);
    for (int32_t op : info->trainable_ops) ranks[static_cast<size_t>(op)] = kRankAll;  // checked by the reader
    s.op_ranks = model_ranks(m, ranks);
    s.num_trainable_ops = -2;
  }
}

// Categorical cross-entropy over an output no Softmax makes (logits: how PyTorch modules trained
// with CrossEntropyLoss and Keras models compiled with from_logits=True end), or its from-logits
// form over a Softmax's output: the one line that says so, else "".
std::string loss_output_warning(const Model& m, Loss loss) {
  if ((loss != Loss::kCategoricalCrossentropy && loss != Loss::kCategoricalCrossentropyFromLogits) || m.outputs.empty())
    return {};
  const int32_t out = m.outputs[0];
  const Operator* producer = nullptr;
  for (const Operator& op : m.operators)
    if (std::find(op.outputs.begin(), op.outputs.end(), out) != op.outputs.end()) producer = &op;
  if (!producer) return {};
  const bool softmax = producer->op == CLTRAIN_OP_SOFTMAX;
  const std::string what = m.source + ": the output '" + m.tensors[static_cast<size_t>(out)].name + "' comes from ";
  if (loss == Loss::kCategoricalCrossentropy && !softmax)
    return what + cltrain_op_name(producer->op) +
           ", not a Softmax: categorical cross-entropy (loss 2) takes probabilities; if the output are logits, "
           "train with loss 3 (categorical cross-entropy from logits)";
  if (loss == Loss::kCategoricalCrossentropyFromLogits && softmax)
    return what + "a Softmax: loss 3 takes logits and would apply a second softmax; train with loss 2";
  return {};
}

void check_settings(const Settings& s, const std::string& model) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  const auto code = [](auto e) { return std::to_string(static_cast<int32_t>(e)); };
  if (s.loss == Loss::kSparseCategoricalCrossentropy)
    throw ModelError(model +
                     ": CIRCLE_TRAINING asks for sparse categorical cross-entropy, which cltrain does not train; set "
                     "the loss (1 MSE, 2 categorical cross-entropy)");
  if (s.batch_size < 0) bad("batch size " + std::to_string(s.batch_size) + " is negative");
  if (s.optimizer != Optimizer::kSgd && s.optimizer != Optimizer::kAdam)
    bad("optimizer " + code(s.optimizer) + " is not 1 (SGD) or 2 (Adam)");
  if (s.loss != Loss::kMeanSquaredError && s.loss != Loss::kCategoricalCrossentropy &&
      s.loss != Loss::kCategoricalCrossentropyFromLogits)
    bad("loss " + code(s.loss) + " is not 1 (MSE), 2 (categorical cross-entropy) or 3 (its from logits form)");
  if (s.loss_reduction != Reduction::kSumOverBatchSize && s.loss_reduction != Reduction::kSum)
    bad("loss reduction " + code(s.loss_reduction) + " is not 1 (sum over batch size) or 2 (sum)");
  if (!(s.learning_rate > 0.0f) || !std::isfinite(s.learning_rate))
    bad("learning rate " + std::to_string(s.learning_rate) + " is not a positive finite number");
  if (!(s.beta1 >= 0.0f && s.beta1 < 1.0f) || !(s.beta2 >= 0.0f && s.beta2 < 1.0f))
    bad("Adam's beta1 and beta2 must lie in [0, 1)");
  if (!(s.epsilon >= 0.0f) || !std::isfinite(s.epsilon)) bad("Adam's epsilon must be finite and not negative");
  if (s.num_trainable_ops < -2) bad("num_trainable_ops " + std::to_string(s.num_trainable_ops) + " is below -2");
  if (s.num_trainable_ops == -2 && s.op_ranks.empty())
    bad("num_trainable_ops is -2 (as listed), but neither the model nor a train config lists trainable operators");
  if (s.device < -1) bad("device " + std::to_string(s.device) + " is below -1");
}

}  // namespace

std::string cache_directory(const std::optional<std::string>& given, std::string* warning) {
  std::string dir;
  if (given) {
    dir = *given;
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
    *warning = "cannot create the cache directory " + dir + " (" + ec.message() + "); running without a cache";
    return {};
  }
  return dir;
}

std::unique_ptr<Engine> Engine::from_file(const std::string& path) {
  std::unique_ptr<Engine> e(new Engine());
  e->model_ = load_model(path);
  e->log_rewrites({});
  apply_training_info(e->model_, e->settings_);
  return e;
}

std::unique_ptr<Engine> Engine::from_buffer(std::vector<uint8_t> bytes, const std::string& what) {
  std::unique_ptr<Engine> e(new Engine());
  e->model_ = load_model_from_memory(bytes, what);
  e->log_rewrites({});
  apply_training_info(e->model_, e->settings_);
  return e;
}

void Engine::set_settings(const Settings& s) {
  if (prepared()) throw std::logic_error("the settings cannot change after prepare");
  settings_ = s;
}

void Engine::set_train_config(const std::string& path) {
  if (prepared()) throw std::logic_error("the train config cannot change after prepare");
  settings_.op_ranks = model_ranks(model_, read_train_config(path, static_cast<int32_t>(file_operator_count(model_))));
  settings_.num_trainable_ops = -2;
}

void Engine::prepare(bool dry) {
  if (prepared()) throw std::logic_error("prepare was already called");
  check_settings(settings_, model_.source);
  // As the framework the model came from trains it (docs/training-rules.md).
  Model edited = model_;
  SetupChoices choices;
  choices.add_missing_biases = settings_.add_missing_biases;
  if (settings_.lora_rank > 0) {
    // The operators the trainable choice covers get adapters; then only the adapters train.
    const int32_t n = static_cast<int32_t>(edited.operators.size());
    std::vector<int32_t> ranks = settings_.op_ranks;
    if (settings_.num_trainable_ops != -2) {
      const int32_t first = settings_.num_trainable_ops < 0 ? 0 : std::max(0, n - settings_.num_trainable_ops);
      ranks.assign(static_cast<size_t>(n), kRankNone);
      for (int32_t i = first; i < n; ++i) ranks[static_cast<size_t>(i)] = kRankAll;
    }
    choices.chosen.assign(static_cast<size_t>(n), false);
    for (size_t i = 0; i < choices.chosen.size() && i < ranks.size(); ++i) choices.chosen[i] = ranks[i] != kRankNone;
    choices.lora_rank = settings_.lora_rank;
    choices.lora_alpha = settings_.lora_alpha;
  }
  SetupResults results;
  PassInput setup{&edited, model_.source};
  setup.choices = &choices;
  setup.results = &results;
  for (Rewrite& r : run_passes(PassStage::kSetup, setup)) edited.rewrites.push_back(std::move(r));
  for (std::string& w : results.warnings) warnings_.push_back(std::move(w));
  if (settings_.lora_rank > 0) {
    base_model_ = std::move(results.base);
    lora_ = std::move(results.lora);
    if (lora_.empty())
      throw ModelError(model_.source + ": --lora: none of the trainable operators is a FullyConnected");
    settings_.op_ranks.clear();
    for (const Operator& op : edited.operators)
      settings_.op_ranks.push_back(op.added && op.op == CLTRAIN_OP_FULLY_CONNECTED ? kRankAll : kRankNone);
    settings_.num_trainable_ops = -2;
  }
  model_ = std::move(edited);
  const auto& in_shape = model_.tensors[static_cast<size_t>(model_.inputs.at(0))].shape;
  set_batch_size(model_, settings_.batch_size > 0 ? settings_.batch_size : (in_shape.empty() ? 1 : in_shape[0]));
  TrainingGraph graph = build_training_graph(model_, train_options(settings_));
  log_rewrites(graph.rewrites);
  if (const std::string w = loss_output_warning(model_, settings_.loss); !w.empty()) warnings_.push_back(w);
  for (int32_t w : graph.weights) {
    const Tensor& t = model_.tensors[static_cast<size_t>(w)];
    if (const std::string bad =
            non_finite_element(reinterpret_cast<const float*>(t.data.data()), t.data.size() / sizeof(float));
        !bad.empty())
      throw ModelError(model_.source + ": weight '" + t.name + "' (trained) holds " + bad);
  }

  std::vector<std::string> names = settings_.backends;
  names.erase(std::remove(names.begin(), names.end(), std::string("cpu")), names.end());
  names.push_back("cpu");  // the CPU backend is always last
  cltrain_backend_config config = default_backend_config();
  config.device_index = settings_.device;
  config.memory_budget = settings_.memory_budget;
  std::string warning;
  const std::string cache_dir = cache_directory(settings_.cache_dir, &warning);
  if (!warning.empty()) warnings_.push_back(warning);
  config.cache_dir = cache_dir.empty() ? nullptr : cache_dir.c_str();
  const auto open_backends = [&](bool warn) {
    std::vector<std::unique_ptr<Backend>> backends;
    for (const std::string& name : names) {
      std::string why;
      auto b = open_backend(name, config, &why);
      if (b)
        backends.push_back(std::move(b));
      else if (warn)
        warnings_.push_back(why + "; continuing without it");
    }
    return backends;
  };
  const bool projections = std::any_of(graph.rewrites.begin(), graph.rewrites.end(),
                                       [](const Rewrite& r) { return r.pass == "sequence-projections"; });
  auto session = std::make_unique<Session>(std::move(graph), open_backends(true));
  const bool others = session->num_backends() > 1;
  session->set_half_storage(settings_.half_storage);
  try {
    try {
      session->prepare(settings_.memory_budget, dry);
    } catch (const MemoryBudgetError&) {
      // The whole sequence's projections (and their gradient) live at once, where the per-step
      // graph held one step's: under a budget they do not fit, train without them.
      if (!projections) throw;
      TrainOptions options = train_options(settings_);
      options.skip_training_passes = {"sequence-projections"};
      TrainingGraph per_step = build_training_graph(model_, options);
      log_rewrites(per_step.rewrites);
      session = std::make_unique<Session>(std::move(per_step), open_backends(false));
      session->set_half_storage(settings_.half_storage);
      session->prepare(settings_.memory_budget, dry);
      warnings_.push_back(
          "memory budget: the projections of whole sequences (sequence-projections) do not fit; training with "
          "per-step projections");
    }
  } catch (const BackendError& e) {
    // A backend that fails at prepare (a device out of memory, a driver's error) leaves the
    // training to the CPU backend, as one that cannot start does; the CPU's own failure stands.
    if (!others) throw;
    warnings_.push_back(std::string(e.what()) + "; training on the CPU backend instead");
    std::vector<std::unique_ptr<Backend>> cpu;
    std::string why;
    cpu.push_back(open_backend("cpu", config, &why));
    if (!cpu.back()) throw BackendError(why);
    session = std::make_unique<Session>(build_training_graph(model_, train_options(settings_)), std::move(cpu));
    session->set_half_storage(settings_.half_storage);
    session->prepare(settings_.memory_budget, dry);
  }
  session_ = std::move(session);
  input_.assign(static_cast<size_t>(batch()) * input_size(), 0.0f);
  expected_.assign(static_cast<size_t>(batch()) * output_size(), 0.0f);
}

void Engine::log_rewrites(const std::vector<Rewrite>& training) {
  rewrites_.clear();
  for (const Rewrite& r : model_.rewrites) rewrites_.push_back(r.pass + ": " + r.change);
  for (const Rewrite& r : training) rewrites_.push_back(r.pass + ": " + r.change);
}

void Engine::require_prepared(const char* what) const {
  if (!prepared()) throw std::logic_error(std::string(what) + " before prepare");
}

Session& Engine::session() {
  require_prepared("the session");
  return *session_;
}

int32_t Engine::batch() const {
  const auto& s = model_.tensors[static_cast<size_t>(model_.inputs.at(0))].shape;
  return s.empty() ? 1 : s[0];
}

uint64_t Engine::input_size() const {
  const auto& s = model_.tensors[static_cast<size_t>(model_.inputs.at(0))].shape;
  uint64_t n = 1;
  for (size_t i = 1; i < s.size(); ++i) n *= static_cast<uint64_t>(s[i]);
  return n;
}

uint64_t Engine::output_size() const {
  const auto& s = model_.tensors[static_cast<size_t>(model_.outputs.at(0))].shape;
  uint64_t n = 1;
  for (size_t i = 1; i < s.size(); ++i) n *= static_cast<uint64_t>(s[i]);
  return n;
}

namespace {

// Copies count values of 4 bytes (floats, or an int32 input's ids as their bits) into to.
template <typename T>
void copy_batch(const T* data, uint64_t count, std::vector<float>& to, const char* what) {
  static_assert(sizeof(T) == sizeof(float), "inputs are 4-byte values");
  if (!data) throw std::invalid_argument(std::string(what) + ": the data is NULL");
  if (count != to.size())
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(count) +
                                (std::is_same_v<T, float> ? " floats" : " ids") + " given, the batch takes " +
                                std::to_string(to.size()));
  if (count) std::memcpy(to.data(), data, count * sizeof(float));
}

}  // namespace

int32_t Engine::input_dtype() const { return model_.tensors[static_cast<size_t>(model_.inputs.at(0))].dtype; }

void Engine::require_input_type(int32_t dtype, const char* what) const {
  if (input_dtype() == dtype) return;
  throw std::invalid_argument(std::string(what) + ": the model's input " +
                              model_.tensors[static_cast<size_t>(model_.inputs.at(0))].name + " is " +
                              (input_dtype() == CLTRAIN_INT32 ? "int32 (token ids): give it with the int32 calls"
                                                              : "float32: give it with the float calls"));
}

void Engine::set_input(const float* data, uint64_t count) {
  require_prepared("set_input");
  require_input_type(CLTRAIN_FLOAT32, "set_input");
  copy_batch(data, count, input_, "set_input");
  have_input_ = true;
}

int64_t Engine::id_rows() const {
  int64_t rows = -1;
  for (const Operator& op : model_.operators)
    if (op.op == CLTRAIN_OP_GATHER && op.inputs.size() == 2 && op.inputs[1] == model_.inputs.at(0)) {
      const int64_t r = model_.tensors[static_cast<size_t>(op.inputs[0])].shape.at(0);
      rows = rows < 0 ? r : std::min(rows, r);
    }
  return rows;
}

void Engine::check_ids(const int32_t* data, uint64_t count, const char* what) const {
  const int64_t rows = id_rows();
  if (rows < 0 || !data) return;
  for (uint64_t i = 0; i < count; ++i)
    if (data[i] < -rows || data[i] >= rows)
      throw std::invalid_argument(std::string(what) + ": id " + std::to_string(data[i]) + " at element " +
                                  std::to_string(i) + " is outside the embedding table's " + std::to_string(rows) +
                                  " rows (ids " + std::to_string(-rows) + " to " + std::to_string(rows - 1) + ")");
}

void Engine::set_input_int32(const int32_t* data, uint64_t count) {
  require_prepared("set_input_int32");
  require_input_type(CLTRAIN_INT32, "set_input_int32");
  copy_batch(data, count, input_, "set_input_int32");
  check_ids(data, count, "set_input_int32");
  have_input_ = true;
}

void Engine::set_expected(const float* data, uint64_t count) {
  require_prepared("set_expected");
  copy_batch(data, count, expected_, "set_expected");
  have_expected_ = true;
}

void Engine::require_consistent(const std::string& what) const {
  if (session_ && !session_->consistent())
    throw TrainingError(
        "a training step failed while its updates ran: the weights and optimizer state are partly "
        "updated, so " +
        what + " is refused; resume from the last checkpoint (periodic checkpoints are restored by themselves)");
}

std::string Engine::roll_back() {
  if (last_checkpoint_.empty())
    return "; the step failed while its updates ran, so the weights are partly updated and refused (periodic "
           "checkpoints, checkpoint_every, keep the last good ones)";
  try {
    import_checkpoint(last_checkpoint_);
  } catch (const std::exception& e) {
    return "; the step failed while its updates ran, and restoring " + last_checkpoint_ + " failed too (" + e.what() +
           ")";
  }
  return "; the step failed while its updates ran: back at optimizer step " + std::to_string(position().steps) +
         " from " + last_checkpoint_ + ", the last good checkpoint";
}

float Engine::train_step(float* prediction) {
  require_prepared("train_step");
  require_consistent("training on");
  if (!have_input_ || !have_expected_) throw std::logic_error("train_step before set_input and set_expected");
  bool applied = true;
  float loss = 0.0f;
  try {
    loss = session_->train_step(input_.data(), expected_.data(), prediction, &applied);
  } catch (const BackendError& e) {
    if (session_->consistent()) throw;  // the weights are the last good step's
    throw BackendError(e.what() + roll_back());
  }
  const bool skip = !applied && settings_.on_nonfinite == NonFinite::kSkip;
  if ((applied && std::isfinite(loss)) || skip) {
    ++progress_.batches;
    ++progress_.epoch_batches;
    if (skip)
      ++progress_.skipped;
    else
      progress_.epoch_loss_sum += static_cast<double>(loss);
    if (settings_.checkpoint_every > 0 && progress_.batches % settings_.checkpoint_every == 0)
      write_periodic_checkpoint();
    return loss;
  }
  // The step that failed is the one after those done.
  const int64_t step = session_->iterations() + (applied ? 0 : 1);
  const std::string what = std::isfinite(loss)
                               ? "a gradient became NaN or infinite (loss " + std::to_string(loss) + ")"
                               : std::string("the loss became ") + (std::isnan(loss) ? "NaN" : "infinite");
  throw TrainingError(
      what + " at epoch " + std::to_string(epochs_ + 1) + ", step " + std::to_string(step - epoch_start_steps_) +
      " (optimizer step " + std::to_string(step) + "; " +
      (applied ? "nothing exported" : "not applied: the weights and optimizer state are those before it") +
      "; is the learning rate too high, or the data not scaled?)");
}

void Engine::set_epochs_done(int32_t epochs) {
  epochs_ = epochs;
  epoch_start_steps_ = position().steps;
  progress_.epoch_batches = 0;
  progress_.epoch_loss_sum = 0;
}

float Engine::evaluate(float* prediction) {
  require_prepared("evaluate");
  if (!have_input_ || !have_expected_) throw std::logic_error("evaluate before set_input and set_expected");
  return session_->evaluate(input_.data(), expected_.data(), prediction);
}

void Engine::predict(const float* input, uint64_t input_count, float* output, uint64_t output_count) {
  require_prepared("predict");
  require_input_type(CLTRAIN_FLOAT32, "predict");
  std::vector<float> in(input_.size());
  copy_batch(input, input_count, in, "predict");
  predict_into(in, output, output_count, "predict");
}

void Engine::predict_int32(const int32_t* input, uint64_t input_count, float* output, uint64_t output_count) {
  require_prepared("predict_int32");
  require_input_type(CLTRAIN_INT32, "predict_int32");
  std::vector<float> in(input_.size());
  copy_batch(input, input_count, in, "predict_int32");
  check_ids(input, input_count, "predict_int32");
  predict_into(in, output, output_count, "predict_int32");
}

void Engine::predict_into(const std::vector<float>& in, float* output, uint64_t output_count, const char* what) {
  if (!output) throw std::invalid_argument(std::string(what) + ": the output is NULL");
  const uint64_t want = static_cast<uint64_t>(batch()) * output_size();
  if (output_count != want)
    throw std::invalid_argument(std::string(what) + ": room for " + std::to_string(output_count) +
                                " floats, the batch gives " + std::to_string(want));
  session_->predict(in.data(), output);
}

}  // namespace cltrain
