// The Engine's weights by name, its exports (circle, circle+, checkpoint) and checkpoint import.
#include "engine.h"
#include "lora_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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
#include "train_config.h"
#include "trainer.h"

namespace cltrain {

int32_t Engine::tensor_index(const std::string& name) const {
  for (size_t i = 0; i < model_.tensors.size(); ++i) {
    const Tensor& t = model_.tensors[i];
    if (t.name == name && t.is_constant() && t.dtype == CLTRAIN_FLOAT32) return static_cast<int32_t>(i);
  }
  throw std::invalid_argument("the model has no float32 constant named '" + name + "'");
}

uint64_t Engine::tensor_elements(const std::string& name) const {
  return model_.tensors[static_cast<size_t>(tensor_index(name))].elements();
}

std::vector<float> Engine::weight(const std::string& name) {
  const int32_t t = tensor_index(name);
  if (prepared()) return session_->read_persistent(t);
  const Tensor& tensor = model_.tensors[static_cast<size_t>(t)];
  std::vector<float> v(tensor.elements());
  std::copy(tensor.data.begin(), tensor.data.end(), reinterpret_cast<uint8_t*>(v.data()));
  return v;
}

void Engine::set_weight(const std::string& name, const std::vector<float>& values) {
  const int32_t t = tensor_index(name);
  Tensor& tensor = model_.tensors[static_cast<size_t>(t)];
  if (values.size() != tensor.elements())
    throw std::invalid_argument("'" + name + "' has " + std::to_string(tensor.elements()) + " elements, " +
                                std::to_string(values.size()) + " given");
  if (const std::string bad = non_finite_element(values.data(), values.size()); !bad.empty())
    throw std::invalid_argument("'" + name + "': the values hold " + bad);
  if (prepared()) {
    session_->write_persistent(t, values);
    return;
  }
  std::copy(reinterpret_cast<const uint8_t*>(values.data()),
            reinterpret_cast<const uint8_t*>(values.data() + values.size()), tensor.data.begin());
}

std::vector<std::string> Engine::trained_weight_names() {
  require_prepared("trained_weight_names");
  std::vector<std::string> names;
  for (int32_t w : session_->graph().weights) names.push_back(model_.tensors[static_cast<size_t>(w)].name);
  return names;
}

void Engine::reset_optimizer() {
  require_prepared("reset_optimizer");
  const TrainingGraph& g = session_->graph();
  for (const auto& [weight, moments] : g.adam_state) {
    (void)weight;
    for (int32_t t : {moments.first, moments.second})
      session_->write_persistent(t, std::vector<float>(session_->read_persistent(t).size(), 0.0f));
  }
  session_->set_iterations(0);
  epochs_ = 0;
  epoch_start_steps_ = 0;
}

std::map<int32_t, std::vector<float>> Engine::read_weights(std::string* bad) {
  std::map<int32_t, std::vector<float>> weights;
  if (!prepared()) return weights;
  require_consistent("reading the weights");
  for (int32_t w : session_->graph().weights) {
    std::vector<float> v = session_->read_persistent(w);
    if (const std::string what = non_finite_element(v.data(), v.size()); !what.empty() && bad->empty())
      *bad = "weight '" + model_.tensors[static_cast<size_t>(w)].name + "' holds " + what;
    weights[w] = std::move(v);
  }
  return weights;
}

std::map<int32_t, std::vector<float>> Engine::trained_weights(const std::string& path) {
  std::string bad;
  auto weights = read_weights(&bad);
  if (!bad.empty())
    throw TrainingError(bad + " after " + std::to_string(position().steps) + " steps; " + path + " not written");
  return weights;
}

std::vector<uint8_t> Engine::model_bytes(const std::string& path, const Weights& weights) {
  auto ends_with = [&](const char* ext) {
    const size_t n = std::strlen(ext);
    return path.size() >= n && path.compare(path.size() - n, n, ext) == 0;
  };
  const std::string format = ends_with(".tflite")    ? "tflite"
                             : ends_with(".circle")  ? "circle"
                             : model_.format.empty() ? "circle"
                                                     : model_.format;
  if (!lora_.empty()) return export_model(base_model_, merged_lora(weights), format);
  return export_model(model_, weights, format);
}

Engine::Weights Engine::merged_lora(const Weights& trained) const {
  Weights out = trained;
  for (const LoraAdapter& ad : lora_) {
    const Tensor& w = model_.tensors[static_cast<size_t>(ad.weight)];
    std::vector<float> base(w.data.size() / 4);
    std::memcpy(base.data(), w.data.data(), w.data.size());
    const int32_t rank = model_.tensors[static_cast<size_t>(ad.a)].shape[0];
    out[ad.weight] =
        merged_lora_weight(base, trained.at(ad.a), trained.at(ad.b), w.shape[0], w.shape[1], rank, ad.scale);
  }
  // The adapters and the tensors they added are not the base model's.
  for (auto it = out.begin(); it != out.end();)
    it = static_cast<size_t>(it->first) >= base_model_.tensors.size() ? out.erase(it) : std::next(it);
  return out;
}

std::vector<uint8_t> Engine::circleplus_bytes(const Weights& weights) {
  TrainingInfo info;
  info.optimizer = settings_.optimizer == Optimizer::kSgd ? TrainingInfo::kSgd : TrainingInfo::kAdam;
  info.learning_rate = settings_.learning_rate;
  info.beta1 = settings_.beta1;
  info.beta2 = settings_.beta2;
  info.epsilon = settings_.epsilon;
  info.loss = settings_.loss == Loss::kMeanSquaredError ? TrainingInfo::kMeanSquaredError
                                                        : TrainingInfo::kCategoricalCrossentropy;
  info.from_logits = settings_.loss == Loss::kCategoricalCrossentropyFromLogits;
  info.epochs = settings_.epochs;
  info.batch_size = batch();
  info.reduction = settings_.loss_reduction == Reduction::kSum ? TrainingInfo::kSum : TrainingInfo::kSumOverBatchSize;
  if (prepared()) {
    const auto& ranks = session_->graph().op_ranks;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] != kRankNone) info.trainable_ops.push_back(file_operator_index(model_, i));
  }
  if (!lora_.empty()) return cltrain::export_circleplus(base_model_, merged_lora(weights), info);
  return cltrain::export_circleplus(model_, weights, info);
}

