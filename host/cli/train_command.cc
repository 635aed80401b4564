#include "train_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "atomic_file.h"
#include "dataset.h"
#include "session_setup.h"
#include "trainer.h"

namespace cltrain {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// The training loop's steps through the C API: each batch is copied in with set_input and
// set_expected, then stepped.
class ApiSteps : public Steps {
 public:
  explicit ApiSteps(const PreparedSession& p) : api_(*p.api), p_(p) {}
  uint64_t batch() const override { return static_cast<uint64_t>(p_.batch); }
  uint64_t input_size() const override { return p_.input_size; }
  uint64_t output_size() const override { return p_.output_size; }
  float train_step(const float* input, const float* expected, float* prediction) override {
    set_batch(input, expected);
    float loss = 0;
    api_.check(cltrain_train_step_outputs(api_.get(), &loss, prediction, prediction ? outputs() : 0));
    return loss;
  }
  float evaluate(const float* input, const float* expected, float* prediction) override {
    set_batch(input, expected);
    float loss = 0;
    api_.check(cltrain_evaluate(api_.get(), &loss, prediction, prediction ? outputs() : 0));
    return loss;
  }
  int64_t skipped() const override {
    int64_t n = 0;
    api_.check(cltrain_get_skipped_steps(api_.get(), &n));
    return n;
  }
  void predict(const float* input, float* prediction) override {
    if (p_.int32_input)
      api_.check(cltrain_predict_int32(api_.get(), ids(input), batch() * input_size(), prediction, outputs()));
    else
      api_.check(cltrain_predict(api_.get(), input, batch() * input_size(), prediction, outputs()));
  }

 private:
  uint64_t outputs() const { return batch() * output_size(); }
  // An int32 input's samples hold the ids' bits (load_raw read them as they are).
  static const int32_t* ids(const float* input) { return reinterpret_cast<const int32_t*>(input); }
  void set_batch(const float* input, const float* expected) {
    if (p_.int32_input)
      api_.check(cltrain_set_input_int32(api_.get(), ids(input), batch() * input_size()));
    else
      api_.check(cltrain_set_input(api_.get(), input, batch() * input_size()));
    api_.check(cltrain_set_expected(api_.get(), expected, outputs()));
  }
  const ApiSession& api_;
  const PreparedSession& p_;
};

void print_parameters(const Options& o, const cltrain_settings& c, int32_t batch) {
  std::printf("Model Filename %s\n", o.model.c_str());
  std::printf("== training parameter ==\n");
  std::printf("- learning_rate   = %g\n", static_cast<double>(c.learning_rate));
  std::printf("- batch_size      = %d\n", batch);
  std::printf("- loss_info       = {loss = %s, reduction = %s}\n",
              c.loss == CLTRAIN_LOSS_MEAN_SQUARED_ERROR ? "mean squared error" : "categorical crossentropy",
              c.loss_reduction == CLTRAIN_REDUCTION_TYPE_SUM_OVER_BATCH_SIZE ? "sum over batch size" : "sum");
  std::printf("- optimizer       = %s\n", c.optimizer == CLTRAIN_OPTIMIZER_SGD ? "sgd" : "adam");
  std::printf("- num_of_trainable_ops = %d\n", c.num_trainable_ops);
  std::printf("========================\n");
  std::fflush(stdout);
}

// --resume DIR: the newest periodic checkpoint of DIR that loads, and where in its epoch it was.
void resume(const ApiSession& api, const std::string& dir, TrainerConfig& tc) {
  int32_t warnings = 0;
  while (cltrain_warning(api.get(), warnings)) ++warnings;
  char used[4096];
  api.check(cltrain_resume(api.get(), dir.c_str(), used, sizeof used));
  for (int32_t i = warnings; const char* w = cltrain_warning(api.get(), i); ++i)
    std::fprintf(stderr, "cltrain: warning: %s\n", w);
  if (used[0] == '\0') {
    std::fprintf(stderr, "cltrain: %s holds no checkpoint: training from the start\n", dir.c_str());
    return;
  }
  int64_t steps = 0;
  api.check(cltrain_get_position(api.get(), &steps, &tc.epochs_done));
  api.check(cltrain_get_progress(api.get(), &tc.resume_batches, &tc.resume_loss_sum));
  std::fprintf(stderr, "cltrain: resuming from %s: %d epochs and %lld steps of the next done (optimizer step %lld)\n",
               used, tc.epochs_done, static_cast<long long>(tc.resume_batches), static_cast<long long>(steps));
}

}  // namespace

