// BATCH_MATMUL (cltrain_ops.h): per leading index b of BATCH, x [M, K], y [K, N], z [M, N].
// Definitions: M, K, N, VEC (and WG, NT for bmm_dx). bmm_forward and bmm_dy are 2-D launches
// over what they write, dimension 0 its columns in vectors of VEC lanes (padded to whole
// work-groups, so the kernels check them), dimension 1 its rows over every b. VEC (1, 4, 8, 16)
// divides the columns: N for z and dy, K for dx. Dot products: acc = fma(a, b, acc) in
// increasing index order, as the CPU backend, one chain per lane (vector fma rounds lane by lane
// as the scalar one does).

// z[b, m, n] = dot over k of x[b, m, k] * y[b, k, n]; row = b * M + m.
__kernel void bmm_forward(__global float* pool, uint x_off, uint y_off, uint z_off) {
  const uint n = get_global_id(0) * VEC;
  if (n >= N) return;
  const ulong row = get_global_id(1), b = row / M;
  __global const float* x = pool + x_off + row * K;
  __global const float* y = pool + y_off + b * K * N + n;
  vfloat acc = 0.0f;
  for (uint k = 0; k < K; ++k) acc = fma((vfloat)(x[k]), VLOAD(y + (ulong)k * N), acc);
  VSTORE(acc, pool + z_off + row * N + n);
}

// dx[b, m, k] = dot over n of dz[b, m, n] * y[b, k, n]. One work-group per b (WG work-items, a
// 1-D launch of BATCH groups; defined WG and NT): y[b] goes through local memory transposed, NT
// columns of n at a time, so that each work-item's VEC lanes (neighbouring k) load as one vector.
// A work-item takes the (m, k block) pairs lid, lid + WG, ...; with N > NT each chain goes on from
// the value stored after the previous columns (a float stored and loaded back is the same float).
#ifdef WG
__kernel void bmm_dx(__global float* pool, uint dz_off, uint y_off, uint dx_off) {
  __local float yt[NT * K];
  const uint lid = get_local_id(0);
  const ulong b = get_group_id(0);
  __global const float* y = pool + y_off + b * K * N;
  for (uint n0 = 0; n0 < N; n0 += NT) {
    const uint nt = min((uint)NT, (uint)N - n0);
    if (n0 > 0) barrier(CLK_LOCAL_MEM_FENCE);  // the previous columns are read
    for (uint k = 0; k < K; ++k)
      for (uint n = lid; n < nt; n += WG) yt[n * K + k] = y[(ulong)k * N + n0 + n];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint p = lid; p < M * (K / VEC); p += WG) {
      const uint m = p / (K / VEC), k = p % (K / VEC) * VEC;
      __global const float* dz = pool + dz_off + (b * M + m) * N + n0;
      __global float* dx = pool + dx_off + (b * M + m) * K + k;
      vfloat acc = n0 == 0 ? (vfloat)(0.0f) : VLOAD(dx);
      for (uint n = 0; n < nt; ++n) acc = fma((vfloat)(dz[n]), VLOAD(yt + n * K + k), acc);
      VSTORE(acc, dx);
    }
  }
}
#endif

// dy[b, k, n] = dot over m of x[b, m, k] * dz[b, m, n]; row = b * K + k.
__kernel void bmm_dy(__global float* pool, uint x_off, uint dz_off, uint dy_off) {
  const uint n = get_global_id(0) * VEC;
  if (n >= N) return;
  const ulong row = get_global_id(1), b = row / K, k = row % K;
  __global const float* x = pool + x_off + b * M * K + k;
  __global const float* dz = pool + dz_off + b * M * N + n;
  vfloat acc = 0.0f;
  for (uint m = 0; m < M; ++m) acc = fma((vfloat)(x[(ulong)m * K]), VLOAD(dz + (ulong)m * N), acc);
  VSTORE(acc, pool + dy_off + row * N + n);
}
