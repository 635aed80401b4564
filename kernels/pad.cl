// PAD with zeros (PADV2: the value whose bits PAD_VALUE_BITS gives): forward and backward (the
// crop) share one program.
//
// Definitions: y as six dims Y0..Y5 (outermost first, padded at the front with size-1 dims; an
// unpadded dim is merged into the padded dim outside it), X0..X5 the sizes of x in the same
// view, XS0..XS5 and YS0..YS5 the strides of x and y. The padding before x along each dim,
// PB0..PB5, is the argument pb, not a definition: the parts of one SPLIT or UNPACK (the same box at
// other places) then share one program.
// No arithmetic but pad_accumulate's one addition per element: the directions are exact copies.
//
#define PB0 (pb.s0)
#define PB1 (pb.s1)
#define PB2 (pb.s2)
#define PB3 (pb.s3)
#define PB4 (pb.s4)
#define PB5 (pb.s5)

// 2-D launch: dimension 0 is the innermost dim (dim 5; padded to whole work-groups, so the
// kernels check it), dimension 1 the rows, the other five dims together. Neighbouring work-items
// then touch neighbouring addresses and only the row index is decomposed.

// y = x where inside, the value in the padding; one work-item per element of y.
__kernel void pad_forward(__global float* pool, uint x_off, uint y_off, const uint8 pb) {
  const uint c5 = get_global_id(0);
  if (c5 >= Y5) return;
  uint r = get_global_id(1);
  const uint c5x = c5 - PB5;  // (uint)(c - PB) < X: c >= PB and c < PB + X in one compare
  bool inside = c5x < X5;
  uint xi = c5x, yi = c5;
#define PAD_COORD(k)                     \
  {                                      \
    const uint c = r % Y##k;             \
    r /= Y##k;                           \
    inside = inside && c - PB##k < X##k; \
    xi += (c - PB##k) * XS##k;           \
    yi += c * YS##k;                     \
  }
  PAD_COORD(4);
  PAD_COORD(3);
  PAD_COORD(2);
  PAD_COORD(1);
  PAD_COORD(0);
#undef PAD_COORD
  // The load is unconditional (from element 0 in the padding), then a select: no branch.
  const float v = pool[x_off + (inside ? xi : 0u)];
  pool[y_off + yi] = inside ? v : as_float((uint)PAD_VALUE_BITS);
}

// The indices in x (the box) and in y of box element (c5, row r), for the two kernels below.
void box_indices(uint c5, uint r, const uint8 pb, uint* xi_out, uint* yi_out) {
  uint xi = c5, yi = c5 + PB5;
#define PAD_COORD(k)           \
  {                            \
    const uint c = r % X##k;   \
    r /= X##k;                 \
    xi += c * XS##k;           \
    yi += (c + PB##k) * YS##k; \
  }
  PAD_COORD(4);
  PAD_COORD(3);
  PAD_COORD(2);
  PAD_COORD(1);
  PAD_COORD(0);
#undef PAD_COORD
  *xi_out = xi;
  *yi_out = yi;
}

// dx = the crop of dy; one work-item per element of dx.
__kernel void pad_backward(__global float* pool, uint dy_off, uint dx_off, const uint8 pb) {
  const uint c5 = get_global_id(0);
  if (c5 >= X5) return;
  uint xi, yi;
  box_indices(c5, get_global_id(1), pb, &xi, &yi);
  pool[dx_off + xi] = pool[dy_off + yi];
}

// acc's box += a (ACCUMULATE_BOX: X is a, Y is acc); one work-item per element of a.
__kernel void pad_accumulate(__global float* pool, uint a_off, uint acc_off, const uint8 pb) {
  const uint c5 = get_global_id(0);
  if (c5 >= X5) return;
  uint xi, yi;
  box_indices(c5, get_global_id(1), pb, &xi, &yi);
  pool[acc_off + yi] = pool[acc_off + yi] + pool[a_off + xi];
}
