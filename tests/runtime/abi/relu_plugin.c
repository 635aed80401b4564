/* A backend plugin written in C against a frozen copy of the plugin header (CLTRAIN_FROZEN_HEADER:
 * cltrain_backend_fewer.h or cltrain_backend_more.h), for tests/runtime/abi_compat_test.cc. It
 * runs RELU's forward and backward steps in plain loops, one host buffer per tensor, and checks
 * everything the host hands it: a plugin that read the host's arrays by its own sizeof rather
 * than by their element size would see garbage after the first element and refuse it. Its
 * plan_private rows (and, in the "more" build, profile rows) are fixed values the test expects
 * back, so a host that read them by its own sizeof would misread them. */
#include CLTRAIN_FROZEN_HEADER

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CLTRAIN_ABI_MORE
#define PLUGIN_NAME "abi_more"
#else
#define PLUGIN_NAME "abi_fewer"
#endif

struct cltrain_backend {
  char error[256];
  int32_t num_tensors, num_steps;
  cltrain_tensor_desc* tensors;
  cltrain_step_desc* steps;
  float** data;   /* per tensor; NULL where not used here */
  int64_t* calls; /* per step: times run */
  cltrain_private_tensor rows[2];
  int32_t num_rows;
  cltrain_kernel_profile* profile_rows;
  uint64_t steps_run;
};

static cltrain_status fail(cltrain_backend* b, cltrain_status s, const char* what, long long n) {
  snprintf(b->error, sizeof b->error, "%s %lld", what, n);
  return s;
}

static uint64_t elements(const cltrain_tensor_desc* t) {
  uint64_t n = 1;
  for (int32_t d = 0; d < t->rank; ++d) n *= (uint64_t)t->dims[d];
  return n;
}

/* A tensor as a host that follows the rules sends it; "" if it is, else what is off. */
static const char* bad_tensor(const cltrain_tensor_desc* t, int32_t num_steps) {
  if (!t->name || strlen(t->name) > 200) return "tensor without a sane name:";
  if (t->rank < 0 || t->rank > CLTRAIN_MAX_RANK) return "tensor with a bad rank:";
  for (int32_t d = 0; d < t->rank; ++d)
    if (t->dims[d] < 0 || t->dims[d] > (1 << 24)) return "tensor with a bad dimension:";
  if (t->dtype < 0 || t->dtype > CLTRAIN_UINT8) return "tensor with a bad dtype:";
  if (t->role < 0 || t->role >= CLTRAIN_ROLE_COUNT) return "tensor with a bad role:";
  if (t->persistent != 0 && t->persistent != 1) return "tensor with a bad persistent flag:";
  if (t->first_step < -1 || t->first_step >= num_steps || t->last_step < -1 || t->last_step >= num_steps ||
      t->first_step > t->last_step)
    return "tensor with a bad lifetime:";
  if ((t->data == NULL) != (t->data_bytes == 0)) return "tensor with bad initial data:";
#ifdef CLTRAIN_ABI_MORE
  if (t->appended != 0) return "tensor whose appended member is not zero:";
#endif
  return NULL;
}

static const char* bad_step(const cltrain_step_desc* s, int32_t num_tensors) {
  if (s->op < 0 || s->op >= CLTRAIN_OP_COUNT) return "step with a bad op:";
  if (s->phase < 0 || s->phase > CLTRAIN_PHASE_UPDATE) return "step with a bad phase:";
  if (s->num_inputs < 0 || s->num_inputs > CLTRAIN_MAX_STEP_IO || s->num_outputs < 0 ||
      s->num_outputs > CLTRAIN_MAX_STEP_IO)
    return "step with a bad slot count:";
  for (int i = 0; i < s->num_inputs + s->num_outputs; ++i) {
    const int32_t id = i < s->num_inputs ? s->inputs[i] : s->outputs[i - s->num_inputs];
    if (id < -1 || id >= num_tensors) return "step with a bad tensor id:";
  }
#ifdef CLTRAIN_ABI_MORE
  if (s->params.appended != 0) return "step whose appended param is not zero:";
#endif
  return NULL;
}

static int is_relu_step(const cltrain_graph_desc* g, const cltrain_step_desc* s) {
  if (s->op != CLTRAIN_OP_RELU) return 0;
  const int fwd = s->phase == CLTRAIN_PHASE_FORWARD, bwd = s->phase == CLTRAIN_PHASE_BACKWARD;
  if (!((fwd && s->num_inputs == 1) || (bwd && s->num_inputs == 2)) || s->num_outputs != 1) return 0;
  const int32_t ids[3] = {s->inputs[0], bwd ? s->inputs[1] : s->inputs[0], s->outputs[0]};
  uint64_t n = 0;
  for (int i = 0; i < 3; ++i) {
    if (ids[i] < 0 || ids[i] >= g->num_tensors) return 0;
    const cltrain_tensor_desc t = cltrain_graph_tensor(g, ids[i]);
    if (t.dtype != CLTRAIN_FLOAT32 || (i > 0 && elements(&t) != n)) return 0;
    n = elements(&t);
  }
  return 1;
}

