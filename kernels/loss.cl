// Losses over pred and expected of COUNT elements: N samples (dims[0] of pred) of K = COUNT / N.
// Definitions: COUNT, N, K; LOSS_MSE or LOSS_CCE (1); DIV_N (1: SUM_OVER_BATCH_SIZE divides by N).
// The orders of every rounding are those of cltrain_backend.h (Numerics); the forward is one
// work-item summing in increasing index.

#define CCE_LOW 1e-7f
#define CCE_HIGH (1.0f - 1e-7f)

// pc = min(max(p, 1e-7), 1 - 1e-7), as std::min/std::max: NaN stays NaN.
static inline float cce_clamp(float p) { return clt_min(clt_max(p, CCE_LOW), CCE_HIGH); }

// One work-item: loss[0].
__kernel void loss_forward(__global float* pool, uint p_off, uint e_off, uint loss_off) {
  if (get_global_id(0) != 0) return;
  __global const float* p = pool + p_off;
  __global const float* e = pool + e_off;
  float l = 0.0f;
#if LOSS_MSE
  // q = sum of d * d per sample (d = p - e); l = sum over samples of q / K.
  for (uint n = 0; n < N; ++n) {
    float q = 0.0f;
    for (uint k = 0; k < K; ++k) {
      const float d = p[n * K + k] - e[n * K + k];
      const float dd = d * d;
      q = q + dd;
    }
    l = l + q / (float)K;
  }
#else
  // l = sum over all elements of (-e * clt_log(pc)).
  for (uint i = 0; i < COUNT; ++i) {
    const float t = -e[i] * clt_log(cce_clamp(p[i]));
    l = l + t;
  }
#endif
#if DIV_N
  l = l / (float)N;
#endif
  pool[loss_off] = l;
}

// MSE: dpred = (2 * d) / K, then / N. CCE: dpred = (-e / pc), then / N; 0 where p != pc.
__kernel void loss_backward(__global float* pool, uint p_off, uint e_off, uint dp_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float p = pool[p_off + i];
  const float e = pool[e_off + i];
#if LOSS_MSE
  float g = (2.0f * (p - e)) / (float)K;
#else
  const float pc = cce_clamp(p);
  float g = -e / pc;
#endif
#if DIV_N
  g = g / (float)N;
#endif
#if LOSS_CCE
  if (p != pc) g = 0.0f;
#endif
  pool[dp_off + i] = g;
}

// LOSS_CCE_LOGITS over ROWS rows of C logits (pred's last dimension). Per row: m = the largest z
// (the first, then z > m ? z : m), s = sum of clt_exp(z_i - m).
static inline float2 row_softmax(__global const float* z) {
  float m = z[0];
  for (uint i = 1; i < C; ++i) m = z[i] > m ? z[i] : m;
  float s = 0.0f;
  for (uint i = 0; i < C; ++i) s = s + clt_exp(z[i] - m);
  return (float2)(m, s);
}

// One work-item: loss[0] = sum over rows and their elements of (-e_i) * ((z_i - m) - clt_log(s)).
__kernel void loss_logits_forward(__global float* pool, uint z_off, uint e_off, uint loss_off) {
  if (get_global_id(0) != 0) return;
  float l = 0.0f;
  for (uint r = 0; r < ROWS; ++r) {
    __global const float* z = pool + z_off + r * C;
    __global const float* e = pool + e_off + r * C;
    const float2 ms = row_softmax(z);
    const float g = clt_log(ms.y);
    for (uint i = 0; i < C; ++i) {
      const float t = -e[i] * ((z[i] - ms.x) - g);
      l = l + t;
    }
  }
#if DIV_N
  l = l / (float)N;
#endif
  pool[loss_off] = l;
}

// One work-item per row: dz_i = (clt_exp(z_i - m) / s) * se - e_i (se the row's sum of e), / N.
__kernel void loss_logits_backward(__global float* pool, uint z_off, uint e_off, uint dz_off) {
  const uint r = get_global_id(0);
  if (r >= ROWS) return;
  __global const float* z = pool + z_off + r * C;
  __global const float* e = pool + e_off + r * C;
  const float2 ms = row_softmax(z);
  float se = 0.0f;
  for (uint i = 0; i < C; ++i) se = se + e[i];
  for (uint i = 0; i < C; ++i) {
    const float p = clt_exp(z[i] - ms.x) / ms.y;
    const float pe = p * se;
    float g = pe - e[i];
#if DIV_N
    g = g / (float)N;
#endif
    pool[dz_off + r * C + i] = g;
  }
}
