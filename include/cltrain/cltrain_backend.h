/* cltrain — the backend plugin ABI, version 3.
 *
 * A backend is a plugin that runs steps of a training graph on some device. A plugin is a shared
 * library exporting one C function, cltrain_backend_entry(), which returns a pointer to a static
 * cltrain_backend_iface. The CPU backend implements the same interface and is built into the
 * host; it is always the last backend.
 *
 * Rules
 *  - Only C types cross this boundary: plain structs, enums, pointers. No C++ exceptions escape a
 *    plugin; every function that can fail returns cltrain_status and leaves a one-line message
 *    behind (last_error, or the err buffer of create/probe).
 *  - Ownership: everything the host passes in is owned by the host and valid only during the call,
 *    unless a comment says otherwise. Everything a backend returns (strings, reports, rows) is
 *    owned by the backend and valid until the next call on the same backend object, or until
 *    destroy.
 *
 * Versions and growth (the rules both sides follow, so that either may be older)
 *  - iface->abi_version is the version of this header that the plugin was built with. A host
 *    serves the versions from CLTRAIN_BACKEND_ABI_OLDEST to CLTRAIN_BACKEND_ABI_VERSION of its
 *    own header and refuses any other, naming the plugin's version and the range it serves.
 *  - Within a version, structs grow only by members appended at their end, and every struct says
 *    how long its writer's copy is: the function table and the single structs by a struct_size
 *    member, arrays by an element size given next to them (cltrain_graph_desc.tensor_size and
 *    step_size; the row_size of the rows a plugin returns). Readers index arrays by that size,
 *    never by their own sizeof, and take the members a shorter struct lacks as zero (and a NULL
 *    function as absent); cltrain_read_sized() and the cltrain_graph_*() accessors below do both.
 *  - So an appended member's zero must mean "as before": a reader that does not know it behaves as
 *    a writer that does not set it. Anything else (a member removed, reordered or given another
 *    meaning, a required function added) is a new version.
 *  - Enums grow by values at their end; a backend refuses in supports() the ops it does not know.
 *
 * The training graph (what prepare receives)
 *  - A table of tensors, indexed by a global tensor id. A tensor whose first_step is -1 is not used
 *    by this backend; the backend must not allocate it.
 *  - A list of steps in one global step order: forward steps, the loss, backward steps, the
 *    checks of the loss and the gradients (FILL, CHECK_FINITE), then the optimizer updates, which
 *    the host runs only where the checks found every value finite. Each step is
 *    assigned to exactly one backend; prepare receives all steps and an `assigned` flag per step.
 *  - Each tensor used by the backend carries its lifetime [first_step, last_step] (inclusive) over
 *    the global step order, computed by the host from this backend's accesses, the host's reads and
 *    writes and cross-backend copies. Between its lifetimes (from one iteration to the next) only
 *    tensors with persistent != 0 keep their contents: weights and optimizer variables.
 *  - The backend plans all of its tensors into pooled memory from these lifetimes: two tensors whose
 *    lifetimes overlap never share a byte, except the in-place pairs the host marks with
 *    tensor_desc.alias (a backend that ignores alias plans them apart, which is as correct).
 *  - Persistent tensors and tensors with initial data are planned over the whole step order.
 *
 * Steps
 *  - What each op's steps read and write, which of their pairs may be computed in place, and the
 *    order of every rounding are in cltrain_ops.h, beside the op list.
 *  - A backward step may overwrite its dy input (the host guarantees that dy is dead after it).
 *  - Output tensors of a step never alias its inputs, except where cltrain_ops.h says so
 *    (ACCUMULATE and the updates read and write their outputs) or where the host makes them share
 *    bytes (tensor_desc.alias) for one of the in-place pairs cltrain_ops.h lists.
 *  - A backend may add private tensors of its own (kernel scratch) to its plan; they count as
 *    CLTRAIN_ROLE_LAYER_SCOPE, live only during the step that uses them, and are included in the
 *    memory report.
 *
 * Numerics (float32 everywhere; the order of every rounding is part of the op's definition)
 *  The CPU backend computes exactly as stated here and in cltrain_ops.h, and so do the OpenCL
 *  kernels, with no contraction of a*b+c into a fused multiply-add unless stated (OpenCL:
 *  FP_CONTRACT OFF), and with clt_exp / clt_log from kernels/numerics.h instead of a library's
 *  exp/log. On a device that rounds IEEE-754 single precision exactly (POCL) the two backends then
 *  agree bitwise, so whole training runs give the same losses; on other devices they agree within
 *  the op suite's tolerances. The general rules:
 *  - Dot products (matrix products): acc = 0; acc = fma(a_k, b_k, acc) for k = 0, 1, ... in
 *    increasing order (what CLBlast's GEMM kernels do per output element).
 *  - Sums: s = 0; s = s + v_i in increasing index order (plain adds).
 *  - Fused activations: RELU y = z < 0 ? 0 : z; RELU_N1_TO_1 and RELU6 clamp as v = z < lo ? lo : z,
 *    then y = v > hi ? hi : v; TANH as the TANH op (cltrain_ops.h).
 *  - Activation derivatives select, never multiply by 0/1: RELU dz = y > 0 ? dy : 0; RELU6
 *    dz = (y > 0 && y < 6) ? dy : 0; RELU_N1_TO_1 dz = (y > -1 && y < 1) ? dy : 0; TANH
 *    dz = dy * (1 - y * y).
 *  - Non-finite values propagate: no clamp, max or log turns a NaN into a number (clamps and maxima
 *    are the selects above, which return a NaN operand; clt_log(NaN) is NaN), so a NaN or Inf in
 *    the inputs or weights reaches the loss on every backend, and the host stops training there.
 *  - Signed zeros are kept: the selects above pass -0 through (RELU(-0) = -0), as bits. A
 *    compiler may lower a float select such as z < 0 ? 0 : z to a max instruction, and Arm's
 *    turns -0 into +0 (POCL's LLVM does so on aarch64), so kernels write these selects on the
 *    bits (kernels/common.cl, clt_pick), and the host and the CPU backend are compiled with
 *    -ffp-contract=off on every target, so that an aarch64 build computes the x86-64 build's bits.
 *  - Float16 storage (CLTRAIN_FLOAT16): arithmetic stays float32. A float16 input is widened
 *    exactly where it is read; a step computes each element of a float16 output in float32 exactly
 *    as it would for a float32 output, and rounds it to float16 once, to nearest even (OpenCL
 *    vstore_half_rte; overflow gives Inf, a NaN stays a NaN), where the float32 run stores it. So
 *    a step's only roundings to float16 are its final outputs', and a backend that keeps such a
 *    tensor as floats (the CPU backend) rounds every output element of the step to the nearest
 *    float16 value after the step and agrees bitwise. A step that reads and writes the same
 *    float16 tensor (ACCUMULATE) rounds its result once as well. The host gives float16 storage
 *    to no tensor of a step with a fused TANH (or a TANH dx_activation): its derivative would be a
 *    product computed in place on dy.
 */
