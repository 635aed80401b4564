// Optimizer updates of one weight tensor of count elements (an argument: weights of any size share
// a program), one work-item per weight, in the orders of cltrain_backend.h (Numerics). Adam
// definitions: BETA1, BETA2, EPSILON. A partial update (update_offset, update_count) comes as
// count = update_count with g_off and w_off already moved to the first updated element; m_off and
// v_off are those of m and v.

// W = W - lr * g
__kernel void sgd_update(__global float* pool, uint g_off, uint w_off, float lr, uint count) {
  const uint i = get_global_id(0);
  if (i >= count) return;
  const float u = lr * pool[g_off + i];
  pool[w_off + i] = pool[w_off + i] - u;
}

#ifdef BETA1
// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) (g g), with (1 - b1) and (1 - b2) rounded to float;
// W = W - (step m) / (sqrt(v) + eps), where the host computes
// step = (float)((double)lr sqrt(1 - b2^t) / (1 - b1^t)) in double. GSQ defined: v takes the
// step's gsq input (q_off) in place of g g.
__kernel void adam_update(__global float* pool, uint g_off, uint w_off, uint m_off, uint v_off, float step, uint q_off,
                          uint count) {
  const uint i = get_global_id(0);
  if (i >= count) return;
  const float one_b1 = 1.0f - BETA1;
  const float one_b2 = 1.0f - BETA2;
  const float g = pool[g_off + i];
  const float m = BETA1 * pool[m_off + i] + one_b1 * g;
#ifdef GSQ
  const float gg = pool[q_off + i];  // GATHER's sum of squared rows in place of g * g
#else
  const float gg = g * g;
#endif
  const float v = BETA2 * pool[v_off + i] + one_b2 * gg;
  pool[m_off + i] = m;
  pool[v_off + i] = v;
  const float num = step * m;
  const float den = sqrt(v) + EPSILON;
  pool[w_off + i] = pool[w_off + i] - num / den;
}
#endif
