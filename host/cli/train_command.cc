#include "train_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend.h"
#include "checkpoint.h"
#include "dataset.h"
#include "memory_plan.h"
#include "model/builder.h"
#include "model/model.h"
#include "session.h"
#include "session_setup.h"
#include "trainer.h"
#include "training_graph.h"

namespace cltrain {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void print_parameters(const Options& o, int32_t batch) {
  std::printf("Model Filename %s\n", o.model.c_str());
  std::printf("== training parameter ==\n");
  std::printf("- learning_rate   = %g\n", static_cast<double>(o.learning_rate));
  std::printf("- batch_size      = %d\n", batch);
  std::printf("- loss_info       = {loss = %s, reduction = %s}\n",
              o.loss == 1 ? "mean squared error" : "categorical crossentropy",
              o.loss_reduction == 1 ? "sum over batch size" : "sum");
  std::printf("- optimizer       = %s\n", o.optimizer == 1 ? "sgd" : "adam");
  std::printf("- num_of_trainable_ops = %d\n", o.num_of_trainable_ops);
  std::printf("========================\n");
  std::fflush(stdout);
}

}  // namespace

int run_train(const Options& given) {
  // Data first: a bad data file should not wait for kernel builds.
  Dataset data, test;
  const bool fashion = !given.data.empty();
  if (fashion) {
    const std::string dir = given.data.size() > 14 ? given.data.substr(14) : kFashionMnistDir;
    data = load_fashion_mnist(dir, true);
    test = load_fashion_mnist(dir, false);
  }
  PreparedSession prepared = load_and_prepare(given);
  const Options& o = prepared.options;
  Session& session = *prepared.session;
  const int32_t batch = prepared.batch;
  const double ms_load = prepared.ms_load, ms_prepare = prepared.ms_prepare;
  if (!fashion) data = load_raw(o.load_input_raw, prepared.input_size, o.load_expected_raw, prepared.output_size);
  if (data.input_size != prepared.input_size || data.expected_size != prepared.output_size)
    throw DataError("the data has samples of " + std::to_string(data.input_size) + " inputs and " +
                    std::to_string(data.expected_size) + " outputs, the model " + o.model + " takes " +
                    std::to_string(prepared.input_size) + " and gives " + std::to_string(prepared.output_size));
  if (o.data_limit >= 0) data.truncate(static_cast<uint64_t>(o.data_limit));
  Dataset validation;
  if (o.validation_split > 0) validation = data.split_tail(static_cast<uint64_t>(data.size() * o.validation_split));

  print_parameters(o, batch);
  TrainerConfig tc;
  tc.epochs = o.epochs;
  tc.accuracy = o.metric == 0;
  tc.progress = o.progress && isatty(STDOUT_FILENO);
  if (!o.checkpoint.empty()) {
    const TrainingPosition pos = load_checkpoint(session, read_file_bytes(o.checkpoint), o.checkpoint);
    tc.epochs_done = static_cast<int32_t>(pos.epoch);
    tc.iterations_done = pos.step;
  }
  const auto t_exec = Clock::now();
  auto epochs = train(session, data, validation, tc, [&](const EpochResult& r) {
    std::printf("Epoch %d/%d - time: %.3fms/step - loss: [0] %.4f", r.epoch, o.epochs, r.ms_per_step, r.loss);
    if (r.accuracy >= 0) std::printf(" - categorical_accuracy: %.4f", r.accuracy);
    if (r.val_loss >= 0) {
      std::printf(" - val_loss: [0] %.4f", r.val_loss);
      std::printf(" - val_categorical_accuracy: %.4f", r.val_accuracy);
    }
    std::printf("\n");
    std::fflush(stdout);
  });
  const double ms_exec = ms_since(t_exec);
  if (!o.export_checkpoint.empty()) {
    TrainingPosition pos{static_cast<uint32_t>(tc.iterations_done), static_cast<uint32_t>(tc.epochs_done)};
    for (const auto& r : epochs) {
      pos.step += static_cast<uint32_t>(r.steps);
      pos.epoch = static_cast<uint32_t>(r.epoch);
    }
    save_file_atomic(o.export_checkpoint, make_checkpoint(session, pos));
  }
  export_trained_model(prepared);
  double test_accuracy = -1;
  if (fashion) {
    test_accuracy = categorical_accuracy(session, test);
    std::printf("Test accuracy: %.4f (%llu Fashion-MNIST test images)\n", test_accuracy,
                static_cast<unsigned long long>(test.size()));
  }
  std::printf("===================================\n");
  std::printf("MODEL_LOAD   takes %.4f ms\n", ms_load);
  std::printf("PREPARE      takes %.4f ms\n", ms_prepare);
  std::printf("EXECUTE      takes %.4f ms\n", ms_exec);
  for (const auto& r : epochs) std::printf("- Epoch %-6d takes %.4f ms\n", r.epoch, r.ms);
  std::printf("===================================\n");
  std::fflush(stdout);

  if (!o.report.empty()) {
    nlohmann::json j;
    j["model"] = o.model;
    j["backends"] = session.backend_names();
    j["device"] = session.device_names();
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
    j["timings_ms"] = {{"model_load", ms_load}, {"prepare", ms_prepare}, {"execute", ms_exec}};
    j["memory"] = memory_json(session);
    j["placement"] = placement_json(session);
    std::ofstream f(o.report);
    f << j.dump(2) << "\n";
    if (!f) throw std::runtime_error("cannot write report " + o.report);
  }
  return 0;
}

}  // namespace cltrain
