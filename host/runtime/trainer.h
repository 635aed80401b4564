// The training loop: epochs over a dataset in batches, with shuffling, metrics and validation.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "dataset.h"
#include "session.h"

namespace cltrain {

// Training went wrong (the loss is no longer finite); what() is one line.
struct TrainingError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the training loop drives: a prepared model, one batch at a time. A Session (through
// SessionSteps) or a session of the C API (the CLI's) can be driven.
class Steps {
 public:
  virtual ~Steps() = default;
  virtual uint64_t batch() const = 0;
  virtual uint64_t input_size() const = 0;   // floats per sample
  virtual uint64_t output_size() const = 0;  // floats per sample
  // One optimizer step (the next iteration); the loss. prediction may be NULL.
  virtual float train_step(const float* input, const float* expected, float* prediction) = 0;
  virtual float evaluate(const float* input, const float* expected, float* prediction) = 0;
  virtual void predict(const float* input, float* prediction) = 0;
  // Steps not applied so far because their loss or a gradient was not finite (on_nonfinite skip):
  // a step that raises it is left out of the epoch's loss.
  virtual int64_t skipped() const { return 0; }
};

// A Session as Steps (the session counts the optimizer's iterations).
class SessionSteps : public Steps {
 public:
  explicit SessionSteps(Session& s) : s_(s) {}
  uint64_t batch() const override { return static_cast<uint64_t>(s_.batch()); }
  uint64_t input_size() const override { return s_.input_elements() / batch(); }
  uint64_t output_size() const override { return s_.prediction_elements() / batch(); }
  float train_step(const float* input, const float* expected, float* prediction) override {
    return s_.train_step(input, expected, prediction);
  }
  float evaluate(const float* input, const float* expected, float* prediction) override {
    return s_.evaluate(input, expected, prediction);
  }
  void predict(const float* input, float* prediction) override { s_.predict(input, prediction); }

 private:
  Session& s_;
};

struct TrainerConfig {
  int32_t epochs = 5;
  bool accuracy = false;  // categorical accuracy per epoch (reads the predictions back)
  bool shuffle = true;    // reshuffle the training samples each epoch
  uint32_t seed = 1;      // of the shuffle
  bool progress = false;  // a progress line that refreshes in place (for terminals)
  // Where training starts (from a checkpoint): the epochs already done. Epochs done+1 .. epochs
  // run; each epoch's shuffle depends only on (seed, epoch number), so a resumed run sees the same
  // batches as an uninterrupted one. (The optimizer's iterations done are the session's,
  // Session::iterations.)
  int32_t epochs_done = 0;
  // Resumed mid-epoch (a periodic checkpoint's progress): the batches of epoch epochs_done + 1
  // already run, and the sum of their applied losses. The epoch goes on at the next batch.
  int64_t resume_batches = 0;
  double resume_loss_sum = 0;
};

struct EpochResult {
  int32_t epoch = 0;
  double loss = 0;       // mean of the step losses
  double accuracy = -1;  // -1: not measured
  double val_loss = -1, val_accuracy = -1;
  double ms = 0, ms_per_step = 0;
  int64_t steps = 0;
  int64_t skipped = 0;  // steps not applied (on_nonfinite skip)
};

// Called after each epoch (for printing as training goes).
using EpochCallback = std::function<void(const EpochResult&)>;

// Trains for config.epochs over `train` (whole batches only; the remainder of each shuffled
// epoch is left out), evaluating `validation` after each epoch when it is not empty.
std::vector<EpochResult> train(Steps& steps, const Dataset& train, const Dataset& validation,
                               const TrainerConfig& config, const EpochCallback& on_epoch);
std::vector<EpochResult> train(Session& session, const Dataset& train, const Dataset& validation,
                               const TrainerConfig& config, const EpochCallback& on_epoch);

// The order of the training samples in an epoch (1-based): a shuffle that depends only on
// (seed, epoch), or 0..size-1 without shuffling.
std::vector<uint64_t> epoch_order(uint64_t size, bool shuffle, uint32_t seed, int32_t epoch);

// Fraction of samples whose largest prediction is at the largest expected value; the last
// partial batch is padded and counts only its real samples.
double categorical_accuracy(Steps& steps, const Dataset& data);
double categorical_accuracy(Session& session, const Dataset& data);

}  // namespace cltrain
