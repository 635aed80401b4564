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
 *  CONV_2D forward:           in [x, W, b]          out [y]     x [N,H,W,I], W [O,KH,KW,I], y [N,OH,OW,O]
 *  CONV_2D backward:          in [x, W, y, dy]      out [dx, dW, db]   as FULLY_CONNECTED; and
 *                             when params.dx_activation != NONE, x is the output of a producer
 *                             with that fused activation, and dx = act'(x) applied to the input
 *                             gradient (the producer's backward then gets activation NONE): x is
 *                             then given even when dW is -1.
 *  DEPTHWISE_CONV_2D:         as CONV_2D with W [1,KH,KW,I*M] (M = depth_multiplier); output
 *                             channel c*M + j reads input channel c.
 *  MAX_POOL_2D forward:       in [x]                out [y]     windows never read padding
 *  MAX_POOL_2D forward:       in [x]                out [y, argmax]  argmax (optional, UINT8, shaped
 *                                                               as y) = kh * filter_w + kw of the
 *                                                               window's first maximum
 *  MAX_POOL_2D backward:      in [x, dy, argmax, y] out [dx]    dy goes to the first maximum of
 *                             each window (in window order), found from x, or from argmax when x
 *                             is -1; with params.dx_activation != NONE (y given, the forward's
 *                             output), dx = act'(x) applied as well, computed as act'(y) of each
 *                             window (y = x at the window's maximum, so the two are the same)
 *  AVERAGE_POOL_2D:           fwd in [x] out [y]; bwd in [dy] out [dx]; the average is over the
 *                             window's positions inside the input
 *  MEAN:                      fwd in [x] out [y]; bwd in [dy] out [dx]; params.axes_mask, keep_dims
 *  PAD:                       fwd in [x] out [y] (zeros around); bwd in [dy] out [dx] (the crop)
 *  ADD, SUB, MUL, DIV fwd:    in [a, b]             out [y]     y = act(a op b), numpy broadcasting
 *                             (a, b, y of equal rank; a size-1 dimension broadcasts)
 *  ADD, SUB, MUL, DIV bwd:    in [a, b, y, dy]      out [da, db]   a and b are -1 where not read
 *                             (ADD, SUB read neither; MUL reads both; DIV reads b, and a for db);
 *                             y is -1 when activation is NONE; gradients are summed over the
 *                             axes their input was broadcast along.
 *  RELU6, TANH, LOGISTIC:     fwd in [x] out [y]; bwd in [y, dy] out [dx]
 *  CONCATENATION:             fwd in [x0, x1, ...] out [y] along params.axis; bwd in [dy]
 *                             out [dx0, dx1, ...] (each may be -1)
 *  ACCUMULATE (backward):     in [a]                out [acc]   acc += a (acc is read and written)
 *  UPDATE_SGD (update):       in [grad]             out [W]     W -= lr * grad
 *  UPDATE_ADAM (update):      in [grad]             out [W, m, v]
 *     m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *     W -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)     (t = run_args.iteration)
 *  A backward step may overwrite its dy input (the host guarantees that dy is dead after it).
 *  A backend may add private tensors of its own (kernel scratch) to its plan; they count as
 *  CLTRAIN_ROLE_LAYER_SCOPE, live only during the step that uses them, and are included in
 *  the memory report.
 *  Persistent tensors and tensors with initial data are planned over the whole step order.
 *  Output tensors of a step never alias its inputs, except where stated (ACCUMULATE, updates),
 *  or where the host makes them share bytes (tensor_desc.alias) for one of these pairs, which
 *  backends must compute correctly in place:
 *   - RESHAPE forward y with x, and RESHAPE backward dx with dy: the step then copies nothing;
 *   - CONV_2D / DEPTHWISE_CONV_2D backward dx with x, when params.dx_activation != NONE (every
 *     read of x, for dW and for the mask, comes before dx is written where it overlaps);
 *   - RELU, RELU6, TANH, LOGISTIC backward dx with dy; their forward y with x.
 *  The host only makes a pair share when the tensor read is dead after the step.
 *
 * Numerics (float32 everywhere; the order of every rounding is part of the op's definition)
 *  The CPU backend computes exactly as stated here, and so do the OpenCL kernels, with no
 *  contraction of a*b+c into a fused multiply-add unless stated (OpenCL: FP_CONTRACT OFF), and
 *  with clt_exp / clt_log from kernels/numerics.h instead of a library's exp/log. On a device
 *  that rounds IEEE-754 single precision exactly (POCL) the two backends then agree bitwise, so
 *  whole training runs give the same losses; on other devices they agree within the op suite's
 *  tolerances.
 *  - Dot products (matrix products): acc = 0; acc = fma(a_k, b_k, acc) for k = 0, 1, ... in
 *    increasing order (this is what CLBlast's GEMM kernels do per output element).
 *    FULLY_CONNECTED forward: y = act(acc + b). Backward: dz = act'(y) applied to dy (below);
 *    dx[n,k] = dot over m of dz[n,m] W[m,k]; dW[m,k] = dot over n of dz[n,m] x[n,k];
 *    db[m] = sum over n of dz[n,m].
 *  - Sums: s = 0; s = s + v_i in increasing index order (plain adds).
 *  - Activation derivatives select, never multiply by 0/1: RELU dz = y > 0 ? dy : 0; RELU6
 *    dz = (y > 0 && y < 6) ? dy : 0; TANH dz = dy * (1 - y * y); LOGISTIC dz = dy * (y * (1 - y)).
 *    TANH forward: e = clt_exp(-2|x|), t = (1 - e) / (1 + e), y = x < 0 ? -t : t. LOGISTIC
 *    forward: y = 1 / (1 + clt_exp(-x)).
 *  - CONV_2D forward: acc = dot over (kh, kw, i) in that nesting (i fastest) of
 *    x[n,ih,iw,i] * W[o,kh,kw,i], positions outside x skipped; y = act(acc + b[o]).
 *    dW[o,kh,kw,i] = dot over (n, oh, ow) of dz[n,oh,ow,o] * x[n,ih,iw,i] (outside: skipped);
 *    db[o] = sum over (n, oh, ow) of dz; dx[n,ih,iw,i] = sum over (kh, kw) in order, for the
 *    (oh, ow) that reach (ih, iw) with them, of (dot over o of dz[n,oh,ow,o] * W[o,kh,kw,i]).
 *    DEPTHWISE_CONV_2D likewise with the channel sum replaced by the one channel (forward: dot
 *    over (kh, kw)); dx[n,ih,iw,c] = sum over (kh, kw) of (dot over j of dz[.., c*M+j] * W[.., c*M+j]).
 *  - Pools: max over the window in (kh, kw) order, the first maximum wins; average = (sum over
 *    the window's inside positions) / count. Backward: dx[n,ih,iw,c] = sum over windows (oh, ow)
 *    in increasing order that take (ih, iw) (max: as their first maximum) of dy (max) or of
 *    (dy / count) (average).
 *  - MEAN: y = (sum in increasing flat index order) / count; dx = dy / count.
 *  - ADD/SUB/MUL/DIV backward, per element of y with g = dz: ADD da += g, db += g; SUB da += g,
 *    db += -g; MUL da += g * b, db += g * a; DIV da += g / b, db += -((g * a) / (b * b)); each
 *    gradient element sums its contributions in increasing flat index of y.
 *  - SOFTMAX forward, per row: t_i = beta * x_i; mx = max_i t_i; e_i = clt_exp(t_i - mx);
 *    s = sum of e_i; y_i = e_i / s. Backward: d = sum of (dy_i * y_i) (products rounded, then
 *    summed); dx_i = beta * (y_i * (dy_i - d)).
 *  - LOSS_CCE forward: l = sum over all elements, batch-major, of (-e * clt_log(pc)) where
 *    pc = min(max(p, 1e-7), 1 - 1e-7); loss = l / N for SUM_OVER_BATCH_SIZE (N = dims[0] of pred),
 *    loss = l for SUM. Backward: dpred = (-e / pc) / N, or (-e / pc) for SUM; 0 where p != pc.
 *  - LOSS_MSE forward, per sample of K elements: q = sum of (d * d) with d = p - e; then
 *    l = sum over samples of (q / K); loss = l / N or l. Backward: dpred = (2 * d) / K, then / N
 *    for SUM_OVER_BATCH_SIZE.
 *  - UPDATE_SGD: W = W - lr * g.
 *  - UPDATE_ADAM: step = (float)((double)lr * sqrt(1 - b2^t) / (1 - b1^t)) computed in double;
 *    m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * (g * g) (with (1 - b1), (1 - b2)
 *    rounded to float first); W = W - (step * m) / (sqrt(v) + eps).
 */
#ifndef CLTRAIN_BACKEND_H
#define CLTRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain/cltrain_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CLTRAIN_BACKEND_ABI_VERSION 2u

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

typedef enum cltrain_dtype { CLTRAIN_FLOAT32 = 0, CLTRAIN_INT32 = 1, CLTRAIN_UINT8 = 2 } cltrain_dtype;

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
  /* 0: the tensor has bytes of its own. k > 0: it shares the bytes of tensor k - 1 (same byte
   * size, same backend), which the backend plans as one block live over both lifetimes; only
   * for the in-place pairs listed above. */
  int32_t alias;
} cltrain_tensor_desc;

/* Parameters of a step; each op reads the members it needs. */
typedef struct cltrain_op_params {
  int32_t activation; /* cltrain_activation, fused into the op */
  float beta;         /* SOFTMAX */
  int32_t reduction;  /* cltrain_loss_reduction, LOSS_* */
  float learning_rate, beta1, beta2, epsilon; /* UPDATE_*; learning_rate may be overridden per run */
  /* CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, AVERAGE_POOL_2D */
  int32_t padding; /* cltrain_padding */
  int32_t stride_h, stride_w;
  int32_t dilation_h, dilation_w; /* convolutions; 1 = none */
  int32_t filter_h, filter_w;     /* pools (convolutions take theirs from W) */
  int32_t depth_multiplier;       /* DEPTHWISE_CONV_2D */
  int32_t axis;                   /* CONCATENATION, non-negative */
  int32_t axes_mask;              /* MEAN: bit i set = axis i is reduced */
  int32_t keep_dims;              /* MEAN */
  int32_t pad_before[CLTRAIN_MAX_RANK], pad_after[CLTRAIN_MAX_RANK]; /* PAD, per axis */
  /* UPDATE_*: when update_count > 0 only elements [update_offset, update_offset + update_count)
   * of W (and of grad) are updated; Adam's m and v then have update_count elements, m[i] and v[i]
   * belonging to W[update_offset + i]. 0: the whole tensor. (onert-micro's half-weight ranks.) */
  int32_t update_offset, update_count;
  /* CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D backward: the fused activation of the producer of
   * x, whose derivative this step applies to dx (see the step conventions); 0 (NONE) for none. */
  int32_t dx_activation;
  int32_t reserved[5];            /* zero */
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
  uint32_t struct_size; /* sizeof(cltrain_memory_report) as the host knows it; the backend fills
                           only the members that fit */
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
  uint32_t struct_size; /* sizeof(cltrain_run_args) as the host knows it */
  int64_t iteration;   /* 1-based number of the current training iteration (Adam's t) */
  float learning_rate; /* overrides params.learning_rate of update steps when > 0 */
} cltrain_run_args;

/* What a backend did since create or the last reset_stats (ABI version 2). The host sets
 * struct_size; the backend fills the members that fit in it and leaves the rest alone. */
typedef struct cltrain_run_stats {
  uint32_t struct_size;        /* sizeof(cltrain_run_stats) as the host knows it */
  uint32_t reserved;           /* zero */
  uint64_t launches;           /* device commands that steps enqueued: kernels (each kernel of a
                                  library call such as a GEMM counts), device-side copies and fills;
                                  a backend without a device counts one per step run */
  uint64_t bytes_to_device;    /* bytes the host's write_tensor calls moved to the device */
  uint64_t bytes_from_device;  /* bytes read_tensor moved back */
  uint64_t blocking_waits;     /* times the host thread waited for the device (a blocking read or
                                  write, a finish, a wait for events) */
  uint64_t buffer_allocations; /* device buffers created (pool, views, staging) */
  uint64_t program_builds;     /* device programs built (kernels compiled or loaded from binaries) */
  uint64_t steps_run;          /* steps that run() executed */
} cltrain_run_stats;

/* Device time of one step since the last reset_stats (ABI version 2), from the device's own
 * timestamps (OpenCL event profiling) or, for a host backend, the host's clock. */
typedef struct cltrain_kernel_profile {
  int32_t step;    /* global step index; -1: the host's transfers (write_tensor, read_tensor) */
  int32_t reserved;
  int64_t calls;   /* device commands timed: kernels, copies, transfers */
  double ms;       /* their summed execution time (end - start of each), milliseconds */
} cltrain_kernel_profile;

/* A private tensor of a backend's plan (kernel scratch), for drawing and checking plans. */
typedef struct cltrain_private_tensor {
  int32_t step;    /* the one step it lives in */
  int32_t role;    /* cltrain_role (CLTRAIN_ROLE_LAYER_SCOPE) */
  uint64_t offset; /* byte offset in the pool */
  uint64_t bytes;
} cltrain_private_tensor;

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

  /* --- ABI version 2 --- */

  /* Optional. Fills out (up to out->struct_size, which the host sets) with what the backend did
   * since create or the last reset_stats. */
  cltrain_status (*stats)(cltrain_backend* backend, cltrain_run_stats* out);
  /* Optional (with stats). Sets every counter of stats and every profile row to zero. */
  cltrain_status (*reset_stats)(cltrain_backend* backend);

  /* Optional. Turns timing of each step's device work on (on != 0) or off. Off (the default)
   * costs nothing: no events, no waits. May be called between runs; turning it on may wait for
   * queued work. CLTRAIN_UNAVAILABLE if this device cannot time its work. */
  cltrain_status (*set_profiling)(cltrain_backend* backend, int on);
  /* Optional. The device time per step since the last reset_stats, collected while profiling
   * was on: *num_rows rows, one per step that ran (and one with step -1 for the host's
   * transfers), in step order. Waits for queued work (not counted in stats). The rows are owned
   * by the backend, valid until its next call. The row layout never changes; a new one would
   * come with a new function. */
  cltrain_status (*profile)(cltrain_backend* backend, const cltrain_kernel_profile** rows,
                            int32_t* num_rows);

  /* Optional. The private tensors of the plan (after prepare): *num_rows rows, owned by the
   * backend, valid until the next call on it. */
  cltrain_status (*plan_private)(cltrain_backend* backend, const cltrain_private_tensor** rows,
                                 int32_t* num_rows);
} cltrain_backend_iface;

/* The dtype a step's slot holds: UINT8 for MAX_POOL_2D's argmax (forward output 1, backward
 * input 2), FLOAT32 everywhere else. */
static inline int32_t cltrain_slot_dtype(const cltrain_step_desc* step, int output, int slot) {
  if (step->op == CLTRAIN_OP_MAX_POOL_2D &&
      ((step->phase == CLTRAIN_PHASE_FORWARD && output && slot == 1) ||
       (step->phase == CLTRAIN_PHASE_BACKWARD && !output && slot == 2)))
    return CLTRAIN_UINT8;
  return CLTRAIN_FLOAT32;
}

/* The one symbol a plugin exports. */
typedef const cltrain_backend_iface* (*cltrain_backend_entry_fn)(void);
#define CLTRAIN_BACKEND_ENTRY_SYMBOL "cltrain_backend_entry"

#ifdef __cplusplus
}
#endif

#endif /* CLTRAIN_BACKEND_H */