static cltrain_status create(const cltrain_backend_config* config, cltrain_backend** out, char* err, size_t len) {
  (void)config;
  *out = (cltrain_backend*)calloc(1, sizeof(cltrain_backend));
  if (!*out) {
    snprintf(err, len, "out of memory");
    return CLTRAIN_OUT_OF_MEMORY;
  }
  return CLTRAIN_OK;
}

static void destroy(cltrain_backend* b) {
  if (!b) return;
  for (int32_t i = 0; b->data && i < b->num_tensors; ++i) free(b->data[i]);
  free(b->data);
  free(b->tensors);
  free(b->steps);
  free(b->calls);
  free(b->profile_rows);
  free(b);
}

static int supports(cltrain_backend* b, const cltrain_graph_desc* g, int32_t step, int training) {
  (void)b;
  (void)training;
  if (step < 0 || step >= g->num_steps) return 0;
  const cltrain_step_desc s = cltrain_graph_step(g, step);
  return is_relu_step(g, &s);
}

static cltrain_status prepare(cltrain_backend* b, const cltrain_graph_desc* host, cltrain_memory_report* report) {
  cltrain_graph_desc g;
  cltrain_read_sized(&g, sizeof g, host, host->struct_size);
  b->num_tensors = g.num_tensors;
  b->num_steps = g.num_steps;
  b->tensors = (cltrain_tensor_desc*)calloc((size_t)g.num_tensors + 1, sizeof(cltrain_tensor_desc));
  b->steps = (cltrain_step_desc*)calloc((size_t)g.num_steps + 1, sizeof(cltrain_step_desc));
  b->data = (float**)calloc((size_t)g.num_tensors + 1, sizeof(float*));
  b->calls = (int64_t*)calloc((size_t)g.num_steps + 1, sizeof(int64_t));
  b->profile_rows = (cltrain_kernel_profile*)calloc((size_t)g.num_steps + 1, sizeof(cltrain_kernel_profile));
  if (!b->tensors || !b->steps || !b->data || !b->calls || !b->profile_rows)
    return fail(b, CLTRAIN_OUT_OF_MEMORY, "tables", 0);
  uint64_t planned = 0;
  for (int32_t i = 0; i < g.num_tensors; ++i) {
    b->tensors[i] = cltrain_graph_tensor(&g, i);
    const char* why = bad_tensor(&b->tensors[i], g.num_steps);
    if (why) return fail(b, CLTRAIN_INVALID, why, i);
    if (b->tensors[i].first_step < 0) continue;
    const uint64_t bytes = elements(&b->tensors[i]) * (b->tensors[i].dtype == CLTRAIN_UINT8 ? 1 : 4);
    b->data[i] = (float*)calloc(bytes / 4 + 1, sizeof(float));
    if (!b->data[i]) return fail(b, CLTRAIN_OUT_OF_MEMORY, "tensor", i);
    if (b->tensors[i].data) memcpy(b->data[i], b->tensors[i].data, bytes);
    b->tensors[i].name = NULL; /* the host's strings are valid during prepare only */
    b->tensors[i].data = NULL;
    planned += bytes;
  }
  for (int32_t i = 0; i < g.num_steps; ++i) {
    b->steps[i] = cltrain_graph_step(&g, i);
    const char* why = bad_step(&b->steps[i], g.num_tensors);
    if (why) return fail(b, CLTRAIN_INVALID, why, i);
    if (!g.assigned[i]) continue;
    if (!is_relu_step(&g, &b->steps[i])) return fail(b, CLTRAIN_INVALID, "assigned a step it does not support:", i);
    if (b->num_rows < 2) {
      /* Fixed rows the test reads back: step, role, offset 1 MiB * (k + 1), bytes 64 * (k + 1). */
      cltrain_private_tensor* r = &b->rows[b->num_rows];
      r->step = i;
      r->role = CLTRAIN_ROLE_LAYER_SCOPE;
      r->offset = (uint64_t)(b->num_rows + 1) << 20;
      r->bytes = 64u * (uint64_t)(b->num_rows + 1);
#ifdef CLTRAIN_ABI_MORE
      r->appended = 0xa5a5a5a5a5a5a5a5ull;
#endif
      ++b->num_rows;
    }
  }
  if (report) {
    cltrain_memory_report full;
    memset(&full, 0, sizeof full);
    full.pool_bytes = full.lower_bound = planned;
    const uint32_t size = report->struct_size;
    memcpy(report, &full, size < sizeof full ? size : sizeof full);
    report->struct_size = size;
  }
  return CLTRAIN_OK;
}

