/* A copy of include/cltrain/cltrain_backend.h (ABI version 3) with one member more at the end
 * of the function table, of the array structs (cltrain_tensor_desc, cltrain_step_desc's params,
 * the rows cltrain_private_tensor and cltrain_kernel_profile) and of cltrain_run_args: the header
 * of a plugin built after the host's, which appended those members. When the real header grows,
 * this copy grows with it (the appended members stay last): it is always one step newer.
 * tests/runtime/abi_compat_test.cc checks that the host serves such a plugin. Documentation
 * stripped: the real header has it. */
#ifndef CLTRAIN_BACKEND_H
#define CLTRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cltrain/cltrain_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CLTRAIN_BACKEND_ABI_VERSION 3u
#define CLTRAIN_BACKEND_ABI_OLDEST 3u

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
  int32_t alias;
  int32_t appended; /* zero from a host that does not know it */
} cltrain_tensor_desc;

typedef struct cltrain_op_params {
  int32_t activation;                         /* cltrain_activation, fused into the op */
  float beta;                                 /* SOFTMAX */
  int32_t reduction;                          /* cltrain_loss_reduction, LOSS_* */
  float learning_rate, beta1, beta2, epsilon; /* UPDATE_*; learning_rate may be overridden per run */
  int32_t padding;                            /* cltrain_padding */
  int32_t stride_h, stride_w;
  int32_t dilation_h, dilation_w;                                    /* convolutions; 1 = none */
  int32_t filter_h, filter_w;                                        /* pools (convolutions take theirs from W) */
  int32_t depth_multiplier;                                          /* DEPTHWISE_CONV_2D */
  int32_t axis;                                                      /* CONCATENATION, non-negative */
  int32_t axes_mask;                                                 /* MEAN: bit i set = axis i is reduced */
  int32_t keep_dims;                                                 /* MEAN */
  int32_t pad_before[CLTRAIN_MAX_RANK], pad_after[CLTRAIN_MAX_RANK]; /* PAD, per axis */
  int32_t update_offset, update_count;
  int32_t dx_activation;
  int32_t concat_extents[CLTRAIN_MAX_STEP_IO];
  int32_t perm[CLTRAIN_MAX_RANK];
  float fill_value;
  int32_t approximate;
  float pad_value;
  float alpha;
  int32_t align_corners, half_pixel_centers;
  int32_t appended; /* zero from a host that does not know it */
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
  uint32_t tensor_size; /* sizeof(cltrain_tensor_desc) as the host knows it */
  uint32_t step_size;   /* sizeof(cltrain_step_desc) as the host knows it */
  int32_t num_tensors;
  const void* tensors; /* num_tensors cltrain_tensor_desc, tensor_size bytes apart */
  int32_t num_steps;
  const void* steps;       /* num_steps cltrain_step_desc, step_size bytes apart */
  const uint8_t* assigned; /* num_steps flags: 1 where the step runs on this backend (NULL in supports) */
  uint64_t pool_limit;
} cltrain_graph_desc;

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
  uint64_t memory_budget;
} cltrain_backend_config;

typedef struct cltrain_run_args {
  uint32_t struct_size; /* sizeof(cltrain_run_args) as the host knows it */
  int64_t iteration;    /* 1-based number of the current training iteration (Adam's t) */
  float learning_rate;  /* overrides params.learning_rate of update steps when > 0 */
  int32_t appended;
} cltrain_run_args;

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

typedef struct cltrain_kernel_profile {
  int32_t step; /* global step index; -1: the host's transfers (write_tensor, read_tensor) */
  int32_t reserved;
  int64_t calls; /* device commands timed: kernels, copies, transfers */
  double ms;     /* their summed execution time (end - start of each), milliseconds */
  uint64_t appended;
} cltrain_kernel_profile;

typedef struct cltrain_private_tensor {
  int32_t step;    /* the one step it lives in */
  int32_t role;    /* cltrain_role (CLTRAIN_ROLE_LAYER_SCOPE) */
  uint64_t offset; /* byte offset in the pool */
  uint64_t bytes;
  uint64_t appended;
} cltrain_private_tensor;

typedef struct cltrain_backend cltrain_backend; /* opaque, owned by the plugin */

typedef struct cltrain_backend_iface {
  uint32_t abi_version; /* CLTRAIN_BACKEND_ABI_VERSION of the plugin's build */
  uint32_t struct_size; /* sizeof(cltrain_backend_iface) of the plugin's build */
  const char* name;     /* "opencl", "cpu"; static */

  cltrain_status (*create)(const cltrain_backend_config* config, cltrain_backend** out, char* err, size_t err_len);
  void (*destroy)(cltrain_backend* backend);

  int (*supports)(cltrain_backend* backend, const cltrain_graph_desc* graph, int32_t step, int training);

  cltrain_status (*prepare)(cltrain_backend* backend, const cltrain_graph_desc* graph, cltrain_memory_report* report);

  cltrain_status (*run)(cltrain_backend* backend, const int32_t* steps, int32_t num_steps,
                        const cltrain_run_args* args);

  cltrain_status (*write_tensor)(cltrain_backend* backend, int32_t tensor, const void* src, uint64_t bytes);
  cltrain_status (*read_tensor)(cltrain_backend* backend, int32_t tensor, void* dst, uint64_t bytes);

  cltrain_status (*sync)(cltrain_backend* backend);

  const char* (*last_error)(cltrain_backend* backend);

  /* --- optional --- */

  cltrain_status (*probe)(char* err, size_t err_len);

  cltrain_status (*list_devices)(char* buf, size_t buf_len);

  const char* (*device_name)(cltrain_backend* backend);

  cltrain_status (*plan_offsets)(cltrain_backend* backend, int64_t* offsets, int32_t num_tensors);

  cltrain_status (*plan_private)(cltrain_backend* backend, const void** rows, uint32_t* row_size, int32_t* num_rows);

  cltrain_status (*stats)(cltrain_backend* backend, cltrain_run_stats* out);
  cltrain_status (*reset_stats)(cltrain_backend* backend);

  cltrain_status (*set_profiling)(cltrain_backend* backend, int on);
  cltrain_status (*profile)(cltrain_backend* backend, const void** rows, uint32_t* row_size, int32_t* num_rows);
  cltrain_status (*plan)(cltrain_backend* backend, const cltrain_graph_desc* graph, cltrain_memory_report* report);
  int (*appended)(cltrain_backend* backend);
} cltrain_backend_iface;

static inline void cltrain_read_sized(void* dst, size_t dst_size, const void* src, size_t src_size) {
  memset(dst, 0, dst_size);
  memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
}

static inline const void* cltrain_element(const void* base, size_t elem_size, int64_t i) {
  return (const char*)base + (size_t)i * elem_size;
}

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

static inline int32_t cltrain_slot_dtype(const cltrain_step_desc* step, int output, int slot) {
  if (step->op == CLTRAIN_OP_MAX_POOL_2D && ((step->phase == CLTRAIN_PHASE_FORWARD && output && slot == 1) ||
                                             (step->phase == CLTRAIN_PHASE_BACKWARD && !output && slot == 2)))
    return CLTRAIN_UINT8;
  return CLTRAIN_FLOAT32;
}

typedef const cltrain_backend_iface* (*cltrain_backend_entry_fn)(void);
#define CLTRAIN_BACKEND_ENTRY_SYMBOL "cltrain_backend_entry"

#ifdef __cplusplus
}
#endif

#endif /* CLTRAIN_BACKEND_H */
