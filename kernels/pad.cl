// PAD with zeros: forward and backward (the crop) share one program.
//
// Definitions: y as six dims Y0..Y5 (outermost first, padded at the front with size-1 dims; an
// unpadded dim is merged into the padded dim outside it), X0..X5 the sizes of x in the same
// view, PB0..PB5 the padding before x along each, XS0..XS5 and YS0..YS5 the strides of x and y;
// XCOUNT, YCOUNT (elements). No arithmetic: both directions are exact copies.

// y = x where inside, 0 in the padding; one work-item per element of y.
__kernel void pad_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= YCOUNT) return;
  uint r = i, xi = 0;
  bool inside = true;
  // (uint)(c - PB) < X: c >= PB and c < PB + X in one unsigned compare.
#define PAD_COORD(k)                  \
  {                                   \
    const uint c = r % Y##k - PB##k;  \
    r /= Y##k;                        \
    inside = inside && c < X##k;      \
    xi += c * XS##k;                  \
  }
  PAD_COORD(5) PAD_COORD(4) PAD_COORD(3) PAD_COORD(2) PAD_COORD(1) PAD_COORD(0)
#undef PAD_COORD
  pool[y_off + i] = inside ? pool[x_off + xi] : 0.0f;
}

// dx = the crop of dy; one work-item per element of dx.
__kernel void pad_backward(__global float* pool, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= XCOUNT) return;
  uint r = i, yi = 0;
#define PAD_COORD(k)                  \
  {                                   \
    const uint c = r % X##k;          \
    r /= X##k;                        \
    yi += (c + PB##k) * YS##k;        \
  }
  PAD_COORD(5) PAD_COORD(4) PAD_COORD(3) PAD_COORD(2) PAD_COORD(1) PAD_COORD(0)
#undef PAD_COORD
  pool[dx_off + i] = pool[dy_off + yi];
}
