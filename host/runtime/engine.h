// The one way into the runtime: a model, its training settings, and, once prepared, a session on
// the backends, with what an application does with it (steps, inference, weights, export,
// checkpoints, the memory report). The C API (include/cltrain/cltrain.h) is a shell over it,
// and the CLI goes through that API or, for its diagnostics (bench, plan), this class.
//
// Errors are exceptions (ModelError, DataError, BackendError, CheckpointError, TrainingError,
// std::invalid_argument for misuse), each with one line.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "cltrain/cltrain.h"
#include "model/model.h"
#include "passes/model_edits.h"
#include "session.h"
#include "training_graph.h"

namespace cltrain {

// Every training setting the CLI has; onert_train's codes.
// "" when every value of v[0..n) is finite, else what the first non-finite one is and where.
std::string non_finite_element(const float* v, size_t n);

// The choices of cltrain.h's settings with its values (onert's codes), as the runtime keeps them
// from the API on: any value the API is given (prepare refuses one that is not listed).
enum class Optimizer : int32_t { kSgd = CLTRAIN_OPTIMIZER_SGD, kAdam = CLTRAIN_OPTIMIZER_ADAM };
enum class Loss : int32_t {
  kSparseCategoricalCrossentropy = 0,  // only from a model's CIRCLE_TRAINING; prepare refuses it
  kMeanSquaredError = CLTRAIN_LOSS_MEAN_SQUARED_ERROR,
  kCategoricalCrossentropy = CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY,
  kCategoricalCrossentropyFromLogits = CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY_FROM_LOGITS,
};
enum class Reduction : int32_t {
  kSumOverBatchSize = CLTRAIN_REDUCTION_TYPE_SUM_OVER_BATCH_SIZE,
  kSum = CLTRAIN_REDUCTION_TYPE_SUM,
};

// What a training step whose loss or gradients are not finite does. Either way the step is not
// applied: the weights and the optimizer state stay as they were (Session::train_step).
enum class NonFinite : int32_t {
  kStop = CLTRAIN_NONFINITE_STOP,  // train_step throws TrainingError; the session stays usable
  kSkip = CLTRAIN_NONFINITE_SKIP,  // train_step returns the loss and counts the step (skipped_steps)
};

struct Settings {
  int32_t batch_size = 0;  // 0: the model's training info, else its first dimension
  Optimizer optimizer = Optimizer::kAdam;
  float learning_rate = 0.001f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;
  Loss loss = Loss::kCategoricalCrossentropy;
  Reduction loss_reduction = Reduction::kSumOverBatchSize;
  // -1 all, 0 none, N the last N operators, -2 as op_ranks says (the operators a model's
  // CIRCLE_TRAINING lists, or a train config)
  int32_t num_trainable_ops = -1;
  std::vector<int32_t> op_ranks;  // per operator (kRank*), when num_trainable_ops is -2
  int32_t epochs = 5;             // what a circle+ export records
  // A zero bias, trained and exported, for each FullyConnected, Conv2D and DepthwiseConv2D
  // without one (converters drop zero biases); without it, prepare warns about them.
  bool add_missing_biases = false;
  // Bytes the backends' memory pools may take together, 0: no limit: forward steps are
  // recomputed during backward where that is what it takes (Session::prepare).
  uint64_t memory_budget = 0;
  // Activations and back-prop tensors stored as float16 where every op touching one allows it
  // (--storage fp16; float32 arithmetic, weights and optimizer state).
  bool half_storage = false;
  // LoRA (--lora RANK[:ALPHA]): adapters of this rank on the FullyConnected operators the
  // trainable choice above covers, which alone train (passes/model_edits.h); 0: none. alpha 0:
  // the rank (a scale of 1). Exports merge W + (alpha / rank) B A into W.
  int32_t lora_rank = 0;
  float lora_alpha = 0.0f;
  NonFinite on_nonfinite = NonFinite::kStop;
  // Periodic checkpoints: after every checkpoint_every-th step (0: none) a checkpoint (weights,
  // optimizer state, position, progress within the epoch; checkpoint.h) is written atomically into
  // checkpoint_dir as step-NNNNNNNNNN.ckpt, and all but the newest keep_checkpoints are removed.
  int32_t checkpoint_every = 0;
  std::string checkpoint_dir;
  int32_t keep_checkpoints = 3;
  std::vector<std::string> backends = {"opencl"};  // in order of preference; the CPU is always last
  int32_t device = -1;                             // OpenCL device index, -1: the default
  // Where backends keep saved plans and kernel binaries; "": none; nullopt: $CLTRAIN_CACHE_DIR,
  // else $XDG_CACHE_HOME/cltrain, else ~/.cache/cltrain.
  std::optional<std::string> cache_dir;
};

// The training position a checkpoint carries.
struct Position {
  int64_t steps = 0;   // optimizer iterations done (Adam's t)
  int32_t epochs = 0;  // epochs done
};

class Engine {
 public:
  // Loads and verifies a model (what: its name in messages); its CIRCLE_TRAINING metadata, if
  // any, gives the settings' defaults.
  static std::unique_ptr<Engine> from_file(const std::string& path);
  static std::unique_ptr<Engine> from_buffer(std::vector<uint8_t> bytes, const std::string& what);

