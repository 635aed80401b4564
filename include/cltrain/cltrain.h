/* cltrain — the C API for applications (libcltrain). C99, usable from C++.
 *
 * A session holds one model: load it (from a file or from memory), read and change its training
 * settings, prepare it on the backends (OpenCL first, the CPU always last), then train it step by
 * step, run inference, read and write its weights, and export the model, a circle+ model or a
 * checkpoint in onert's format.
 *
 *   cltrain_session* s;
 *   char err[256];
 *   if (cltrain_session_create("mlp.circle", &s, err, sizeof err) != CLTRAIN_OK) { puts(err); ... }
 *   cltrain_settings cfg = {sizeof cfg};
 *   cltrain_get_settings(s, &cfg);                  // defaults, or the model's CIRCLE_TRAINING
 *   cfg.batch_size = 32; cfg.learning_rate = 0.001f;
 *   cltrain_set_settings(s, &cfg);
 *   cltrain_prepare(s);
 *   cltrain_set_input(s, x, n_x); cltrain_set_expected(s, y, n_y);
 *   float loss; cltrain_train_step(s, &loss);
 *   cltrain_export_circle(s, "trained.circle");
 *   cltrain_session_destroy(s);
 *
 * Errors: every function that can fail returns a cltrain_status; on failure the session keeps one
 * line saying what went wrong (cltrain_last_error), starting with its kind: "model error: ",
 * "data error: ", "backend error: ", "checkpoint error: ", "training error: ", "invalid
 * argument: " or "invalid call: " (out of order). Nothing aborts, and no C++ exception crosses
 * this API. NULL pointers and wrong sizes are refused with CLTRAIN_INVALID and a message. A call
 * that fails leaves the session as it was, except where stated (a failed prepare leaves it
 * unprepared; a train step whose loss is not finite has updated the weights).
 *
 * Memory: data passed in is copied during the call (cltrain_set_input keeps no pointer: a
 * temporary array may go right after it). Strings the API returns are owned by the session and
 * valid until the next call on it, or until it is destroyed.
 *
 * Threads: a session may be used from any thread, but from one thread at a time (calls on one
 * session are not synchronized). Different sessions may run in different threads at once.
 * cltrain_version may be called from any thread at any time.
 *
 * Plugins: the OpenCL backend is the plugin libcltrain_opencl.so, looked for in the directories
 * of CLTRAIN_BACKEND_PATH, then next to libcltrain itself, then next to the executable and in
 * ../lib from it; its own environment variables are in backend/opencl/README.md.
 */
#ifndef CLTRAIN_H
#define CLTRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain/cltrain_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CLTRAIN_API __declspec(dllexport)
#else
#define CLTRAIN_API __attribute__((visibility("default")))
#endif

/* The version of this API: calls and structs added later raise it. 2: cltrain_settings.memory_budget,
 * cltrain_budget_info and cltrain_get_budget; the trained-weight calls and cltrain_reset_optimizer.
 * 3: cltrain_settings.storage; later (by struct_size) lora_rank and lora_alpha. 4: cltrain_rewrite;
 * the named choices cltrain_optimizer, cltrain_loss and cltrain_reduction_type. 5: transactional
 * steps: cltrain_settings.on_nonfinite (cltrain_nonfinite), cltrain_get_skipped_steps; periodic
 * checkpoints: cltrain_settings.checkpoint_every, checkpoint_dir, keep_checkpoints, cltrain_resume,
 * cltrain_get_progress. 6: LoRA adapters as files: cltrain_export_lora, cltrain_import_lora. */
#define CLTRAIN_API_VERSION 6

typedef struct cltrain_session cltrain_session; /* opaque */

/* The choices of cltrain_settings, named; the values are onert_train's codes (its --optimizer,
 * --loss and --loss_reduction_type). */
