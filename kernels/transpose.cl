// TRANSPOSE: forward (y from x) and backward (dx from dy through the inverse permutation) are the
// same gather, one work-item per element of the written tensor.
//
// Definitions: the written tensor as six dims O0..O5 (outermost first, padded at the front with
// size-1 dims; size-1 dims dropped and neighbours that stay neighbours in the read tensor
// merged), S0..S5 the stride in the read tensor of each of them, COUNT the elements. No
// arithmetic: exact copies.
//
// 2-D launch: dimension 0 is the innermost written dim (dim 5; padded to whole work-groups, so
// the kernel checks it), dimension 1 the rows, the other five dims together. Writes of
// neighbouring work-items are to neighbouring addresses.

__kernel void transpose_copy(__global float* pool, uint src_off, uint dst_off) {
  const uint c5 = get_global_id(0);
  if (c5 >= O5) return;
  const uint row = get_global_id(1);
  uint r = row;
  uint si = c5 * S5;
#define TRANSPOSE_COORD(k)   \
  {                          \
    const uint c = r % O##k; \
    r /= O##k;               \
    si += c * S##k;          \
  }
  TRANSPOSE_COORD(4);
  TRANSPOSE_COORD(3);
  TRANSPOSE_COORD(2);
  TRANSPOSE_COORD(1);
  TRANSPOSE_COORD(0);
#undef TRANSPOSE_COORD
  pool[dst_off + row * O5 + c5] = pool[src_off + si];
}