#ifndef CLTRAIN_BACKEND_H
#define CLTRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cltrain/cltrain_ops.h"
#include "cltrain/cltrain_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header, and the oldest version a host built with it serves. */
#define CLTRAIN_BACKEND_ABI_VERSION 3u
#define CLTRAIN_BACKEND_ABI_OLDEST 3u

#define CLTRAIN_MAX_RANK 6
#define CLTRAIN_MAX_STEP_IO 8

#if defined(_WIN32)
#define CLTRAIN_EXPORT __declspec(dllexport)
#else
#define CLTRAIN_EXPORT __attribute__((visibility("default")))
#endif

/* CLTRAIN_FLOAT16 is a storage type only (IEEE-754 binary16, 2 bytes): the host gives it to
 * activations and back-prop tensors in a float32 slot when the user asks for half storage
 * (--storage fp16), and only to tensors that one backend alone touches, that the host never reads
 * or writes, and whose every step comes from an op whose descriptor says half_storage (see
 * Numerics). A backend refuses in prepare a float16 tensor in a step it cannot store it for. */
typedef enum cltrain_dtype {
  CLTRAIN_FLOAT32 = 0,
  CLTRAIN_INT32 = 1,
  CLTRAIN_UINT8 = 2,
  CLTRAIN_FLOAT16 = 3
} cltrain_dtype;

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
  /* 0: the tensor has bytes of its own. k > 0: it may share the bytes of tensor k - 1 (same byte
   * size, same backend), which the backend then plans as one block live over both lifetimes; only
   * for the in-place pairs of cltrain_ops.h. */
  int32_t alias;
} cltrain_tensor_desc;

