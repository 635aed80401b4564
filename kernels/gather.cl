// GATHER (cltrain_ops.h): the table viewed as [ROWS, WIDTH], the ids as N int32 values (stored in
// the float pool, four bytes each).
//
// Definitions: ROWS, WIDTH, N. gather_forward is a 2-D launch, dimension 0 the WIDTH columns
// (padded to whole work-groups, so the kernel checks it), dimension 1 the rows of y;
// gather_backward a 1-D launch over the table's rows.

// The table row an id reads (negative ids count from the end), or -1 outside the table.
inline long gather_row(int k) {
  const long r = k < 0 ? (long)k + ROWS : (long)k;
  return r >= 0 && r < ROWS ? r : -1;
}

// y[i, j] = table[row(ids[i]), j], NaN (0x7fc00000) for an id outside the table.
__kernel void gather_forward(__global float* pool, uint table_off, uint ids_off, uint y_off) {
  const uint j = get_global_id(0);
  if (j >= WIDTH) return;
  const uint i = get_global_id(1);
  const long r = gather_row(((__global const int*)pool)[ids_off + i]);
  pool[y_off + (ulong)i * WIDTH + j] = r < 0 ? as_float(0x7fc00000u) : pool[table_off + (ulong)r * WIDTH + j];
}

// dtable[r, j] = sum over i in increasing order of dy[i, j] where row(ids[i]) = r; with SQUARES
// defined also dsq[r, j], the same sum of dy[i, j] * dy[i, j]. One work-item per table row r
// (a 1-D launch): it reads the ids once and adds each matching dy row into its own row of
// dtable (written as zeros first), so every element's chain is the same sum in the same order.
__kernel void gather_backward(__global float* pool, uint dy_off, uint ids_off, uint dt_off, uint sq_off) {
  const uint r = get_global_id(0);
  if (r >= ROWS) return;
  __global const int* ids = (__global const int*)pool + ids_off;
  __global float* dt = pool + dt_off + (ulong)r * WIDTH;
#ifdef SQUARES
  __global float* dsq = pool + sq_off + (ulong)r * WIDTH;
#endif
  for (uint j = 0; j < WIDTH; ++j) {
    dt[j] = 0.0f;
#ifdef SQUARES
    dsq[j] = 0.0f;
#endif
  }
  for (uint i = 0; i < N; ++i) {
    if (gather_row(ids[i]) != (long)r) continue;
    __global const float* g = pool + dy_off + (ulong)i * WIDTH;
    for (uint j = 0; j < WIDTH; ++j) {
      dt[j] = dt[j] + g[j];
#ifdef SQUARES
      const float gg = g[j] * g[j];
      dsq[j] = dsq[j] + gg;
#endif
    }
  }
}