typedef enum cltrain_optimizer { CLTRAIN_OPTIMIZER_SGD = 1, CLTRAIN_OPTIMIZER_ADAM = 2 } cltrain_optimizer;
typedef enum cltrain_loss {
  CLTRAIN_LOSS_MEAN_SQUARED_ERROR = 1,
  CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY = 2,
  /* The model's output are logits: the cross-entropy of their softmax over the last dimension
   * (Keras's from_logits=True, PyTorch's CrossEntropyLoss), computed as one op. */
  CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY_FROM_LOGITS = 3
} cltrain_loss;
typedef enum cltrain_reduction_type {
  CLTRAIN_REDUCTION_TYPE_SUM_OVER_BATCH_SIZE = 1,
  CLTRAIN_REDUCTION_TYPE_SUM = 2
} cltrain_reduction_type;

/* What a training step whose loss or gradients are not finite does. Either way the step is not
 * applied: the weights and the optimizer state (Adam's moments and t) stay as they were, and the
 * session stays usable. STOP: cltrain_train_step returns CLTRAIN_ERROR naming the step. SKIP: it
 * returns CLTRAIN_OK with the step's loss, and the step is counted (cltrain_get_skipped_steps), as
 * mixed-precision trainers skip overflowing steps. */
typedef enum cltrain_nonfinite { CLTRAIN_NONFINITE_STOP = 0, CLTRAIN_NONFINITE_SKIP = 1 } cltrain_nonfinite;

/* Training settings, in onert_train's codes. A struct of a newer or older header is read as far
 * as its struct_size reaches; members it lacks keep their value. */
typedef struct cltrain_settings {
  uint32_t struct_size;       /* sizeof(cltrain_settings) as the caller knows it */
  int32_t batch_size;         /* 0: the model's training info, else its first dimension */
  int32_t optimizer;          /* a cltrain_optimizer: 1 SGD, 2 Adam */
  float learning_rate;        /* > 0 */
  float beta1, beta2;         /* Adam, in [0, 1) */
  float epsilon;              /* Adam, >= 0 */
  int32_t loss;               /* a cltrain_loss: 1 mean squared error, 2 categorical cross-entropy */
  int32_t loss_reduction;     /* a cltrain_reduction_type: 1 sum over batch size, 2 sum */
  int32_t num_trainable_ops;  /* -1 all, 0 none, N the last N operators, -2 the operators the model's
                                 CIRCLE_TRAINING or train_config lists */
  int32_t epochs;             /* recorded in a circle+ export */
  int32_t device;             /* OpenCL device index, -1 the default */
  const char* backends;       /* in order of preference, comma-separated ("opencl,cpu"); the CPU is always last */
  const char* cache_dir;      /* saved plans and kernel binaries; NULL: $CLTRAIN_CACHE_DIR, else
                                 $XDG_CACHE_HOME/cltrain, else ~/.cache/cltrain; "": no cache */
  const char* train_config;   /* onert-micro's per-operator train configuration file (read at
                                 cltrain_set_settings; sets num_trainable_ops to -2), or NULL */
  int32_t add_missing_biases; /* 1: a zero bias, trained and exported, for each FullyConnected,
                                 Conv2D and DepthwiseConv2D without one (converters drop zero
                                 biases); 0: none (prepare warns about them) */
  uint64_t memory_budget;     /* bytes the backends' memory pools may take together; 0: no limit.
                                 Over it, prepare recomputes forward steps during backward (the
                                 same results, more FLOPs) until the plans fit, and fails with
                                 CLTRAIN_OUT_OF_MEMORY naming the least pool when none fits */
  int32_t storage;            /* 0: float32 everywhere; 1 (fp16): activations and back-prop tensors
                                 stored as float16 where every op touching one allows it, float32
                                 arithmetic, weights and optimizer state (half their bytes) */
  int32_t lora_rank;          /* > 0: LoRA adapters of this rank on the FullyConnected operators that
                                 num_trainable_ops / train_config choose, which alone train (the
                                 model's weights stay frozen); exports merge W + (alpha / rank) B A
                                 into W. 0: none */
  float lora_alpha;           /* LoRA's alpha; 0: the rank (a scale of 1) */
  int32_t on_nonfinite;       /* a cltrain_nonfinite: 0 stop, 1 skip */
  int32_t checkpoint_every;   /* > 0: after every N-th step (skipped ones count) a checkpoint is written
                                 atomically into checkpoint_dir as step-NNNNNNNNNN.ckpt (N: the steps
                                 run), with a checksum; 0: none */
  const char* checkpoint_dir; /* where; NULL or "": the working directory */
  int32_t keep_checkpoints;   /* the newest K are kept, older ones removed; 0: 3 */
} cltrain_settings;

