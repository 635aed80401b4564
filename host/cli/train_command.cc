#include "train_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend.h"
#include "dataset.h"
#include "memory_plan.h"
#include "model/model.h"
#include "session.h"
#include "trainer.h"
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
  return t;
}

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

int run_train(const Options& o) {
  // Model.
  const auto t_load = Clock::now();
  Model model = load_model(o.model);
  const int32_t batch = o.batch_size ? *o.batch_size
                                     : (model.tensors[static_cast<size_t>(model.inputs.at(0))].shape.empty()
                                            ? 1
                                            : model.tensors[static_cast<size_t>(model.inputs[0])].shape[0]);
  set_batch_size(model, batch);
  const double ms_load = ms_since(t_load);

  // Data.
  const auto& in_shape = model.tensors[static_cast<size_t>(model.inputs[0])].shape;
  const auto& out_shape = model.tensors[static_cast<size_t>(model.outputs.at(0))].shape;
  uint64_t in_size = 1, out_size = 1;
  for (size_t i = 1; i < in_shape.size(); ++i) in_size *= static_cast<uint64_t>(in_shape[i]);
  for (size_t i = 1; i < out_shape.size(); ++i) out_size *= static_cast<uint64_t>(out_shape[i]);
  Dataset data, test;
  const bool fashion = !o.data.empty();
  if (fashion) {
    const std::string dir = o.data.size() > 14 ? o.data.substr(14) : kFashionMnistDir;
    data = load_fashion_mnist(dir, true);
    test = load_fashion_mnist(dir, false);
  } else {
    data = load_raw(o.load_input_raw, in_size, o.load_expected_raw, out_size);
  }
  if (data.input_size != in_size || data.expected_size != out_size)
    throw DataError("the data has samples of " + std::to_string(data.input_size) + " inputs and " +
                    std::to_string(data.expected_size) + " outputs, the model " + o.model + " takes " +
                    std::to_string(in_size) + " and gives " + std::to_string(out_size));
  if (o.data_limit >= 0) data.truncate(static_cast<uint64_t>(o.data_limit));
  Dataset validation;
  if (o.validation_split > 0) validation = data.split_tail(static_cast<uint64_t>(data.size() * o.validation_split));

  // Prepare.
  const auto t_prepare = Clock::now();
  TrainingGraph graph = build_training_graph(model, train_options(o));
  Session session(std::move(graph), open_backends(o));
  session.prepare();
  const double ms_prepare = ms_since(t_prepare);

  print_parameters(o, batch);
  TrainerConfig tc;
  tc.epochs = o.epochs;
  tc.accuracy = o.metric == 0;
  tc.progress = o.progress && isatty(STDOUT_FILENO);
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
    nlohmann::json mem = nlohmann::json::object();
    for (const auto& m : session.memory()) {
      nlohmann::json b;
      for (int r = 0; r < CLTRAIN_ROLE_COUNT; ++r) b[role_key(r)] = m.report.role_peak[r];
      b["total"] = m.report.pool_bytes;
      b["lower_bound"] = m.report.lower_bound;
      mem[m.backend] = b;
    }
    j["memory"] = mem;
    nlohmann::json placement = nlohmann::json::object();
    const auto p = session.model_op_placement();
    for (size_t i = 0; i < p.size(); ++i) placement[std::to_string(i)] = p[i];
    j["placement"] = placement;
    std::ofstream f(o.report);
    f << j.dump(2) << "\n";
    if (!f) throw std::runtime_error("cannot write report " + o.report);
  }
  return 0;
}

}  // namespace cltrain
