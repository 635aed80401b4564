/* cltrain — the backend plugin ABI.
 *
 * A backend is a plugin that runs steps of a training graph on some device. A plugin is a shared
 * library exporting one C function, cltrain_backend_entry(), which returns a pointer to a static
 * cltrain_backend_iface. The host checks iface->abi_version == CLTRAIN_BACKEND_ABI_VERSION and
 * refuses a mismatch, naming both versions. The CPU backend implements the same interface and is
 * built into the host; it is always the last backend.
 *
 * Rules
 *  - Only C types cross this boundary: plain structs, enums, pointers. No C++ exceptions escape a
 *    plugin; every function that can fail returns cltrain_status and leaves a one-line message
 *    behind (last_error, or the err buffer of create/probe).
 *  - The ABI is extended only by appending members at the end of structs and values at the end of
 *    enums; any other change bumps CLTRAIN_BACKEND_ABI_VERSION.
 *  - Ownership: everything the host passes in is owned by the host and valid only during the call,
 *    unless a comment says otherwise. Everything a backend returns (strings, reports) is owned by
 *    the backend and valid until the next call on the same backend object, or until destroy.
 *
 * The training graph (what prepare receives)
 *  - A table of tensors, indexed by a global tensor id. A tensor whose first_step is -1 is not used
 *    by this backend; the backend must not allocate it.
 *  - A list of steps in one global step order: forward steps, the loss, backward steps with the
 *    optimizer updates placed right after the step that completes each gradient. Each step is
 *    assigned to exactly one backend; prepare receives all steps and an `assigned` flag per step.
 *  - Each tensor used by the backend carries its lifetime [first_step, last_step] (inclusive) over
 *    the global step order, computed by the host from this backend's accesses, the host's reads and
 *    writes and cross-backend copies. Between its lifetimes (from one iteration to the next) only
 *    tensors with persistent != 0 keep their contents: weights and optimizer variables.
 *  - The backend plans all of its tensors into pooled memory from these lifetimes: two tensors whose
 *    lifetimes overlap never share a byte.
 *
 * Step conventions (inputs / outputs are tensor ids, -1 where an optional tensor is absent)
 *  FULLY_CONNECTED forward:   in [x, W, b]          out [y]     y = act(x W^T + b); W is [M, K], x is
 *                                                               viewed as [N, K], y as [N, M].
 *  FULLY_CONNECTED backward:  in [x, W, y, dy]      out [dx, dW, db]   y is -1 when activation is NONE.
 *                             x is -1 when dW is -1. dx, dW, db may each be -1 (not needed).
 *  RELU forward:              in [x]                out [y]
 *  RELU backward:             in [y, dy]            out [dx]
 *  RESHAPE forward:           in [x]                out [y]     (same element count)
 *  RESHAPE backward:          in [dy]               out [dx]
 *  SOFTMAX forward:           in [x]                out [y]     over the last dimension, params.beta
 *  SOFTMAX backward:          in [y, dy]            out [dx]
 *  LOSS_* forward:            in [pred, expected]   out [loss]  loss has one element
 *  LOSS_* backward:           in [pred, expected]   out [dpred]
 *     MSE per sample: mean over the sample's elements of (pred - expected)^2.
 *     CCE per sample: -sum(expected * log(clamp(pred, 1e-7, 1 - 1e-7))); its derivative is
 *                     -expected / clamp(pred, 1e-7, 1 - 1e-7) (zero where pred was clamped).
 *     Reduction: SUM_OVER_BATCH_SIZE divides the sum over samples by the batch (first dimension),
 *                SUM does not. The backward includes the same scale.
 *  ACCUMULATE (backward):     in [a]                out [acc]   acc += a (acc is read and written)
 *  UPDATE_SGD (update):       in [grad]             out [W]     W -= lr * grad
 *  UPDATE_ADAM (update):      in [grad]             out [W, m, v]
 *     m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *     W -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)     (t = run_args.iteration)
 *  A backward step may overwrite its dy input (the host guarantees that dy is dead after it).
 *  Output tensors of a step never alias its inputs, except where stated (ACCUMULATE, updates).
 */
#ifndef CLTRAIN_BACKEND_H
#define CLTRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain/cltrain_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CLTRAIN_BACKEND_ABI_VERSION 1u

