// LEAKY_RELU, ELU, ABS, SQUARE, EXP, SQRT, LOG (cltrain_ops.h): numerics.h's clt_pointwise and
// clt_pointwise_grad, one work-item per element. Definitions: COUNT (elements), FN (a CLT_PW_*
// value), ALPHA_BITS (LEAKY_RELU's slope, its float's bits).

__kernel void pointwise_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[y_off + i] = clt_pointwise(FN, pool[x_off + i], as_float((uint)ALPHA_BITS));
}

// dx may be dy's bytes: each element reads its own first.
__kernel void pointwise_backward(__global float* pool, uint x_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float x = pool[x_off + i], dy = pool[dy_off + i];
  pool[dx_off + i] = clt_pointwise_grad(FN, x, dy, as_float((uint)ALPHA_BITS));
}