  const Settings& settings() const { return settings_; }
  // Before prepare only (std::logic_error after).
  void set_settings(const Settings& s);
  // Reads onert-micro's per-operator train configuration into settings().op_ranks (and sets
  // num_trainable_ops to -2).
  void set_train_config(const std::string& path);

  // Sets the batch, builds the training graph, opens the backends (a backend that cannot run here
  // is left out with a warning, see warnings()), places the steps and prepares them.
  // dry: memory planned only (Session::prepare's dry), for reports; no step can run.
  void prepare(bool dry = false);
  bool prepared() const { return session_ != nullptr; }

  const Model& model() const { return model_; }
  int32_t batch() const;
  uint64_t input_size() const;   // floats per sample
  uint64_t output_size() const;  // floats per sample
  Session& session();
  const std::vector<std::string>& warnings() const { return warnings_; }
  // What the rewrite passes changed in the model, one "pass: change" line each (passes/passes.h):
  // after loading, the import and load passes; after prepare, the setup and training ones too.
  const std::vector<std::string>& rewrites() const { return rewrites_; }

  // Copies a batch of inputs or expected outputs (batch() * input_size() floats), for the next
  // train_step or evaluate.
  void set_input(const float* data, uint64_t count);
  // A model whose input is int32 (token ids) takes it here; set_input and predict refuse it (and
  // these calls a float32 input), naming the other call.
  void set_input_int32(const int32_t* data, uint64_t count);
  int32_t input_dtype() const;  // CLTRAIN_FLOAT32 or CLTRAIN_INT32
  // The fewest rows of the tables the input's ids are read from (GATHERs reading the input), or
  // -1 where none reads it.
  int64_t id_rows() const;
  void set_expected(const float* data, uint64_t count);
  // One optimizer step on the inputs set; the loss. prediction (batch() * output_size() floats)
  // may be NULL. Where the loss or a gradient is not finite the step is not applied (weights and
  // optimizer state as they were) and, as settings().on_nonfinite says, TrainingError is thrown
  // or the step is counted in skipped_steps() and its loss returned. Where a backend fails
  // (BackendError) before the step's updates run, the weights are the last good step's; where it
  // fails while they run, the newest periodic checkpoint is restored, else the weights are refused
  // (exports, reads, steps) until a checkpoint is imported.
  float train_step(float* prediction = nullptr);
  // Steps not applied (their loss or a gradient not finite) in kSkip mode, since prepare.
  int64_t skipped_steps() const { return progress_.skipped; }
  // Where a training loop is: steps run (skipped ones included), those and their losses since the
  // last set_epochs_done; checkpoints carry it, so that a loop resumes mid-epoch.
  const Progress& progress() const { return progress_; }
  float evaluate(float* prediction = nullptr);
  void predict(const float* input, uint64_t input_count, float* output, uint64_t output_count);
  void predict_int32(const int32_t* input, uint64_t input_count, float* output, uint64_t output_count);
  Position position() const { return {session_ ? session_->iterations() : 0, epochs_}; }
  // Epochs done; the steps since then count as the next epoch's in messages.
  void set_epochs_done(int32_t epochs);

