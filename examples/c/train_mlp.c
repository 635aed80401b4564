/* Trains a model (the mlp: cltrain make-model mlp -o mlp.circle) on Fashion-MNIST through the C
 * API of libcltrain, then reports its accuracy on the 10,000 test images and exports it.
 *
 *   train_mlp MODEL [--data DIR] [--epochs N] [--batch N] [--limit N] [--backends LIST]
 *             [--export FILE]
 *
 * DIR holds Fashion-MNIST's idx files, gzipped or not (default /usr/share/datasets/fashion-mnist,
 * Debian's dataset-fashion-mnist). Prints one line per epoch and "test accuracy: A". C99. */
#include <cltrain/cltrain.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct {
  float* x; /* samples * 784 pixels in [0, 1] */
  float* y; /* samples * 10, one-hot */
  size_t samples;
} dataset;

/* Reads an idx file (gzipped or plain): its bytes after a header of header_len bytes. */
static unsigned char* read_idx(const char* dir, const char* name, size_t header_len, size_t* n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.gz", dir, name);
  gzFile f = gzopen(path, "rb");
  if (!f) {
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = gzopen(path, "rb");
  }
  if (!f) {
    fprintf(stderr, "train_mlp: cannot open %s/%s[.gz]\n", dir, name);
    return NULL;
  }
  size_t cap = 1 << 20, len = 0;
  unsigned char* buf = malloc(cap);
  int got;
  while (buf && (got = gzread(f, buf + len, (unsigned)(cap - len))) > 0) {
    len += (size_t)got;
    if (len == cap) {
      unsigned char* bigger = realloc(buf, cap *= 2);
      if (!bigger) free(buf);
      buf = bigger;
    }
  }
  gzclose(f);
  if (!buf || len < header_len) {
    fprintf(stderr, "train_mlp: %s is truncated\n", path);
    free(buf);
    return NULL;
  }
  *n = len - header_len;
  memmove(buf, buf + header_len, *n);
  return buf;
}

static int load(const char* dir, const char* split, size_t limit, dataset* d) {
  char images[64], labels[64];
  snprintf(images, sizeof images, "%s-images-idx3-ubyte", split);
  snprintf(labels, sizeof labels, "%s-labels-idx1-ubyte", split);
  size_t n_pixels = 0, n_labels = 0;
  unsigned char* px = read_idx(dir, images, 16, &n_pixels);
  unsigned char* lb = read_idx(dir, labels, 8, &n_labels);
  if (!px || !lb || n_pixels != n_labels * 784) {
    if (px && lb) fprintf(stderr, "train_mlp: %s images and labels differ in count\n", split);
    free(px);
    free(lb);
    return -1;
  }
  d->samples = limit && limit < n_labels ? limit : n_labels;
  d->x = malloc(d->samples * 784 * sizeof(float));
  d->y = calloc(d->samples * 10, sizeof(float));
  if (!d->x || !d->y) return -1;
  for (size_t i = 0; i < d->samples * 784; ++i) d->x[i] = (float)px[i] / 255.0f;
  for (size_t i = 0; i < d->samples; ++i) d->y[i * 10 + (lb[i] % 10)] = 1.0f;
  free(px);
  free(lb);
  return 0;
}

