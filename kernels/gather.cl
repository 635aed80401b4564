// GATHER (cltrain_ops.h): the table viewed as [ROWS, WIDTH], the ids as N int32 values (stored in
// the float pool, four bytes each).
//
// Definitions: ROWS, WIDTH, N. Both kernels are 2-D launches, dimension 0 the WIDTH columns
// (padded to whole work-groups, so the kernels check it), dimension 1 the rows of what they write.

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
// defined also dsq[r, j], the same sum of dy[i, j] * dy[i, j].
__kernel void gather_backward(__global float* pool, uint dy_off, uint ids_off, uint dt_off, uint sq_off) {
  const uint j = get_global_id(0);
  if (j >= WIDTH) return;
  const uint r = get_global_id(1);
  __global const int* ids = (__global const int*)pool + ids_off;
  float s = 0.0f;
#ifdef SQUARES
  float q = 0.0f;
#endif
  for (uint i = 0; i < N; ++i)
    if (gather_row(ids[i]) == (long)r) {
      const float g = pool[dy_off + (ulong)i * WIDTH + j];
      s = s + g;
#ifdef SQUARES
      const float gg = g * g;
      q = q + gg;
#endif
    }
  pool[dt_off + (ulong)r * WIDTH + j] = s;
#ifdef SQUARES
  pool[sq_off + (ulong)r * WIDTH + j] = q;
#endif
}
