// Optimizer updates of one weight tensor of COUNT elements.
// Adam definitions: BETA1, BETA2, EPSILON.

// W -= lr * g
__kernel void sgd_update(__global float* pool, uint g_off, uint w_off, float lr) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[w_off + i] -= lr * pool[g_off + i];
}

#ifdef BETA1
// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; W -= step m / (sqrt(v) + eps), where the host
// computes step = lr sqrt(1 - b2^t) / (1 - b1^t).
__kernel void adam_update(__global float* pool, uint g_off, uint w_off, uint m_off, uint v_off, float step) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float g = pool[g_off + i];
  const float m = BETA1 * pool[m_off + i] + (1.0f - BETA1) * g;
  const float v = BETA2 * pool[v_off + i] + (1.0f - BETA2) * g * g;
  pool[m_off + i] = m;
  pool[v_off + i] = v;
  pool[w_off + i] -= step * m / (sqrt(v) + EPSILON);
}
#endif
