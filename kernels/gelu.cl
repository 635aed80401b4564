// GELU (cltrain_ops.h): y = x * Phi(x). Definitions: COUNT (elements), APPROXIMATE (0: the exact
// erf form, 1: the tanh approximation).

static inline float gelu_t(const float x) {
#if APPROXIMATE
  return clt_tanh(0.7978846f * (x + 0.044715f * ((x * x) * x)));
#else
  return clt_erf(x * 0.70710678f);
#endif
}

__kernel void gelu_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float x = pool[x_off + i];
  pool[y_off + i] = (0.5f * x) * (1.0f + gelu_t(x));
}

// dx may be dy's bytes: each element reads its own first.
__kernel void gelu_backward(__global float* pool, uint x_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float x = pool[x_off + i], dy = pool[dy_off + i];
  const float t = gelu_t(x);
#if APPROXIMATE
  const float d = 0.5f * (1.0f + t) + (0.5f * x) * ((1.0f - t * t) * (0.7978846f * (1.0f + 0.134145f * (x * x))));
#else
  const float d = 0.5f * (1.0f + t) + x * (clt_exp((-0.5f * x) * x) * 0.39894228f);
#endif
  pool[dx_off + i] = dy * d;
}