int run_train(const Options& o) {
  check_output_paths(o);  // before hours of training, not after
  // Data first: a bad data file should not wait for kernel builds.
  Dataset data, test;
  const bool fashion = !o.data.empty();
  if (fashion) {
    const std::string dir = o.data.size() > 14 ? o.data.substr(14) : kFashionMnistDir;
    data = load_fashion_mnist(dir, true);
    test = load_fashion_mnist(dir, false);
  }
  const PreparedSession prepared = load_and_prepare(o);
  const ApiSession& api = *prepared.api;
  const cltrain_settings& settings = prepared.settings;
  const int32_t batch = prepared.batch;
  if (fashion && prepared.int32_input)
    throw DataError("the model " + o.model + " takes int32 token ids, not Fashion-MNIST images: give --load_input:raw");
  if (!fashion)
    data = load_raw(o.load_input_raw, prepared.input_size, o.load_expected_raw, prepared.output_size,
                    prepared.int32_input);
  if (data.input_size != prepared.input_size || data.expected_size != prepared.output_size)
    throw DataError("the data has samples of " + std::to_string(data.input_size) + " inputs and " +
                    std::to_string(data.expected_size) + " outputs, the model " + o.model + " takes " +
                    std::to_string(prepared.input_size) + " and gives " + std::to_string(prepared.output_size));
  if (o.data_limit >= 0) data.truncate(static_cast<uint64_t>(o.data_limit));
  Dataset validation;
  if (o.validation_split > 0) validation = data.split_tail(static_cast<uint64_t>(data.size() * o.validation_split));

  print_parameters(o, settings, batch);
  TrainerConfig tc;
  tc.epochs = settings.epochs;
  tc.accuracy = o.metric == 0;
  tc.shuffle = o.shuffle;
  tc.progress = o.progress && isatty(STDOUT_FILENO);
  if (!o.checkpoint.empty() && !o.resume.empty())
    throw UsageError("--checkpoint and --resume both say where to start: give one");
  if ((!o.export_lora.empty() || !o.lora_from.empty()) && o.lora_rank <= 0)
    throw UsageError(std::string(o.export_lora.empty() ? "--lora_from" : "--export_lora") +
                     " is for LoRA's adapters: give --lora RANK too");
  if (!o.resume.empty()) resume(api, o.resume, tc);
  if (!o.checkpoint.empty()) {
    api.check(cltrain_import_checkpoint(api.get(), o.checkpoint.c_str()));
    int64_t steps = 0;
    api.check(cltrain_get_position(api.get(), &steps, &tc.epochs_done));
    // onert records epoch 0 in every checkpoint: the step count says where training was.
    const uint64_t per_epoch = data.size() / static_cast<uint64_t>(batch);
    if (tc.epochs_done == 0 && steps > 0 && per_epoch > 0) {
      tc.epochs_done = static_cast<int32_t>(static_cast<uint64_t>(steps) / per_epoch);
      std::fprintf(stderr,
                   "cltrain: warning: %s records epoch 0 after %lld steps (as onert writes it): %lld steps of %llu "
                   "per epoch make %d epochs done\n",
                   o.checkpoint.c_str(), static_cast<long long>(steps), static_cast<long long>(steps),
                   static_cast<unsigned long long>(per_epoch), tc.epochs_done);
    }
    if (tc.epochs_done >= tc.epochs)
      throw UsageError(o.checkpoint + " has trained " + std::to_string(tc.epochs_done) + " epochs; --epoch " +
                       std::to_string(tc.epochs) + " asks for no more (give --epoch " +
                       std::to_string(tc.epochs_done + 1) + " or more to train on)");
  }
  if (!o.lora_from.empty()) api.check(cltrain_import_lora(api.get(), o.lora_from.c_str()));
  ApiSteps steps(prepared);
  const auto t_exec = Clock::now();
  auto epochs = train(steps, data, validation, tc, [&](const EpochResult& r) {
    api.check(cltrain_set_epochs_done(api.get(), r.epoch));  // so that errors name the epoch
    std::printf("Epoch %d/%d - time: %.3fms/step - loss: [0] %.4f", r.epoch, tc.epochs, r.ms_per_step, r.loss);
    if (r.accuracy >= 0) std::printf(" - categorical_accuracy: %.4f", r.accuracy);
    if (r.val_loss >= 0) {
      std::printf(" - val_loss: [0] %.4f", r.val_loss);
      std::printf(" - val_categorical_accuracy: %.4f", r.val_accuracy);
    }
    if (r.skipped > 0) std::printf(" - skipped: %lld non-finite steps", static_cast<long long>(r.skipped));
    std::printf("\n");
    std::fflush(stdout);
  });
  const double ms_exec = ms_since(t_exec);
  if (!epochs.empty()) api.check(cltrain_set_epochs_done(api.get(), epochs.back().epoch));
  api.check(cltrain_export_files(api.get(), o.export_circle.c_str(), o.export_circleplus.c_str(),
                                 o.export_checkpoint.c_str()));
  if (!o.export_lora.empty()) api.check(cltrain_export_lora(api.get(), o.export_lora.c_str()));
  double test_accuracy = -1;
  if (fashion) {
    test_accuracy = categorical_accuracy(steps, test);
    std::printf("Test accuracy: %.4f (%llu Fashion-MNIST test images)\n", test_accuracy,
                static_cast<unsigned long long>(test.size()));
  }
  std::printf("===================================\n");
  std::printf("MODEL_LOAD   takes %.4f ms\n", prepared.ms_load);
  std::printf("PREPARE      takes %.4f ms\n", prepared.ms_prepare);
  std::printf("EXECUTE      takes %.4f ms\n", ms_exec);
  for (const auto& r : epochs) std::printf("- Epoch %-6d takes %.4f ms\n", r.epoch, r.ms);
  std::printf("===================================\n");
  std::fflush(stdout);

  if (!o.report.empty()) {
    nlohmann::json j;
    j["model"] = o.model;
    j["backends"] = prepared.backend_names;
    j["device"] = prepared.device_names;
    j["batch_size"] = batch;
    j["epochs"] = nlohmann::json::array();
    for (const auto& r : epochs) {
      nlohmann::json e = {{"epoch", r.epoch}, {"loss", r.loss}, {"ms_per_step", r.ms_per_step}};
      if (r.accuracy >= 0) e["accuracy"] = r.accuracy;
      if (r.val_loss >= 0) {
        e["val_loss"] = r.val_loss;
        e["val_accuracy"] = r.val_accuracy;
      }
      j["epochs"].push_back(e);
    }
    if (test_accuracy >= 0) j["test_accuracy"] = test_accuracy;
    j["timings_ms"] = {{"model_load", prepared.ms_load}, {"prepare", prepared.ms_prepare}, {"execute", ms_exec}};
    j["memory"] = memory_json(api);
    j["rewrites"] = rewrite_lines(api);
    j["placement"] = placement_json(api);
    save_text_atomic(o.report, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace cltrain