/* Parameters of a step; each op reads the members it needs. */
typedef struct cltrain_op_params {
  int32_t activation;                         /* cltrain_activation, fused into the op */
  float beta;                                 /* SOFTMAX */
  int32_t reduction;                          /* cltrain_loss_reduction, LOSS_* */
  float learning_rate, beta1, beta2, epsilon; /* UPDATE_*; learning_rate may be overridden per run */
  /* CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, AVERAGE_POOL_2D */
  int32_t padding; /* cltrain_padding */
  int32_t stride_h, stride_w;
  int32_t dilation_h, dilation_w;                                    /* convolutions; 1 = none */
  int32_t filter_h, filter_w;                                        /* pools (convolutions take theirs from W) */
  int32_t depth_multiplier;                                          /* DEPTHWISE_CONV_2D */
  int32_t axis;                                                      /* CONCATENATION, non-negative */
  int32_t axes_mask;                                                 /* MEAN: bit i set = axis i is reduced */
  int32_t keep_dims;                                                 /* MEAN */
  int32_t pad_before[CLTRAIN_MAX_RANK], pad_after[CLTRAIN_MAX_RANK]; /* PAD, per axis */
  /* UPDATE_*: when update_count > 0 only elements [update_offset, update_offset + update_count)
   * of W (and of grad) are updated; Adam's m and v then have update_count elements, m[i] and v[i]
   * belonging to W[update_offset + i]. 0: the whole tensor. (onert-micro's half-weight ranks.) */
  int32_t update_offset, update_count;
  /* CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D backward: the fused activation of the producer of
   * x, whose derivative this step applies to dx (cltrain_ops.h); 0 (NONE) for none. */
  int32_t dx_activation;
  /* CONCATENATION: each input's extent along axis, as the host knows it from the model (a
   * backward whose dx of an input is -1 cannot see it otherwise); 0: not given, the backend takes
   * the extents from the tensors the step has. */
  int32_t concat_extents[CLTRAIN_MAX_STEP_IO];
  /* TRANSPOSE (forward and backward steps alike): y's axis d is x's axis perm[d], for d below x's
   * rank. */
  int32_t perm[CLTRAIN_MAX_RANK];
  float fill_value;    /* FILL: the value of every element */
  int32_t approximate; /* GELU: 1 = the tanh approximation, 0 = the exact (erf) form */
  float pad_value;     /* PADV2: the value around x */
  float alpha;         /* LEAKY_RELU: the slope below 0 */
  /* RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: 1 = the options' align_corners, half_pixel_centers */
  int32_t align_corners, half_pixel_centers;
} cltrain_op_params;

/* One step. Its last member is params, and the struct grows only there (new params). */
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

/* The training graph. tensors and steps are arrays whose elements are tensor_size and step_size
 * bytes apart (the sizeof of the host's structs): read them with cltrain_graph_tensor() and
 * cltrain_graph_step(), never by indexing. */
typedef struct cltrain_graph_desc {
  uint32_t struct_size; /* sizeof(cltrain_graph_desc) as the host knows it */
  uint32_t tensor_size; /* sizeof(cltrain_tensor_desc) as the host knows it */
  uint32_t step_size;   /* sizeof(cltrain_step_desc) as the host knows it */
  int32_t num_tensors;
  const void* tensors; /* num_tensors cltrain_tensor_desc, tensor_size bytes apart */
  int32_t num_steps;
  const void* steps;       /* num_steps cltrain_step_desc, step_size bytes apart */
  const uint8_t* assigned; /* num_steps flags: 1 where the step runs on this backend (NULL in supports) */
  /* With a memory budget, what of it the other backends' pools leave to this one (0: no budget):
   * plan and prepare stay within it where they can (a backend may choose leaner kernels to), and
   * may use room below it for speed */
  uint64_t pool_limit;
} cltrain_graph_desc;

/* What prepare reports about the backend's memory plan (bytes). */
typedef struct cltrain_memory_report {
  uint32_t struct_size;                   /* sizeof(cltrain_memory_report) as the host knows it; the backend fills
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
  /* The memory budget the host plans within (bytes over all backends' pools; 0: none). With one,
   * a backend may take kernel strategies that need less scratch for more work or launches (they
   * must compute the same bits); without one it may prefer speed at the same peak. */
  uint64_t memory_budget;
} cltrain_backend_config;

typedef struct cltrain_run_args {
  uint32_t struct_size; /* sizeof(cltrain_run_args) as the host knows it */
  int64_t iteration;    /* 1-based number of the current training iteration (Adam's t) */
  float learning_rate;  /* overrides params.learning_rate of update steps when > 0 */
} cltrain_run_args;

/* What a backend did since create or the last reset_stats. The host sets struct_size; the
 * backend fills the members that fit in it and leaves the rest alone. */
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

