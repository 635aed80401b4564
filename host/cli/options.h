// The `cltrain MODEL [options]` command line, in onert_train's words.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cltrain/cltrain.h"

namespace cltrain {

// A bad command line; what() is one line.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string model;
  int32_t epochs = 5;
  std::optional<int32_t> batch_size;  // default: the model's first dimension
  float learning_rate = 0.001f;
  int32_t loss = CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY;                 // a cltrain_loss
  int32_t loss_reduction = CLTRAIN_REDUCTION_TYPE_SUM_OVER_BATCH_SIZE;  // a cltrain_reduction_type
  int32_t optimizer = CLTRAIN_OPTIMIZER_ADAM;                           // a cltrain_optimizer
  int32_t metric = -1;                                                  // -1 none, 0 categorical accuracy
  float validation_split = 0.0f;
  int32_t num_of_trainable_ops = -1;
  std::string load_input_raw, load_expected_raw;
  std::string data;         // "fashion-mnist" or "fashion-mnist:DIR"
  int64_t data_limit = -1;  // use only the first N training samples
  std::vector<std::string> backends = {"opencl", "cpu"};
  int32_t device = -1;
  // --cache-dir DIR: where backends keep saved plans and kernel binaries; "" (or --no-cache):
  // no cache; unset: $CLTRAIN_CACHE_DIR, else $XDG_CACHE_HOME/cltrain, else ~/.cache/cltrain.
  std::optional<std::string> cache_dir;
  std::string report;
  std::string checkpoint, export_checkpoint;
  std::string lora_from, export_lora;  // LoRA's adapters alone (safetensors)
  std::string resume, checkpoint_dir;  // --resume DIR, --checkpoint_dir DIR
  int32_t checkpoint_every = 0;
  int32_t keep_checkpoints = 3;
  bool on_nonfinite_skip = false;
  std::string train_config;
  std::string export_circle, export_circleplus;
  std::set<std::string> given;  // the options on the command line: they win over a model's training info
  bool progress = true;
  bool shuffle = true;
  bool add_missing_biases = false;
  uint64_t memory_budget = 0;
  bool half_storage = false;  // --storage fp16
  int32_t lora_rank = 0;      // --lora RANK[:ALPHA]
  float lora_alpha = 0.0f;
  // cltrain bench
  int32_t steps = 10;
  int32_t warmup = 1;
  uint32_t seed = 1;
  bool profile = false;  // --profile: device time per (op, phase) from the backends' timing
};

// An int32 option value, or UsageError naming the option.
int32_t to_int(const std::string& opt, const std::string& v);

// UsageError naming the first output path (--report, --export_*) that cannot be written, or two
// outputs given the same path; called before training, so a long run is not lost at its end.
void check_output_paths(const Options& o);

// Parses argv (after the program name). Throws UsageError.
Options parse_train_options(const std::vector<std::string>& args);
// Parses `cltrain bench MODEL [options]` (training options plus --steps, --warmup, --seed,
// --profile; no data).
Options parse_bench_options(const std::vector<std::string>& args);

const char* train_usage();

}  // namespace cltrain