/* A backend that runs steps, and its planned memory in bytes (roles as in cltrain_backend.h). */
typedef struct cltrain_backend_info {
  uint32_t struct_size;  /* sizeof(cltrain_backend_info) as the caller knows it */
  const char* name;      /* "opencl", "cpu" */
  const char* device;    /* as the backend names it ("pthread-... (Portable Computing Language)") */
  uint64_t role_peak[7]; /* non_const, trainable, back_prop, gradient, optimizer, disposable, layer_scope */
  uint64_t pool_bytes;   /* allocated */
  uint64_t lower_bound;  /* the largest sum of live bytes at one step */
} cltrain_backend_info;

/* What a memory budget did (cltrain_settings.memory_budget), after prepare. */
typedef struct cltrain_budget_info {
  uint32_t struct_size;     /* sizeof(cltrain_budget_info) as the caller knows it */
  int32_t recomputed_steps; /* forward steps run again during backward to fit */
  uint64_t budget;          /* bytes; 0: none */
  uint64_t unbudgeted_pool; /* the backends' pools without recomputation */
  uint64_t extra_flops;     /* per training step, by the repeated steps */
} cltrain_budget_info;

/* "0.1.0 (API 2)"; static. */
CLTRAIN_API const char* cltrain_version(void);

/* Loads and verifies a .circle or .tflite file, or the same bytes from memory (copied: the buffer
 * may be freed after the call; name appears in messages). On failure *out is NULL and err (may be
 * NULL) holds one line. */
CLTRAIN_API cltrain_status cltrain_session_create(const char* model_path, cltrain_session** out, char* err,
                                                  size_t err_len);
CLTRAIN_API cltrain_status cltrain_session_create_from_buffer(const void* data, size_t size, const char* name,
                                                              cltrain_session** out, char* err, size_t err_len);
/* NULL is ignored. */
CLTRAIN_API void cltrain_session_destroy(cltrain_session* session);

/* The last failure of the session as one line ("" if none); for a NULL session, a line saying so. */
CLTRAIN_API const char* cltrain_last_error(const cltrain_session* session);

/* The settings: defaults, the model's CIRCLE_TRAINING metadata, or what was set. out->struct_size
 * must be set by the caller. */
CLTRAIN_API cltrain_status cltrain_get_settings(cltrain_session* session, cltrain_settings* out);
/* Before cltrain_prepare only; values are checked at prepare. */
CLTRAIN_API cltrain_status cltrain_set_settings(cltrain_session* session, const cltrain_settings* settings);

/* Builds the training graph, opens the backends (one that cannot run here is left out: see
 * cltrain_warning), plans memory and builds kernels. Once per session. */
CLTRAIN_API cltrain_status cltrain_prepare(cltrain_session* session);
/* The i-th warning of prepare (a backend left out, a cache directory not usable), or NULL past
 * the last. */
CLTRAIN_API const char* cltrain_warning(cltrain_session* session, int32_t i);
/* The i-th line of what cltrain's rewrite passes changed in the model ("missing-biases: added 2
 * zero biases"), in the order they ran, or NULL past the last: after loading, the passes that
 * load the file's operators; after cltrain_prepare, also those of prepare and of the training
 * graph (docs/adding-a-pass.md lists them). */
CLTRAIN_API const char* cltrain_rewrite(cltrain_session* session, int32_t i);

/* After prepare: the batch and the floats of one sample of input and of output. */
CLTRAIN_API cltrain_status cltrain_get_shape(cltrain_session* session, int32_t* batch, uint64_t* input_size,
                                             uint64_t* output_size);

/* A batch of inputs and of expected outputs (batch * input_size, batch * output_size floats),
 * copied, for the next train step. */