#define CLTRAIN_MAX_RANK 6
#define CLTRAIN_MAX_STEP_IO 8

#if defined(_WIN32)
#define CLTRAIN_EXPORT __declspec(dllexport)
#else
#define CLTRAIN_EXPORT __attribute__((visibility("default")))
#endif

typedef enum cltrain_status {
  CLTRAIN_OK = 0,
  CLTRAIN_ERROR = 1,         /* a failure; last_error() says what */
  CLTRAIN_UNAVAILABLE = 2,   /* the backend cannot run here (no driver, no device): not an error */
  CLTRAIN_OUT_OF_MEMORY = 3, /* the device could not allocate the planned pool */
  CLTRAIN_INVALID = 4        /* the host passed something the backend cannot accept */
} cltrain_status;

typedef enum cltrain_dtype { CLTRAIN_FLOAT32 = 0, CLTRAIN_INT32 = 1 } cltrain_dtype;

/* Tensor roles; memory is reported per role. */
typedef enum cltrain_role {
  CLTRAIN_ROLE_NON_CONST = 0,   /* forward activations, model inputs, expected outputs, the loss */
  CLTRAIN_ROLE_TRAINABLE = 1,   /* weights and biases */
  CLTRAIN_ROLE_BACK_PROP = 2,   /* gradients with respect to activations */
  CLTRAIN_ROLE_GRADIENT = 3,    /* gradients with respect to weights */
  CLTRAIN_ROLE_OPTIMIZER = 4,   /* optimizer variables (Adam m, v); they start at zero */
  CLTRAIN_ROLE_DISPOSABLE = 5,  /* a consumer's back-prop contribution before accumulation */
  CLTRAIN_ROLE_LAYER_SCOPE = 6, /* a kernel's scratch */
  CLTRAIN_ROLE_COUNT = 7
} cltrain_role;

typedef enum cltrain_phase {
  CLTRAIN_PHASE_FORWARD = 0,
  CLTRAIN_PHASE_BACKWARD = 1,
  CLTRAIN_PHASE_UPDATE = 2
} cltrain_phase;

typedef struct cltrain_tensor_desc {
  const char* name;
  int32_t rank;
  int32_t dims[CLTRAIN_MAX_RANK];
  int32_t dtype;      /* cltrain_dtype */
  int32_t role;       /* cltrain_role */
  int32_t first_step; /* lifetime on this backend, inclusive; -1: not used by this backend */
  int32_t last_step;
  int32_t persistent; /* keeps its contents across iterations (weights, optimizer variables) */
  const void* data;   /* initial contents (weights) or NULL; host-owned, valid during prepare */
  uint64_t data_bytes;
} cltrain_tensor_desc;

/* Parameters of a step; each op reads the members it needs. */
typedef struct cltrain_op_params {
  int32_t activation; /* cltrain_activation, fused into the op */
  float beta;         /* SOFTMAX */
  int32_t reduction;  /* cltrain_loss_reduction, LOSS_* */
  float learning_rate, beta1, beta2, epsilon; /* UPDATE_*; learning_rate may be overridden per run */
  int32_t reserved[16];                       /* zero; room for convolution options */
} cltrain_op_params;

typedef struct cltrain_step_desc {
  int32_t op;       /* cltrain_op */
  int32_t phase;    /* cltrain_phase */
  int32_t model_op; /* index of the model operator this step comes from, -1 for none */
  int32_t num_inputs;
  int32_t inputs[CLTRAIN_MAX_STEP_IO];
  int32_t num_outputs;
  int32_t outputs[CLTRAIN_MAX_STEP_IO];
  cltrain_op_params params;
} cltrain_step_desc;

typedef struct cltrain_graph_desc {
  uint32_t struct_size; /* sizeof(cltrain_graph_desc) as the host knows it */
  int32_t num_tensors;
  const cltrain_tensor_desc* tensors;
  int32_t num_steps;
  const cltrain_step_desc* steps;
  const uint8_t* assigned; /* num_steps flags: 1 where the step runs on this backend */
} cltrain_graph_desc;

