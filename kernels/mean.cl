// MEAN (and SUM: REDUCE_SUM 1, no divide) over the axes of params.axes_mask: forward and backward
// share one program.
//
// Definitions (backend/opencl/ops/dims.h): x as six merged dims X0..X5, outermost first; XS0..XS5
// its strides; YS0..YS5 the strides of y over the kept dims (0 along a reduced dim);
// XCOUNT, YCOUNT (elements); RCOUNT, the number of elements averaged, as a float.
//
// Numerics (cltrain_backend.h): y = (s = 0; s = s + x in increasing flat index of x) / count;
// dx = dy / count. One work-item per element of y (forward) or of dx (backward). Storage
// (common.cl): X_H, Y_H forward; DY_H, DX_H backward.

#ifndef REDUCE_SUM
#define REDUCE_SUM 0
#endif
// MEAN divides by the count; SUM does not.
#define MEAN_SCALE(v) (REDUCE_SUM ? (v) : (v) / RCOUNT)

// A reduced dim is one along which y does not move.
#define MEAN_RED(k) (YS##k != 0 ? 1u : (uint)(X##k))

__kernel void mean_forward(__global float* pool, uint x_off, uint y_off) {
  const uint o = get_global_id(0);
  if (o >= YCOUNT) return;
  // The coordinates of o over the kept dims give the first element of x it averages.
  uint r = o, xi = 0;
#define MEAN_KEPT(k)         \
  if (YS##k != 0) {          \
    const uint c = r % X##k; \
    r /= X##k;               \
    xi += c * XS##k;         \
  }
  MEAN_KEPT(5);
  MEAN_KEPT(4);
  MEAN_KEPT(3);
  MEAN_KEPT(2);
  MEAN_KEPT(1);
  MEAN_KEPT(0);
#undef MEAN_KEPT
  __global const CLT_T(X_H)* x = CLT_PTR(X_H) + x_off + xi;
  float s = 0.0f;
  // Outermost reduced dim first: increasing flat index of x.
  for (uint r0 = 0; r0 < MEAN_RED(0); ++r0)
    for (uint r1 = 0; r1 < MEAN_RED(1); ++r1)
      for (uint r2 = 0; r2 < MEAN_RED(2); ++r2)
        for (uint r3 = 0; r3 < MEAN_RED(3); ++r3)
          for (uint r4 = 0; r4 < MEAN_RED(4); ++r4)
            for (uint r5 = 0; r5 < MEAN_RED(5); ++r5)
              s = s + CLT_LD(X_H, x, r0 * XS0 + r1 * XS1 + r2 * XS2 + r3 * XS3 + r4 * XS4 + r5 * XS5);
  CLT_ST(Y_H, CLT_PTR(Y_H) + y_off, o, MEAN_SCALE(s));
}

__kernel void mean_backward(__global float* pool, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= XCOUNT) return;
  uint r = i, o = 0;
#define MEAN_COORD(k)        \
  {                          \
    const uint c = r % X##k; \
    r /= X##k;               \
    o += c * YS##k;          \
  }
  MEAN_COORD(5);
  MEAN_COORD(4);
  MEAN_COORD(3);
  MEAN_COORD(2);
  MEAN_COORD(1);
  MEAN_COORD(0);
#undef MEAN_COORD
  CLT_ST(DX_H, CLT_PTR(DX_H) + dx_off, i, MEAN_SCALE(CLT_LD(DY_H, CLT_PTR(DY_H) + dy_off, o)));
}

// REDUCE_MAX (EXTREME_MIN 0) and REDUCE_MIN (1), float32 storage: the same views as MEAN's.
// y = the group's first element in increasing flat index of x, then y = x > y ? x : y (MIN: <);
// dx = x == y ? (1 / n) * dy : 0, n the group's elements equal to y (cltrain_ops.h).
#ifndef EXTREME_MIN
#define EXTREME_MIN 0
#endif
#define EXTREME_BETTER(a, b) (EXTREME_MIN ? (a) < (b) : (a) > (b))
#define EXTREME_GROUP(BODY)                                                                       \
  for (uint r0 = 0; r0 < MEAN_RED(0); ++r0)                                                       \
    for (uint r1 = 0; r1 < MEAN_RED(1); ++r1)                                                     \
      for (uint r2 = 0; r2 < MEAN_RED(2); ++r2)                                                   \
        for (uint r3 = 0; r3 < MEAN_RED(3); ++r3)                                                 \
          for (uint r4 = 0; r4 < MEAN_RED(4); ++r4)                                               \
            for (uint r5 = 0; r5 < MEAN_RED(5); ++r5) {                                           \
              const float v = x[r0 * XS0 + r1 * XS1 + r2 * XS2 + r3 * XS3 + r4 * XS4 + r5 * XS5]; \
              BODY;                                                                               \
            }

__kernel void extreme_forward(__global float* pool, uint x_off, uint y_off) {
  const uint o = get_global_id(0);
  if (o >= YCOUNT) return;
  uint r = o, xi = 0;
#define EXTREME_KEPT(k)      \
  if (YS##k != 0) {          \
    const uint c = r % X##k; \
    r /= X##k;               \
    xi += c * XS##k;         \
  }
  EXTREME_KEPT(5);
  EXTREME_KEPT(4);
  EXTREME_KEPT(3);
  EXTREME_KEPT(2);
  EXTREME_KEPT(1);
  EXTREME_KEPT(0);
#undef EXTREME_KEPT
  __global const float* x = pool + x_off + xi;
  float m = x[0];
  EXTREME_GROUP(m = EXTREME_BETTER(v, m) ? v : m)
  pool[y_off + o] = m;
}

// One work-item per element of dx.
__kernel void extreme_backward(__global float* pool, uint x_off, uint y_off, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= XCOUNT) return;
  uint r = i, o = 0, base = 0;
#define EXTREME_COORD(k)               \
  {                                    \
    const uint c = r % X##k;           \
    r /= X##k;                         \
    o += c * YS##k;                    \
    if (YS##k != 0) base += c * XS##k; \
  }
  EXTREME_COORD(5);
  EXTREME_COORD(4);
  EXTREME_COORD(3);
  EXTREME_COORD(2);
  EXTREME_COORD(1);
  EXTREME_COORD(0);
#undef EXTREME_COORD
  const float y = pool[y_off + o];
  __global const float* x = pool + x_off + base;
  uint n = 0;
  EXTREME_GROUP(n += v == y ? 1u : 0u)
  const float xv = pool[x_off + i];
  pool[dx_off + i] = xv == y ? (1.0f / (float)n) * pool[dy_off + o] : 0.0f;
}