/* Device time of one step since the last reset_stats, from the device's own timestamps (OpenCL
 * event profiling) or, for a host backend, the host's clock. A row of profile(). */
typedef struct cltrain_kernel_profile {
  int32_t step; /* global step index; -1: the host's transfers (write_tensor, read_tensor) */
  int32_t reserved;
  int64_t calls; /* device commands timed: kernels, copies, transfers */
  double ms;     /* their summed execution time (end - start of each), milliseconds */
} cltrain_kernel_profile;

/* A private tensor of a backend's plan (kernel scratch), for drawing and checking plans. A row of
 * plan_private(). */
typedef struct cltrain_private_tensor {
  int32_t step;    /* the one step it lives in */
  int32_t role;    /* cltrain_role (CLTRAIN_ROLE_LAYER_SCOPE) */
  uint64_t offset; /* byte offset in the pool */
  uint64_t bytes;
} cltrain_private_tensor;

typedef struct cltrain_backend cltrain_backend; /* opaque, owned by the plugin */

/* The function table. Members up to last_error are required (the host refuses a plugin whose
 * table is shorter or has one of them NULL); the others are optional: NULL, or beyond the
 * plugin's struct_size, means the backend does not have it. */
typedef struct cltrain_backend_iface {
  uint32_t abi_version; /* CLTRAIN_BACKEND_ABI_VERSION of the plugin's build */
  uint32_t struct_size; /* sizeof(cltrain_backend_iface) of the plugin's build */
  const char* name;     /* "opencl", "cpu"; static */

  /* Creates a backend object on a device. On failure *out is NULL and err holds one line. */
  cltrain_status (*create)(const cltrain_backend_config* config, cltrain_backend** out, char* err, size_t err_len);
  void (*destroy)(cltrain_backend* backend);

  /* 1 if the backend can run step `step` of the graph (a forward step of a model op; with
   * training != 0, also its backward). The graph's tensors have no lifetimes yet and assigned is
   * NULL. */
  int (*supports)(cltrain_backend* backend, const cltrain_graph_desc* graph, int32_t step, int training);

  /* Plans memory for the assigned steps, allocates the pool, builds kernels and uploads initial
   * tensor data. Called once. report may be NULL. */
  cltrain_status (*prepare)(cltrain_backend* backend, const cltrain_graph_desc* graph, cltrain_memory_report* report);

  /* Runs the given steps (global indices, all assigned to this backend, in order). May return
   * before the device has finished; read_tensor and sync wait. */
  cltrain_status (*run)(cltrain_backend* backend, const int32_t* steps, int32_t num_steps,
                        const cltrain_run_args* args);

  /* Copies a whole tensor in or out (bytes must equal the tensor's size). write_tensor may return
   * before the copy completes only if it has copied src already; read_tensor waits for all work
   * queued before it. */
  cltrain_status (*write_tensor)(cltrain_backend* backend, int32_t tensor, const void* src, uint64_t bytes);
  cltrain_status (*read_tensor)(cltrain_backend* backend, int32_t tensor, void* dst, uint64_t bytes);

  /* Waits for all queued work. */
  cltrain_status (*sync)(cltrain_backend* backend);

  /* The last error as one line; owned by the backend. */
  const char* (*last_error)(cltrain_backend* backend);

  /* --- optional --- */

  /* CLTRAIN_OK if the backend can run here, CLTRAIN_UNAVAILABLE with a reason in err if not (no
   * driver, no device). */
  cltrain_status (*probe)(char* err, size_t err_len);

  /* Writes a human-readable list of devices (one per line, with their limits) into buf,
   * NUL-terminated and truncated to buf_len. */
  cltrain_status (*list_devices)(char* buf, size_t buf_len);

  /* One line naming the device the backend runs on; owned by the backend. */
  const char* (*device_name)(cltrain_backend* backend);

  /* Offsets of planned tensors: for each tensor id, its byte offset in the pool, or -1 if not
   * planned by this backend. offsets has num_tensors entries. */
  cltrain_status (*plan_offsets)(cltrain_backend* backend, int64_t* offsets, int32_t num_tensors);

  /* The private tensors of the plan (after prepare): *num_rows cltrain_private_tensor rows,
   * *row_size bytes apart, owned by the backend, valid until the next call on it. */
  cltrain_status (*plan_private)(cltrain_backend* backend, const void** rows, uint32_t* row_size, int32_t* num_rows);

  /* Fills out (up to out->struct_size, which the host sets) with what the backend did since
   * create or the last reset_stats. */
  cltrain_status (*stats)(cltrain_backend* backend, cltrain_run_stats* out);
  /* Sets every counter of stats and every profile row to zero. */
  cltrain_status (*reset_stats)(cltrain_backend* backend);

  /* Turns timing of each step's device work on (on != 0) or off. Off (the default) costs
   * nothing: no events, no waits. May be called between runs; turning it on may wait for queued
   * work. CLTRAIN_UNAVAILABLE if this device cannot time its work. */
  cltrain_status (*set_profiling)(cltrain_backend* backend, int on);
  /* The device time per step since the last reset_stats, collected while profiling was on:
   * *num_rows cltrain_kernel_profile rows, *row_size bytes apart, one per step that ran (and one
   * with step -1 for the host's transfers), in step order. Waits for queued work (not counted
   * in stats). The rows are owned by the backend, valid until its next call. */
  cltrain_status (*profile)(cltrain_backend* backend, const void** rows, uint32_t* row_size, int32_t* num_rows);

  /* Plans memory for the assigned steps as prepare would, without allocating, building kernels or
   * uploading: the report is prepare's for the same graph (pool_bytes what prepare would
   * allocate), with each step's kernel scratch at its least (prepare may then give a step more
   * where its plan leaves room, never a larger pool); plan_private gives those rows until the next
   * call. The backend stays unprepared: plan may be called any number of times before prepare. The
   * host uses it to choose recomputation within a memory budget. */
  cltrain_status (*plan)(cltrain_backend* backend, const cltrain_graph_desc* graph, cltrain_memory_report* report);
} cltrain_backend_iface;

