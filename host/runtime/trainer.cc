#include "trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>

namespace cltrain {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

uint64_t argmax(const float* v, uint64_t n) { return static_cast<uint64_t>(std::max_element(v, v + n) - v); }

// Gathers samples idx[first, first+count) into contiguous batch buffers, padding with the last
// sample when fewer than `batch` remain.
void gather(const Dataset& d, const std::vector<uint64_t>& idx, uint64_t first, uint64_t batch, std::vector<float>& in,
            std::vector<float>& out) {
  in.resize(batch * d.input_size);
  out.resize(batch * d.expected_size);
  for (uint64_t i = 0; i < batch; ++i) {
    const uint64_t s = idx[std::min<uint64_t>(first + i, idx.size() - 1)];
    std::copy_n(d.input(s), d.input_size, in.data() + i * d.input_size);
    std::copy_n(d.expected_of(s), d.expected_size, out.data() + i * d.expected_size);
  }
}

uint64_t count_correct(const float* pred, const float* expected, uint64_t rows, uint64_t width) {
  uint64_t correct = 0;
  for (uint64_t r = 0; r < rows; ++r) correct += argmax(pred + r * width, width) == argmax(expected + r * width, width);
  return correct;
}

void check_sizes(const Steps& s, const Dataset& d) {
  if (d.input_size != s.input_size() || d.expected_size != s.output_size())
    throw DataError("the data has samples of " + std::to_string(d.input_size) + " inputs and " +
                    std::to_string(d.expected_size) + " outputs, the model takes " + std::to_string(s.input_size()) +
                    " and gives " + std::to_string(s.output_size()));
}

}  // namespace

std::vector<uint64_t> epoch_order(uint64_t size, bool shuffle, uint32_t seed, int32_t epoch) {
  std::vector<uint64_t> order(size);
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
  }
  return order;
}

std::vector<EpochResult> train(Session& session, const Dataset& data, const Dataset& validation,
                               const TrainerConfig& config, const EpochCallback& on_epoch) {
  SessionSteps steps(session);
  return train(steps, data, validation, config, on_epoch);
}

std::vector<EpochResult> train(Steps& session, const Dataset& data, const Dataset& validation,
                               const TrainerConfig& config, const EpochCallback& on_epoch) {
  check_sizes(session, data);
  const uint64_t batch = session.batch();
  const uint64_t steps = data.size() / batch;
  if (steps == 0)
    throw DataError("the data has " + std::to_string(data.size()) + " samples, fewer than one batch of " +
                    std::to_string(batch));
  std::vector<float> in, out, pred(config.accuracy ? batch * data.expected_size : 0);
  std::vector<EpochResult> results;
  // CLTRAIN_STEP_LOG=FILE: one line per step (epoch, step, loss) for comparing runs.
  std::unique_ptr<FILE, int (*)(FILE*)> step_log(nullptr, std::fclose);
  if (const char* p = std::getenv("CLTRAIN_STEP_LOG")) step_log.reset(std::fopen(p, "w"));
  for (int32_t e = config.epochs_done + 1; e <= config.epochs; ++e) {
    const std::vector<uint64_t> order = epoch_order(data.size(), config.shuffle, config.seed, e);
    EpochResult r;
    r.epoch = e;
    r.steps = static_cast<int64_t>(steps);
    const bool resumed = e == config.epochs_done + 1 && config.resume_batches > 0;
    const uint64_t first = resumed ? std::min<uint64_t>(static_cast<uint64_t>(config.resume_batches), steps) : 0;
    double loss_sum = resumed ? config.resume_loss_sum : 0;
    uint64_t correct = 0, applied = first;
    const auto t0 = Clock::now();
    auto last_progress = t0;
    for (uint64_t s = first; s < steps; ++s) {
      gather(data, order, s * batch, batch, in, out);
      const int64_t skipped_before = session.skipped();
      const float loss = session.train_step(in.data(), out.data(), config.accuracy ? pred.data() : nullptr);
      if (session.skipped() != skipped_before) {  // not applied; left out of the epoch's loss
        ++r.skipped;
        if (step_log) std::fprintf(step_log.get(), "%d %llu skipped\n", e, static_cast<unsigned long long>(s));
        continue;
      }
      ++applied;
      if (!std::isfinite(loss))
        throw TrainingError("the loss became " + std::string(std::isnan(loss) ? "NaN" : "infinite") + " at epoch " +
                            std::to_string(e) + ", step " + std::to_string(s + 1) +
                            " (is the learning rate too high, or the data not scaled?)");
      loss_sum += loss;
      if (step_log) std::fprintf(step_log.get(), "%d %llu %.9g\n", e, static_cast<unsigned long long>(s), loss);
      if (config.accuracy) correct += count_correct(pred.data(), out.data(), batch, data.expected_size);
      if (config.progress && ms_since(last_progress) > 200) {
        last_progress = Clock::now();
        std::fprintf(stdout, "\rEpoch %d/%d - step %llu/%llu - loss: %.4f", e, config.epochs,
                     static_cast<unsigned long long>(s + 1), static_cast<unsigned long long>(steps),
                     loss_sum / static_cast<double>(std::max<uint64_t>(applied, 1)));
        std::fflush(stdout);
      }
    }
    r.ms = ms_since(t0);
    r.ms_per_step = r.ms / static_cast<double>(std::max<uint64_t>(steps - first, 1));
    r.loss = loss_sum / static_cast<double>(std::max<uint64_t>(applied, 1));
    // (accuracy counts the steps this run made: a resumed epoch's earlier ones are not kept)
    if (config.accuracy)
      r.accuracy = static_cast<double>(correct) / static_cast<double>(std::max<uint64_t>(applied - first, 1) * batch);
    if (config.progress) {
      std::fprintf(stdout, "\r\033[K");
      std::fflush(stdout);
    }
    if (validation.size() >= batch) {
      std::vector<uint64_t> vidx(validation.size());
      std::iota(vidx.begin(), vidx.end(), 0);
      const uint64_t vsteps = validation.size() / batch;
      std::vector<float> vpred(batch * validation.expected_size);
      double vloss = 0;
      uint64_t vcorrect = 0;
      for (uint64_t s = 0; s < vsteps; ++s) {
        gather(validation, vidx, s * batch, batch, in, out);
        vloss += session.evaluate(in.data(), out.data(), vpred.data());
        vcorrect += count_correct(vpred.data(), out.data(), batch, validation.expected_size);
      }
      r.val_loss = vloss / static_cast<double>(vsteps);
      r.val_accuracy = static_cast<double>(vcorrect) / static_cast<double>(vsteps * batch);
    }
    results.push_back(r);
    if (on_epoch) on_epoch(r);
  }
  return results;
}

double categorical_accuracy(Session& session, const Dataset& data) {
  SessionSteps steps(session);
  return categorical_accuracy(steps, data);
}

double categorical_accuracy(Steps& session, const Dataset& data) {
  check_sizes(session, data);
  const uint64_t batch = session.batch();
  if (data.size() == 0) return 0;
  std::vector<uint64_t> idx(data.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::vector<float> in, out, pred(batch * data.expected_size);
  uint64_t correct = 0;
  for (uint64_t first = 0; first < data.size(); first += batch) {
    gather(data, idx, first, batch, in, out);
    session.predict(in.data(), pred.data());
    correct += count_correct(pred.data(), out.data(), std::min(batch, data.size() - first), data.expected_size);
  }
  return static_cast<double>(correct) / static_cast<double>(data.size());
}

}  // namespace cltrain