std::vector<uint8_t> Engine::checkpoint_bytes(bool with_progress) {
  require_prepared("export_checkpoint");
  require_consistent("a checkpoint");
  TrainingPosition pos;
  pos.step = static_cast<uint32_t>(position().steps);
  pos.epoch = static_cast<uint32_t>(epochs_);
  pos.has_progress = with_progress;
  pos.progress = progress_;
  return make_checkpoint(*session_, model_, pos);
}

void Engine::export_circle(const std::string& path) {
  save_file_atomic(path, model_bytes(path, trained_weights(path)));
}
void Engine::export_circleplus(const std::string& path) {
  save_file_atomic(path, circleplus_bytes(trained_weights(path)));
}
void Engine::export_checkpoint(const std::string& path) {
  require_prepared("export_checkpoint");
  trained_weights(path);  // refuses non-finite weights
  save_file_atomic(path, checkpoint_bytes());
}

void Engine::export_files(const std::string& model, const std::string& circleplus, const std::string& checkpoint) {
  // Every file's bytes first (a non-finite weight refuses them all), then every temporary file,
  // then the renames, the checkpoint last.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> files;
  std::string names;
  for (const std::string* p : {&model, &circleplus, &checkpoint})
    if (!p->empty()) names += (names.empty() ? "" : ", ") + *p;
  if (names.empty()) return;
  const Weights weights = trained_weights(names);
  if (!model.empty()) files.emplace_back(model, model_bytes(model, weights));
  if (!circleplus.empty()) files.emplace_back(circleplus, circleplus_bytes(weights));
  if (!checkpoint.empty()) files.emplace_back(checkpoint, checkpoint_bytes());
  std::vector<std::pair<std::string, std::string>> staged;  // path, temporary
  std::string failed;
  for (const auto& f : files) {
    try {
      staged.emplace_back(f.first, stage_file(f.first, f.second));
    } catch (const std::runtime_error& e) {
      failed += (failed.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  std::string written;
  for (const auto& s : staged) {
    try {
      commit_file(s.second, s.first);
      written += (written.empty() ? "" : ", ") + s.first;
    } catch (const std::runtime_error& e) {
      failed += (failed.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (!failed.empty()) throw std::runtime_error(failed + (written.empty() ? "" : " (written: " + written + ")"));
}

namespace {

std::string adapter_name(const Model& m, int32_t weight, const char* which) {
  return m.tensors[static_cast<size_t>(weight)].name + ".lora_" + which + ".weight";
}

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace

void Engine::export_lora(const std::string& path) {
  require_prepared("export_lora");
  if (lora_.empty()) throw std::invalid_argument("export_lora: the session has no LoRA adapters (set lora_rank)");
  std::vector<NamedTensor> tensors;
  for (const LoraAdapter& ad : lora_)
    for (const auto& [t, which] : {std::make_pair(ad.a, "A"), std::make_pair(ad.b, "B")}) {
      const Tensor& tensor = model_.tensors[static_cast<size_t>(t)];
      NamedTensor nt{adapter_name(model_, ad.weight, which), {}, weight(tensor.name)};
      for (int32_t d : tensor.shape) nt.shape.push_back(d);
      for (float v : nt.values)
        if (!std::isfinite(v))
          throw TrainingError("cannot export the adapters to " + path + ": " + tensor.name + " holds " + float_text(v));
      tensors.push_back(std::move(nt));
    }
  save_file_atomic(
      path, safetensors_bytes(tensors,
                              {{"format", "cltrain-lora"},
                               {"rank", std::to_string(settings_.lora_rank)},
                               {"alpha", float_text(lora_.front().scale * static_cast<float>(settings_.lora_rank))}}));
}

void Engine::import_lora(const std::string& path) {
  require_prepared("import_lora");
  if (lora_.empty()) throw std::invalid_argument("import_lora: the session has no LoRA adapters (set lora_rank)");
  std::map<std::string, std::string> meta;
  const std::vector<NamedTensor> file = parse_safetensors(read_file_bytes(path), path, &meta);
  if (meta.count("rank") && meta["rank"] != std::to_string(settings_.lora_rank))
    throw CheckpointError(path + ": adapters of rank " + meta["rank"] + "; this session's are of rank " +
                          std::to_string(settings_.lora_rank));
  std::map<std::string, const NamedTensor*> by_name;
  for (const NamedTensor& t : file) by_name[t.name] = &t;
  // Everything checked before anything is written.
  std::vector<std::pair<std::string, const std::vector<float>*>> writes;
  for (const LoraAdapter& ad : lora_)
    for (const auto& [t, which] : {std::make_pair(ad.a, "A"), std::make_pair(ad.b, "B")}) {
      const Tensor& tensor = model_.tensors[static_cast<size_t>(t)];
      const std::string name = adapter_name(model_, ad.weight, which);
      const auto it = by_name.find(name);
      if (it == by_name.end()) throw CheckpointError(path + ": has no adapter '" + name + "'");
      const std::vector<int64_t> want(tensor.shape.begin(), tensor.shape.end());
      if (it->second->shape != want)
        throw CheckpointError(path + ": '" + name + "' has another shape than this model's adapter");
      for (float v : it->second->values)
        if (!std::isfinite(v)) throw CheckpointError(path + ": '" + name + "' holds " + float_text(v));
      writes.emplace_back(tensor.name, &it->second->values);
      by_name.erase(it);
    }
  if (!by_name.empty())
    throw CheckpointError(path + ": '" + by_name.begin()->first + "' adapts no weight of this model");
  for (const auto& [name, values] : writes) set_weight(name, *values);
}

void Engine::import_checkpoint(const std::string& path) {
  require_prepared("import_checkpoint");
  TrainingPosition pos;
  try {
    // The whole file is checked before anything is written: a CheckpointError leaves the session
    // as it was; a backend failing while the tensors are written leaves it partly overwritten.
    pos = load_checkpoint(*session_, model_, read_file_bytes(path), path);
  } catch (const CheckpointError&) {
    throw;
  } catch (...) {
    session_->set_consistent(false);
    throw;
  }
  session_->set_consistent(true);  // every tensor a step updates was written
  if (pos.epoch > static_cast<uint32_t>(INT32_MAX))
    throw CheckpointError(path + ": records epoch " + std::to_string(pos.epoch) + ", beyond any run (at most " +
                          std::to_string(INT32_MAX) + ")");
  std::string bad;
  read_weights(&bad);
  if (!bad.empty()) throw CheckpointError(path + ": " + bad);
  epochs_ = static_cast<int32_t>(pos.epoch);
  epoch_start_steps_ = pos.step;
  progress_ = pos.has_progress ? pos.progress : Progress{};
}

namespace {

// The periodic checkpoints of dir, newest (highest step) first.
std::vector<std::pair<int64_t, std::string>> periodic_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 20 || name.compare(0, 5, "step-") != 0 || name.compare(15, 5, ".ckpt") != 0) continue;
    const std::string digits = name.substr(5, 10);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    out.emplace_back(std::stoll(digits), e.path().string());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

}  // namespace

void Engine::write_periodic_checkpoint() {
  const std::string& dir = settings_.checkpoint_dir;
  char name[32];
  std::snprintf(name, sizeof name, "step-%010lld.ckpt", static_cast<long long>(progress_.batches));
  const std::string path = (dir.empty() ? std::string(".") : dir) + "/" + name;
  try {
    std::filesystem::create_directories(dir.empty() ? std::string(".") : dir);
    trained_weights(path);  // refuses non-finite weights
    save_file_atomic(path, checkpoint_bytes(true));
    last_checkpoint_ = path;
  } catch (const std::exception& e) {
    throw CheckpointError(std::string("the step was applied, but its periodic checkpoint was not written: ") +
                          e.what());
  }
  remove_stale_temporaries_in(dir.empty() ? std::string(".") : dir, "step-");
  const auto all = periodic_checkpoints(dir.empty() ? std::string(".") : dir);
  for (size_t i = static_cast<size_t>(std::max(settings_.keep_checkpoints, 1)); i < all.size(); ++i) {
    std::error_code ec;
    std::filesystem::remove(all[i].second, ec);
  }
}

std::string Engine::resume(const std::string& dir, std::vector<std::string>* rejected) {
  require_prepared("resume");
  for (const auto& [step, path] : periodic_checkpoints(dir)) {
    (void)step;
    try {
      // Checked whole before anything is written (the checksum first), so a rejected file leaves
      // the session as it was.
      import_checkpoint(path);
      last_checkpoint_ = path;
      return path;
    } catch (const CheckpointError& e) {
      warnings_.push_back(std::string(e.what()) + "; resuming from the one before");
      if (rejected) rejected->push_back(e.what());
    }
  }
  return {};
}

}  // namespace cltrain