/* Copies a struct that its writer made src_size bytes long into *dst (dst_size bytes, the
 * reader's sizeof): members the writer's struct lacks read as zero, members the reader does not
 * know are left out. */
static inline void cltrain_read_sized(void* dst, size_t dst_size, const void* src, size_t src_size) {
  memset(dst, 0, dst_size);
  memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
}

/* Element i of an array whose elements are elem_size bytes apart. */
static inline const void* cltrain_element(const void* base, size_t elem_size, int64_t i) {
  return (const char*)base + (size_t)i * elem_size;
}

/* A graph descriptor over this build's tables (what a host passes). */
static inline cltrain_graph_desc cltrain_graph(const cltrain_tensor_desc* tensors, int32_t num_tensors,
                                               const cltrain_step_desc* steps, int32_t num_steps,
                                               const uint8_t* assigned) {
  cltrain_graph_desc g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.tensor_size = sizeof(cltrain_tensor_desc);
  g.step_size = sizeof(cltrain_step_desc);
  g.num_tensors = num_tensors;
  g.tensors = tensors;
  g.num_steps = num_steps;
  g.steps = steps;
  g.assigned = assigned;
  return g;
}

/* Tensor i and step i of a graph, as this build's structs. */
static inline cltrain_tensor_desc cltrain_graph_tensor(const cltrain_graph_desc* g, int32_t i) {
  cltrain_tensor_desc t;
  cltrain_read_sized(&t, sizeof t, cltrain_element(g->tensors, g->tensor_size, i), g->tensor_size);
  return t;
}
static inline cltrain_step_desc cltrain_graph_step(const cltrain_graph_desc* g, int32_t i) {
  cltrain_step_desc s;
  cltrain_read_sized(&s, sizeof s, cltrain_element(g->steps, g->step_size, i), g->step_size);
  return s;
}

/* The dtype a step's slot holds: UINT8 for MAX_POOL_2D's argmax (forward output 1, backward
 * input 2), INT32 for GATHER's ids (input 1 of both steps), FLOAT32 everywhere else. */
static inline int32_t cltrain_slot_dtype(const cltrain_step_desc* step, int output, int slot) {
  if (step->op == CLTRAIN_OP_MAX_POOL_2D && ((step->phase == CLTRAIN_PHASE_FORWARD && output && slot == 1) ||
                                             (step->phase == CLTRAIN_PHASE_BACKWARD && !output && slot == 2)))
    return CLTRAIN_UINT8;
  if (step->op == CLTRAIN_OP_GATHER && !output && slot == 1) return CLTRAIN_INT32;
  return CLTRAIN_FLOAT32;
}

/* The one symbol a plugin exports. */
typedef const cltrain_backend_iface* (*cltrain_backend_entry_fn)(void);
#define CLTRAIN_BACKEND_ENTRY_SYMBOL "cltrain_backend_entry"

#ifdef __cplusplus
}
#endif

#endif /* CLTRAIN_BACKEND_H */