CLTRAIN_API cltrain_status cltrain_set_input(cltrain_session* session, const float* data, uint64_t count);
CLTRAIN_API cltrain_status cltrain_set_expected(cltrain_session* session, const float* data, uint64_t count);
/* A model whose input is int32 (token ids, as a converted Keras Embedding takes them) takes its
 * batch here, and its predictions from cltrain_predict_int32; cltrain_set_input and
 * cltrain_predict refuse such a model (CLTRAIN_INVALID_ARGUMENT), and these a float32 input.
 * *dtype: CLTRAIN_INPUT_FLOAT32 or CLTRAIN_INPUT_INT32 (after prepare). */
#define CLTRAIN_INPUT_FLOAT32 0
#define CLTRAIN_INPUT_INT32 1
CLTRAIN_API cltrain_status cltrain_get_input_type(cltrain_session* session, int32_t* dtype);
CLTRAIN_API cltrain_status cltrain_set_input_int32(cltrain_session* session, const int32_t* data, uint64_t count);
CLTRAIN_API cltrain_status cltrain_predict_int32(cltrain_session* session, const int32_t* input, uint64_t input_count,
                                                 float* output, uint64_t output_count);
/* One optimizer step on the batch set; *loss its loss (before the update). Where the loss or a
 * gradient is not finite the step is not applied (cltrain_nonfinite): CLTRAIN_ERROR, or with
 * on_nonfinite SKIP CLTRAIN_OK and the step counted. Where a backend fails (CLTRAIN_ERROR, "backend
 * error: ...") before the step's updates run, the weights are the last good step's; where it fails
 * while they run, the newest periodic checkpoint (checkpoint_every) is restored and the message says
 * so, else the partly updated weights are refused (exports, steps) until a checkpoint is imported.
 * The _outputs form also gives the model's outputs of the step
 * (output_count = batch * output_size floats; outputs NULL with count 0 for none). */
CLTRAIN_API cltrain_status cltrain_train_step(cltrain_session* session, float* loss);
CLTRAIN_API cltrain_status cltrain_train_step_outputs(cltrain_session* session, float* loss, float* outputs,
                                                      uint64_t output_count);
/* The loss (and, outputs not NULL, the outputs) of the batch set, without training. */
CLTRAIN_API cltrain_status cltrain_evaluate(cltrain_session* session, float* loss, float* outputs,
                                            uint64_t output_count);
/* The model's outputs for a batch of inputs (input_count = batch * input_size, output_count =
 * batch * output_size). */
CLTRAIN_API cltrain_status cltrain_predict(cltrain_session* session, const float* input, uint64_t input_count,
                                           float* output, uint64_t output_count);
/* Optimizer steps done (Adam's t; from a checkpoint, where it left off) and epochs done (as a
 * checkpoint records them; set by cltrain_set_epochs_done or a checkpoint). */
CLTRAIN_API cltrain_status cltrain_get_position(cltrain_session* session, int64_t* steps, int32_t* epochs);
CLTRAIN_API cltrain_status cltrain_set_epochs_done(cltrain_session* session, int32_t epochs);
/* Steps not applied because their loss or a gradient was not finite (on_nonfinite SKIP), since
 * prepare. */
CLTRAIN_API cltrain_status cltrain_get_skipped_steps(cltrain_session* session, int64_t* skipped);

/* A float32 constant of the model (a weight or bias) by tensor name: its element count, and its
 * values (after prepare the trained ones). count must equal the element count. */
CLTRAIN_API cltrain_status cltrain_weight_elements(cltrain_session* session, const char* name, uint64_t* count);
CLTRAIN_API cltrain_status cltrain_get_weight(cltrain_session* session, const char* name, float* dst, uint64_t count);
CLTRAIN_API cltrain_status cltrain_set_weight(cltrain_session* session, const char* name, const float* src,
                                              uint64_t count);

/* After prepare: the weights training updates, in model order (those of the trainable operators
 * only, as num_trainable_ops or a train config select them; a copy untied from a merged constant
 * and an added bias among them): their count, and the tensor name of each (valid until the next
 * call on the session). */