  // A float32 constant of the model by tensor name (a weight; after prepare its trained value).
  uint64_t tensor_elements(const std::string& name) const;
  std::vector<float> weight(const std::string& name);
  void set_weight(const std::string& name, const std::vector<float>& values);
  // After prepare: the names of the weights training updates, in model order (those of the
  // trainable operators only; an untied copy or an added bias among them).
  std::vector<std::string> trained_weight_names();
  // After prepare: the optimizer starts afresh, as in a new session (Adam's moments zero, steps
  // and epochs done 0); the weights stay.
  void reset_optimizer();

  // Atomically written files, refused (TrainingError) when a trained weight is not finite. export_circle writes the
  // format the name says (.tflite: TFL3, .circle: CIR0, else the model's own); export_circleplus always circle.
  void export_circle(const std::string& path);
  void export_circleplus(const std::string& path);
  void export_checkpoint(const std::string& path);
  // The files whose paths are not "", made in memory first, written to temporary files, and only
  // then renamed over their paths one after another (the checkpoint last), so that a failure or a
  // kill before the renames leaves every old file as it was. A file that cannot be written does not
  // stop the others; the exception then names it (and those written).
  void export_files(const std::string& model, const std::string& circleplus, const std::string& checkpoint);
  void import_checkpoint(const std::string& path);
  // LoRA's adapters alone as a safetensors file (lora_file.h), and back into a session prepared
  // with the same rank on the same model: every adapter named, shaped and finite, else nothing
  // changes (CheckpointError). A base model ships once; adapters per user or per round.
  void export_lora(const std::string& path);
  void import_lora(const std::string& path);
  // Imports the newest checkpoint of dir (periodic checkpoints' step-N.ckpt) that loads; returns its
  // path, "" when dir holds none. *rejected (and warnings()) get one line per newer one that did
  // not load (torn, corrupted, of another model) and why; the session is as it was where none loads.
  std::string resume(const std::string& dir, std::vector<std::string>* rejected);

 private:
  void require_input_type(int32_t dtype, const char* what) const;
  // An int32 input read by GATHERs: every id within their tables (negative ones from the end).
  void check_ids(const int32_t* data, uint64_t count, const char* what) const;
  void predict_into(const std::vector<float>& in, float* output, uint64_t output_count, const char* what);
  Engine() = default;
  void require_prepared(const char* what) const;
  // TrainingError where a failed step left the weights partly updated (Session::consistent).
  void require_consistent(const std::string& what) const;
  // After a step failed while its updates ran: restores the newest periodic checkpoint written or
  // resumed from (weights, optimizer state, position, progress), so the session goes on from it.
  // What happened, as the end of the step's error line.
  std::string roll_back();
  std::string last_checkpoint_;  // the newest periodic checkpoint written or resumed from, "" none
  int32_t tensor_index(const std::string& name) const;
  using Weights = std::map<int32_t, std::vector<float>>;
  // The trained weights (none before prepare); *bad names the first non-finite one, "" if none.
  Weights read_weights(std::string* bad);
  // The same, each finite (else TrainingError naming the tensor and what is not written).
  Weights trained_weights(const std::string& path);
  std::vector<uint8_t> model_bytes(const std::string& path, const Weights& weights);
  std::vector<uint8_t> circleplus_bytes(const Weights& weights);
  // onert's bytes; with_progress: and cltrain's trailer (checksum, progress; checkpoint.h).
  std::vector<uint8_t> checkpoint_bytes(bool with_progress = false);

  Model model_;
  // With LoRA: the model before the adapters (what exports write, with the adapters merged), and
  // the adapters.
  Model base_model_;
  std::vector<LoraAdapter> lora_;
  Weights merged_lora(const Weights& trained) const;
  Settings settings_;
  std::unique_ptr<Session> session_;
  std::vector<float> input_, expected_;
  bool have_input_ = false, have_expected_ = false;
  Progress progress_;
  void write_periodic_checkpoint();
  int32_t epochs_ = 0;             // epochs done (the session counts the optimizer's iterations)
  int64_t epoch_start_steps_ = 0;  // the iterations done when set_epochs_done was last called
  std::vector<std::string> warnings_;
  std::vector<std::string> rewrites_;
  void log_rewrites(const std::vector<Rewrite>& training);
};

// The cache directory Settings::cache_dir names (created with its parents); "" for none, also
// when it cannot be created (*warning then says so).
std::string cache_directory(const std::optional<std::string>& given, std::string* warning);

}  // namespace cltrain
