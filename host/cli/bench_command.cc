#include "bench_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>

#include "session_setup.h"

namespace cltrain {

int run_bench(const Options& o) {
  PreparedSession p = load_and_prepare(o);
  Session& session = *p.session;
  // One fixed batch: inputs uniform in [0, 1), one-hot expected outputs of random classes.
  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  const uint64_t b = static_cast<uint64_t>(p.batch);
  std::vector<float> input(b * p.input_size), expected(b * p.output_size, 0.0f);
  for (float& v : input) v = uniform(rng);
  for (uint64_t i = 0; i < b; ++i) expected[i * p.output_size + rng() % p.output_size] = 1.0f;

  std::printf("bench %s: batch %d, %s, %s, backends %s\n", o.model.c_str(), p.batch, o.optimizer == 1 ? "sgd" : "adam",
              o.loss == 1 ? "mean squared error" : "categorical crossentropy", session.backend_names().c_str());
  std::printf("device: %s\n", session.device_names().c_str());
  std::printf("MODEL_LOAD takes %.4f ms, PREPARE takes %.4f ms\n", p.ms_load, p.ms_prepare);
  nlohmann::json steps = nlohmann::json::array();
  std::vector<double> times;
  int64_t iteration = 0;
  for (int32_t s = 0; s < o.warmup + o.steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    const float loss = session.train_step(input.data(), expected.data(), ++iteration, nullptr);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const bool warm = s >= o.warmup;
    std::printf("%s %d - loss: %.6f - %.3f ms\n", warm ? "step" : "warm-up step", warm ? s - o.warmup + 1 : s + 1,
                loss, ms);
    std::fflush(stdout);
    steps.push_back({{"step", s + 1}, {"warmup", !warm}, {"loss", loss}, {"ms", ms}});
    if (warm) times.push_back(ms);
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  std::printf("median: %.3f ms/step over %zu steps\n", median, times.size());
  if (!o.report.empty()) {
    nlohmann::json j;
    j["model"] = o.model;
    j["batch_size"] = p.batch;
    j["backends"] = session.backend_names();
    j["device"] = session.device_names();
    j["ms_per_step"] = median;
    j["steps"] = steps;
    j["timings_ms"] = {{"model_load", p.ms_load}, {"prepare", p.ms_prepare}};
    j["memory"] = memory_json(session);
    j["placement"] = placement_json(session);
    std::ofstream f(o.report);
    f << j.dump(2) << "\n";
    if (!f) throw std::runtime_error("cannot write report " + o.report);
  }
  return 0;
}

}  // namespace cltrain