static cltrain_status run(cltrain_backend* b, const int32_t* steps, int32_t num_steps, const cltrain_run_args* args) {
  cltrain_run_args own;
  cltrain_read_sized(&own, sizeof own, args, args->struct_size);
#ifdef CLTRAIN_ABI_MORE
  if (own.appended != 0) return fail(b, CLTRAIN_INVALID, "run args whose appended member is not zero:", 0);
#endif
  for (int32_t k = 0; k < num_steps; ++k) {
    const cltrain_step_desc* s = &b->steps[steps[k]];
    const uint64_t n = elements(&b->tensors[s->outputs[0]]);
    float* out = b->data[s->outputs[0]];
    if (s->phase == CLTRAIN_PHASE_FORWARD) {
      const float* x = b->data[s->inputs[0]];
      for (uint64_t i = 0; i < n; ++i) out[i] = x[i] < 0.0f ? 0.0f : x[i];
    } else {
      const float *y = b->data[s->inputs[0]], *dy = b->data[s->inputs[1]];
      for (uint64_t i = 0; i < n; ++i) out[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    }
    ++b->calls[steps[k]];
    ++b->steps_run;
  }
  return CLTRAIN_OK;
}

static cltrain_status copy_tensor(cltrain_backend* b, int32_t t, void* dst, const void* src, uint64_t bytes) {
  if (t < 0 || t >= b->num_tensors || !b->data[t]) return fail(b, CLTRAIN_INVALID, "not a tensor of this backend:", t);
  const uint64_t size = elements(&b->tensors[t]) * (b->tensors[t].dtype == CLTRAIN_UINT8 ? 1 : 4);
  if (bytes != size) return fail(b, CLTRAIN_INVALID, "wrong byte count for tensor", t);
  memcpy(dst ? dst : b->data[t], src ? src : b->data[t], bytes);
  return CLTRAIN_OK;
}

static cltrain_status write_tensor(cltrain_backend* b, int32_t t, const void* src, uint64_t bytes) {
  return copy_tensor(b, t, NULL, src, bytes);
}
static cltrain_status read_tensor(cltrain_backend* b, int32_t t, void* dst, uint64_t bytes) {
  return copy_tensor(b, t, dst, NULL, bytes);
}
static cltrain_status sync(cltrain_backend* b) {
  (void)b;
  return CLTRAIN_OK;
}
static const char* last_error(cltrain_backend* b) { return b->error; }

static cltrain_status plan_private(cltrain_backend* b, const void** rows, uint32_t* row_size, int32_t* num_rows) {
  *rows = b->rows;
  *row_size = sizeof(cltrain_private_tensor);
  *num_rows = b->num_rows;
  return CLTRAIN_OK;
}

static cltrain_status stats(cltrain_backend* b, cltrain_run_stats* out) {
  cltrain_run_stats full;
  memset(&full, 0, sizeof full);
  full.launches = full.steps_run = b->steps_run;
  const uint32_t size = out->struct_size;
  memcpy(out, &full, size < sizeof full ? size : sizeof full);
  out->struct_size = size;
  return CLTRAIN_OK;
}
static cltrain_status reset_stats(cltrain_backend* b) {
  b->steps_run = 0;
  memset(b->calls, 0, (size_t)b->num_steps * sizeof(int64_t));
  return CLTRAIN_OK;
}
static cltrain_status set_profiling(cltrain_backend* b, int on) {
  (void)b;
  (void)on;
  return CLTRAIN_OK;
}

#ifdef CLTRAIN_ABI_MORE
/* Rows: one per step run, its calls, 0.5 ms a call, the appended member set. */
static cltrain_status profile(cltrain_backend* b, const void** rows, uint32_t* row_size, int32_t* num_rows) {
  int32_t n = 0;
  for (int32_t i = 0; i < b->num_steps; ++i) {
    if (b->calls[i] == 0) continue;
    cltrain_kernel_profile* r = &b->profile_rows[n++];
    r->step = i;
    r->reserved = 0;
    r->calls = b->calls[i];
    r->ms = 0.5 * (double)b->calls[i];
    r->appended = 0x5a5a5a5a5a5a5a5aull;
  }
  *rows = b->profile_rows;
  *row_size = sizeof(cltrain_kernel_profile);
  *num_rows = n;
  return CLTRAIN_OK;
}

static int appended(cltrain_backend* b) {
  (void)b;
  return 1;
}
#else
/* What lies in memory after the shorter table: a host that read past struct_size would take it for
 * profile and call it. */
static void read_past_the_table(void) {
  fprintf(stderr, "abi_fewer: the host called past the end of the plugin's function table\n");
  abort();
}
#endif

static const struct {
  cltrain_backend_iface iface;
  void (*after)(void);
} kTable = {{CLTRAIN_BACKEND_ABI_VERSION,
             sizeof(cltrain_backend_iface),
             PLUGIN_NAME,
             create,
             destroy,
             supports,
             prepare,
             run,
             write_tensor,
             read_tensor,
             sync,
             last_error,
             NULL,
             NULL,
             NULL,
             NULL,
             plan_private,
             stats,
             reset_stats,
             set_profiling
#ifdef CLTRAIN_ABI_MORE
             ,
             profile,
             appended
#endif
            },
#ifdef CLTRAIN_ABI_MORE
            NULL
#else
            read_past_the_table
#endif
};

CLTRAIN_EXPORT const cltrain_backend_iface* cltrain_backend_entry(void) { return &kTable.iface; }
