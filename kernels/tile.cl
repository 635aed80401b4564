// TILE: y's dim k is Mk times x's (the multiples), y[i] = x[i_k mod Xk per dim]; the backward sums,
// per element of dx, the dy elements that copied it.
//
// Definitions: x as six dims X0..X5 (outermost first, padded at the front with size-1 dims),
// M0..M5 the multiples, XS0..XS5 and YS0..YS5 the strides of x and y (y's dims Xk * Mk),
// XCOUNT and YCOUNT the elements. Float32 storage.
//
// Numerics (cltrain_ops.h): forward copies (exact); backward s = 0; s = s + dy over the copies in
// increasing flat index of y (the tile index outermost first).

// y from x: one work-item per element of y.
__kernel void tile_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= YCOUNT) return;
  uint r = i, xi = 0;
#define TILE_COORD(k)                 \
  {                                   \
    const uint c = r % (X##k * M##k); \
    r /= X##k * M##k;                 \
    xi += (c % X##k) * XS##k;         \
  }
  TILE_COORD(5);
  TILE_COORD(4);
  TILE_COORD(3);
  TILE_COORD(2);
  TILE_COORD(1);
  TILE_COORD(0);
#undef TILE_COORD
  pool[y_off + i] = pool[x_off + xi];
}

// dx from dy: one work-item per element of dx.
__kernel void tile_backward(__global float* pool, uint dy_off, uint dx_off) {
  const uint j = get_global_id(0);
  if (j >= XCOUNT) return;
  uint r = j, base = 0;
#define TILE_BASE(k)         \
  {                          \
    const uint c = r % X##k; \
    r /= X##k;               \
    base += c * YS##k;       \
  }
  TILE_BASE(5);
  TILE_BASE(4);
  TILE_BASE(3);
  TILE_BASE(2);
  TILE_BASE(1);
  TILE_BASE(0);
#undef TILE_BASE
  float s = 0.0f;
  for (uint t0 = 0; t0 < M0; ++t0)
    for (uint t1 = 0; t1 < M1; ++t1)
      for (uint t2 = 0; t2 < M2; ++t2)
        for (uint t3 = 0; t3 < M3; ++t3)
          for (uint t4 = 0; t4 < M4; ++t4)
            for (uint t5 = 0; t5 < M5; ++t5)
              s = s + pool[dy_off + base + t0 * X0 * YS0 + t1 * X1 * YS1 + t2 * X2 * YS2 + t3 * X3 * YS3 +
                           t4 * X4 * YS4 + t5 * X5 * YS5];
  pool[dx_off + j] = s;
}
