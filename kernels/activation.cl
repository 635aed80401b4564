// Standalone activations. Definitions: COUNT (elements).

// y = max(x, 0); NaN passes through, -0 stays -0.
__kernel void relu_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float x = pool[x_off + i];
  pool[y_off + i] = clt_max(x, 0.0f);  // x < 0 ? 0 : x, -0 kept
}

// dx = dy where y > 0, else 0.
__kernel void relu_backward(__global float* pool, uint y_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[dx_off + i] = pool[y_off + i] > 0.0f ? pool[dy_off + i] : 0.0f;
}

// RELU6, TANH, LOGISTIC (cltrain_backend.h, Numerics): forward formulas with clt_exp (clt_tanh in
// common.cl), derivatives through y: a select for RELU6, products for TANH and LOGISTIC.

// y = min(max(x, 0), 6); NaN passes through.
__kernel void relu6_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[y_off + i] = clt_min(clt_max(pool[x_off + i], 0.0f), 6.0f);
}

// dx = dy where 0 < y < 6, else 0.
__kernel void relu6_backward(__global float* pool, uint y_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float y = pool[y_off + i], dy = pool[dy_off + i];  // both loads unconditional: no branch
  pool[dx_off + i] = (y > 0.0f && y < 6.0f) ? dy : 0.0f;
}

// y = tanh(x): e = clt_exp(-2|x|), t = (1 - e) / (1 + e), y = x < 0 ? -t : t.
__kernel void tanh_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[y_off + i] = clt_tanh(pool[x_off + i]);
}

// dx = dy * (1 - y * y).
__kernel void tanh_backward(__global float* pool, uint y_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float y = pool[y_off + i];
  pool[dx_off + i] = pool[dy_off + i] * (1.0f - y * y);
}

// y = 1 / (1 + clt_exp(-x)).
__kernel void logistic_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[y_off + i] = 1.0f / (1.0f + clt_exp(-pool[x_off + i]));
}

// dx = dy * (y * (1 - y)).
__kernel void logistic_backward(__global float* pool, uint y_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float y = pool[y_off + i];
  pool[dx_off + i] = pool[dy_off + i] * (y * (1.0f - y));
}
