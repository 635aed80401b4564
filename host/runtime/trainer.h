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

struct TrainerConfig {
  int32_t epochs = 5;
  bool accuracy = false;  // categorical accuracy per epoch (reads the predictions back)
  bool shuffle = true;    // reshuffle the training samples each epoch
  uint32_t seed = 1;      // of the shuffle
  bool progress = false;  // a progress line that refreshes in place (for terminals)
  // Where training starts (from a checkpoint): epochs and optimizer iterations already done.
  // Epochs done+1 .. epochs run; each epoch's shuffle depends only on (seed, epoch number), so a
  // resumed run sees the same batches as an uninterrupted one.
  int32_t epochs_done = 0;
  int64_t iterations_done = 0;
};

struct EpochResult {
  int32_t epoch = 0;
  double loss = 0;       // mean of the step losses
  double accuracy = -1;  // -1: not measured
  double val_loss = -1, val_accuracy = -1;
  double ms = 0, ms_per_step = 0;
  int64_t steps = 0;
};

// Called after each epoch (for printing as training goes).
using EpochCallback = std::function<void(const EpochResult&)>;

// Trains for config.epochs over `train` (whole batches only; the remainder of each shuffled
// epoch is left out), evaluating `validation` after each epoch when it is not empty.
std::vector<EpochResult> train(Session& session, const Dataset& train, const Dataset& validation,
                               const TrainerConfig& config, const EpochCallback& on_epoch);

// Fraction of samples whose largest prediction is at the largest expected value; the last
// partial batch is padded and counts only its real samples.
double categorical_accuracy(Session& session, const Dataset& data);

}  // namespace cltrain