CLTRAIN_API cltrain_status cltrain_num_trained_weights(cltrain_session* session, int32_t* count);
CLTRAIN_API cltrain_status cltrain_trained_weight_name(cltrain_session* session, int32_t index, const char** name);
/* After prepare: the optimizer starts afresh, as in a new session (Adam's moments zero, steps and
 * epochs done 0); the weights stay. A federated client calls it before each round's training. */
CLTRAIN_API cltrain_status cltrain_reset_optimizer(cltrain_session* session);

/* Files, written to a temporary name and renamed: the model with its trained weights (same
 * layout as loaded), the same with the settings as CIRCLE_TRAINING metadata, a checkpoint in
 * onert's format (weights, Adam state, position). */
CLTRAIN_API cltrain_status cltrain_export_circle(cltrain_session* session, const char* path);
CLTRAIN_API cltrain_status cltrain_export_circleplus(cltrain_session* session, const char* path);
CLTRAIN_API cltrain_status cltrain_export_checkpoint(cltrain_session* session, const char* path);
/* The three at once, each path NULL or "" to leave it out: every file is made and written to its
 * temporary name before any is renamed (the checkpoint last), so a failure or a kill before the
 * renames leaves the old files as they were, and the model and checkpoint of one run go together.
 * A file that cannot be written does not stop the others; the error then names it. */
CLTRAIN_API cltrain_status cltrain_export_files(cltrain_session* session, const char* model, const char* circleplus,
                                                const char* checkpoint);
/* After prepare: weights, Adam state and position from a checkpoint of this model. */
CLTRAIN_API cltrain_status cltrain_import_checkpoint(cltrain_session* session, const char* path);
/* LoRA's adapters alone (a session prepared with lora_rank > 0), in the safetensors format PEFT
 * users exchange: F32 tensors "<weight>.lora_A.weight" [rank, in] and "<weight>.lora_B.weight"
 * [out, rank], <weight> the name of the FullyConnected weight they adapt, and __metadata__
 * {"format": "cltrain-lora", "rank", "alpha"}; written atomically. A base model ships once, the
 * adapters per user or per round (a few hundred KB where the model is MBs). Import (after prepare,
 * same model and rank) checks every adapter's name, shape and values before it writes any: a file
 * that does not fit changes nothing. The optimizer state is not in the file. */
CLTRAIN_API cltrain_status cltrain_export_lora(cltrain_session* session, const char* path);
CLTRAIN_API cltrain_status cltrain_import_lora(cltrain_session* session, const char* path);
/* After prepare: imports the newest periodic checkpoint of dir that loads (a torn, corrupted or
 * mismatched newer one is passed over, each named in a cltrain_warning). used (used_len bytes,
 * may be NULL) gets its path, "" when dir holds none (the session is then as it was). */
CLTRAIN_API cltrain_status cltrain_resume(cltrain_session* session, const char* dir, char* used, size_t used_len);
/* Where a training loop is within the epoch (cltrain_set_epochs_done starts an epoch): the steps
 * run since, and the sum of the losses of the applied ones; a checkpoint carries both, so that a
 * loop resumed from one goes on at the next batch of the epoch. */
CLTRAIN_API cltrain_status cltrain_get_progress(cltrain_session* session, int64_t* epoch_batches,
                                                double* epoch_loss_sum);

/* After prepare: the backends that run steps, with their devices and planned memory, and the
 * backend each model operator runs on. */
CLTRAIN_API cltrain_status cltrain_num_backends(cltrain_session* session, int32_t* count);
CLTRAIN_API cltrain_status cltrain_get_backend(cltrain_session* session, int32_t backend, cltrain_backend_info* out);
/* After prepare: what the memory budget did (all zero without one). */
CLTRAIN_API cltrain_status cltrain_get_budget(cltrain_session* session, cltrain_budget_info* out);
CLTRAIN_API cltrain_status cltrain_num_operators(cltrain_session* session, int32_t* count);
CLTRAIN_API cltrain_status cltrain_operator_backend(cltrain_session* session, int32_t op, const char** backend);

#ifdef __cplusplus
}
#endif

#endif /* CLTRAIN_H */
