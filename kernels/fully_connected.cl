// FullyConnected: y = act(x W^T + b), W is [M, K], x viewed as [N, K], y as [N, M].
// The matrix products run in CLBlast; these kernels do the rest.
// Definitions: N, M; HAS_BIAS, ACT_RELU (0 or 1).

// Forward, in place on the GEMM result: y = act(y + b).
__kernel void fc_bias_act(__global float* pool, uint y_off, uint b_off) {
  const uint i = get_global_id(0);
  if (i >= N * M) return;
  float v = pool[y_off + i];
#if HAS_BIAS
  v += pool[b_off + i % M];
#endif
#if ACT_RELU
  v = v < 0.0f ? 0.0f : v;  // NaN passes through
#endif
  pool[y_off + i] = v;
}

// Backward, in place on dy: dz = dy * act'(y). For ReLU act'(y) is 1 where y > 0.
__kernel void fc_act_grad(__global float* pool, uint y_off, uint dy_off) {
  const uint i = get_global_id(0);
  if (i >= N * M) return;
  if (!(pool[y_off + i] > 0.0f)) pool[dy_off + i] = 0.0f;
}

// Backward: db[m] = sum over n of dz[n, m]. One work-item per column; neighbours read
// neighbouring addresses.
__kernel void fc_bias_grad(__global float* pool, uint dz_off, uint db_off) {
  const uint m = get_global_id(0);
  if (m >= M) return;
  float s = 0.0f;
  for (uint n = 0; n < N; ++n) s += pool[dz_off + n * M + m];
  pool[db_off + m] = s;
}
