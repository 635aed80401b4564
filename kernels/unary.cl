// NEG and RSQRT (cltrain_ops.h), one work-item per element. Definitions: COUNT (elements).

// y = -x
__kernel void neg_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[y_off + i] = -pool[x_off + i];
}

// dx = -dy; dx may be dy's bytes.
__kernel void neg_backward(__global float* pool, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[dx_off + i] = -pool[dy_off + i];
}

// y = 1 / clt_sqrt(x)
__kernel void rsqrt_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[y_off + i] = 1.0f / clt_sqrt(pool[x_off + i]);
}

// dx = (-0.5 dy) ((y y) y); dx may be dy's bytes.
__kernel void rsqrt_backward(__global float* pool, uint y_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float y = pool[y_off + i], dy = pool[dy_off + i];
  pool[dx_off + i] = (-0.5f * dy) * ((y * y) * y);
}