static int argmax(const float* v, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

/* On failure: the session's one line, and exit 1. */
static void check(cltrain_session* s, cltrain_status st, const char* what) {
  if (st == CLTRAIN_OK) return;
  fprintf(stderr, "train_mlp: %s: %s\n", what, cltrain_last_error(s));
  cltrain_session_destroy(s);
  exit(1);
}

int main(int argc, char** argv) {
  const char *model = NULL, *dir = "/usr/share/datasets/fashion-mnist", *backends = "opencl", *export_path = NULL;
  int epochs = 5, batch = 32;
  size_t limit = 0;
  for (int i = 1; i < argc; ++i) {
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--data") && value)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--epochs") && value)
      epochs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && value)
      batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--limit") && value)
      limit = (size_t)atol(argv[++i]);
    else if (!strcmp(argv[i], "--backends") && value)
      backends = argv[++i];
    else if (!strcmp(argv[i], "--export") && value)
      export_path = argv[++i];
    else if (argv[i][0] != '-' && !model)
      model = argv[i];
    else {
      fprintf(stderr,
              "usage: train_mlp MODEL [--data DIR] [--epochs N] [--batch N] [--limit N] [--backends LIST] "
              "[--export FILE]\n");
      return 2;
    }
  }
  if (!model || epochs < 0 || batch < 1) {
    fprintf(stderr, "train_mlp: give a model, epochs >= 0 and a batch >= 1\n");
    return 2;
  }
  dataset train, test;
  if (load(dir, "train", limit, &train) || load(dir, "t10k", 0, &test)) return 1;

  cltrain_session* s = NULL;
  char err[512];
  if (cltrain_session_create(model, &s, err, sizeof err) != CLTRAIN_OK) {
    fprintf(stderr, "train_mlp: %s\n", err);
    return 1;
  }
  cltrain_settings cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.struct_size = sizeof cfg;
  check(s, cltrain_get_settings(s, &cfg), "settings");
  cfg.batch_size = batch;
  cfg.optimizer = 2; /* Adam */
  cfg.learning_rate = 0.001f;
  cfg.loss = 2; /* categorical cross-entropy */
  cfg.loss_reduction = 1;
  cfg.backends = backends;
  check(s, cltrain_set_settings(s, &cfg), "settings");
  check(s, cltrain_prepare(s), "prepare");
  for (int i = 0; cltrain_warning(s, i); ++i) fprintf(stderr, "train_mlp: warning: %s\n", cltrain_warning(s, i));
  cltrain_backend_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  check(s, cltrain_get_backend(s, 0, &info), "backend");
  printf("training on %s (%s), %llu bytes of planned memory\n", info.name, info.device,
         (unsigned long long)info.pool_bytes);

  const size_t in = 784, out = 10, b = (size_t)batch, steps = train.samples / b;
  size_t* order = malloc(train.samples * sizeof *order);
  float *x = malloc(b * in * sizeof(float)), *y = malloc(b * out * sizeof(float)),
        *pred = malloc(b * out * sizeof(float));
  if (!order || !x || !y || !pred) return 1;
  for (size_t i = 0; i < train.samples; ++i) order[i] = i;
  srand(1);
  for (int e = 1; e <= epochs; ++e) {
    for (size_t i = train.samples - 1; i > 0; --i) { /* shuffle */
      const size_t j = (size_t)rand() % (i + 1), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    double sum = 0;
    for (size_t step = 0; step < steps; ++step) {
      for (size_t k = 0; k < b; ++k) {
        memcpy(x + k * in, train.x + order[step * b + k] * in, in * sizeof(float));
        memcpy(y + k * out, train.y + order[step * b + k] * out, out * sizeof(float));
      }
      float loss;
      check(s, cltrain_set_input(s, x, b * in), "input");
      check(s, cltrain_set_expected(s, y, b * out), "expected");
      check(s, cltrain_train_step(s, &loss), "train step");
      sum += loss;
    }
    printf("epoch %d/%d - loss %.4f\n", e, epochs, steps ? sum / (double)steps : 0.0);
    fflush(stdout);
  }

  size_t correct = 0;
  for (size_t first = 0; first < test.samples; first += b) {
    const size_t n = test.samples - first < b ? test.samples - first : b;
    for (size_t k = 0; k < b; ++k) /* the last batch padded with its last sample */
      memcpy(x + k * in, test.x + (first + (k < n ? k : n - 1)) * in, in * sizeof(float));
    check(s, cltrain_predict(s, x, b * in, pred, b * out), "predict");
    for (size_t k = 0; k < n; ++k)
      correct += argmax(pred + k * out, (int)out) == argmax(test.y + (first + k) * out, (int)out);
  }
  printf("test accuracy: %.4f\n", (double)correct / (double)test.samples);
  if (export_path) {
    check(s, cltrain_export_circle(s, export_path), "export");
    printf("wrote %s\n", export_path);
  }
  cltrain_session_destroy(s);
  free(order);
  free(x);
  free(y);
  free(pred);
  free(train.x);
  free(train.y);
  free(test.x);
  free(test.y);
  return 0;
}
