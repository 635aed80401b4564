// HARD_SWISH (cltrain_ops.h): y = x * relu6(x + 3) / 6. Definitions: COUNT (elements).

// t = x + 3; r = t < 0 ? 0 : t; r = r > 6 ? 6 : r; y = (x * r) / 6.
__kernel void hard_swish_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float x = pool[x_off + i];
  const float t = x + 3.0f;
  const float r = clt_min(clt_max(t, 0.0f), 6.0f);
  pool[y_off + i] = (x * r) / 6.0f;
}

// dx = -3 < x < 3 ? dy * ((2 x + 3) / 6) : (x >= 3 ? dy : 0); dx may be dy's bytes.
__kernel void hard_swish_backward(__global float* pool, uint x_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float x = pool[x_off + i], dy = pool[dy_off + i];  // both loads unconditional: no branch
  const float inner = dy * ((2.0f * x + 3.0f) / 6.0f);
  pool[dx_off + i] = (x > -3.0f && x < 3.0f) ? inner : (x >= 3.0f ? dy : 0.0f);
}
