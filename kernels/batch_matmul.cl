// BATCH_MATMUL (cltrain_ops.h): per leading index b of BATCH, x [M, K], y [K, N], z [M, N].
// Definitions: M, K, N. Each kernel is a 2-D launch over what it writes, dimension 0 its columns
// (padded to whole work-groups, so the kernels check them), dimension 1 its rows over every b.
// Dot products: acc = fma(a, b, acc) in increasing index order, as the CPU backend.

// z[b, m, n] = dot over k of x[b, m, k] * y[b, k, n]; row = b * M + m.
__kernel void bmm_forward(__global float* pool, uint x_off, uint y_off, uint z_off) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const ulong row = get_global_id(1), b = row / M;
  __global const float* x = pool + x_off + row * K;
  __global const float* y = pool + y_off + b * K * N + n;
  float acc = 0.0f;
  for (uint k = 0; k < K; ++k) acc = fma(x[k], y[(ulong)k * N], acc);
  pool[z_off + row * N + n] = acc;
}

// dx[b, m, k] = dot over n of dz[b, m, n] * y[b, k, n]; row = b * M + m.
__kernel void bmm_dx(__global float* pool, uint dz_off, uint y_off, uint dx_off) {
  const uint k = get_global_id(0);
  if (k >= K) return;
  const ulong row = get_global_id(1), b = row / M;
  __global const float* dz = pool + dz_off + row * N;
  __global const float* y = pool + y_off + (b * K + k) * N;
  float acc = 0.0f;
  for (uint n = 0; n < N; ++n) acc = fma(dz[n], y[n], acc);
  pool[dx_off + row * K + k] = acc;
}

// dy[b, k, n] = dot over m of x[b, m, k] * dz[b, m, n]; row = b * K + k.
__kernel void bmm_dy(__global float* pool, uint x_off, uint dz_off, uint dy_off) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const ulong row = get_global_id(1), b = row / K, k = row % K;
  __global const float* x = pool + x_off + b * M * K + k;
  __global const float* dz = pool + dz_off + b * M * N + n;
  float acc = 0.0f;
  for (uint m = 0; m < M; ++m) acc = fma(x[(ulong)m * K], dz[(ulong)m * N], acc);
  pool[dy_off + row * N + n] = acc;
}
