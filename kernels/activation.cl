// Standalone activations. Definitions: COUNT (elements).

// y = max(x, 0); NaN passes through.
__kernel void relu_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float x = pool[x_off + i];
  pool[y_off + i] = x < 0.0f ? 0.0f : x;
}

// dx = dy where y > 0, else 0.
__kernel void relu_backward(__global float* pool, uint y_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[dx_off + i] = pool[y_off + i] > 0.0f ? pool[dy_off + i] : 0.0f;
}