/* What prepare reports about the backend's memory plan (bytes). */
typedef struct cltrain_memory_report {
  uint64_t role_peak[CLTRAIN_ROLE_COUNT]; /* peak of live bytes of each role over the step order */
  uint64_t pool_bytes;                    /* bytes allocated for the pool(s) */
  uint64_t lower_bound;                   /* largest sum of live bytes at any one step */
  uint64_t num_tensors;                   /* tensors planned */
} cltrain_memory_report;

typedef struct cltrain_backend_config {
  uint32_t struct_size;  /* sizeof(cltrain_backend_config) as the host knows it */
  int32_t device_index;  /* -1: the backend's default device */
  const char* cache_dir; /* a directory the backend may use for caches, or NULL */
} cltrain_backend_config;

typedef struct cltrain_run_args {
  int64_t iteration;   /* 1-based number of the current training iteration (Adam's t) */
  float learning_rate; /* overrides params.learning_rate of update steps when > 0 */
} cltrain_run_args;

typedef struct cltrain_backend cltrain_backend; /* opaque, owned by the plugin */

typedef struct cltrain_backend_iface {
  uint32_t abi_version; /* CLTRAIN_BACKEND_ABI_VERSION of the plugin's build */
  const char* name;     /* "opencl", "cpu"; static */

  /* Optional (may be NULL). CLTRAIN_OK if the backend can run here, CLTRAIN_UNAVAILABLE with a
   * reason in err if not (no driver, no device). */
  cltrain_status (*probe)(char* err, size_t err_len);

  /* Optional. Writes a human-readable list of devices (one per line, with their limits) into buf,
   * NUL-terminated and truncated to buf_len. */
  cltrain_status (*list_devices)(char* buf, size_t buf_len);

  /* Creates a backend object on a device. On failure *out is NULL and err holds one line. */
  cltrain_status (*create)(const cltrain_backend_config* config, cltrain_backend** out, char* err,
                           size_t err_len);
  void (*destroy)(cltrain_backend* backend);

  /* One line naming the device the backend runs on; owned by the backend. */
  const char* (*device_name)(cltrain_backend* backend);

  /* 1 if the backend can run this step (forward step of a model op; with training != 0, also its
   * backward). tensors is the whole tensor table (lifetimes not yet set). */
  int (*supports)(cltrain_backend* backend, const cltrain_step_desc* step,
                  const cltrain_tensor_desc* tensors, int training);

  /* Plans memory for the assigned steps, allocates the pool, builds kernels and uploads initial
   * tensor data. Called once. report may be NULL. */
  cltrain_status (*prepare)(cltrain_backend* backend, const cltrain_graph_desc* graph,
                            cltrain_memory_report* report);

  /* Runs the given steps (global indices, all assigned to this backend, in order). May return
   * before the device has finished; read_tensor and sync wait. */
  cltrain_status (*run)(cltrain_backend* backend, const int32_t* steps, int32_t num_steps,
                        const cltrain_run_args* args);

  /* Copies a whole tensor in or out (bytes must equal the tensor's size). write_tensor may return
   * before the copy completes only if it has copied src already; read_tensor waits for all work
   * queued before it. */
  cltrain_status (*write_tensor)(cltrain_backend* backend, int32_t tensor, const void* src,
                                 uint64_t bytes);
  cltrain_status (*read_tensor)(cltrain_backend* backend, int32_t tensor, void* dst,
                                uint64_t bytes);

  /* Waits for all queued work. */
  cltrain_status (*sync)(cltrain_backend* backend);

  /* The last error as one line; owned by the backend. */
  const char* (*last_error)(cltrain_backend* backend);

  /* Optional. Offsets of planned tensors: for each tensor id, its byte offset in the pool, or -1
   * if not planned by this backend. offsets has num_tensors entries. */
  cltrain_status (*plan_offsets)(cltrain_backend* backend, int64_t* offsets, int32_t num_tensors);
} cltrain_backend_iface;

/* The one symbol a plugin exports. */
typedef const cltrain_backend_iface* (*cltrain_backend_entry_fn)(void);
#define CLTRAIN_BACKEND_ENTRY_SYMBOL "cltrain_backend_entry"

#ifdef __cplusplus
}
#endif

#endif /* CLTRAIN_BACKEND_H */
