// CONCATENATION of up to 8 inputs (CLTRAIN_MAX_STEP_IO) along one axis; forward and backward share one program.
//
// Definitions: the tensors viewed as [OUTER, width]: y rows are ROW wide, input k's rows are Wk
// wide and start at column Ck of y's row (k = 0 .. NIN-1; Ck = W0 + ... + W(k-1)); COUNT, the
// elements of y. No arithmetic: both directions are exact copies, one work-item per element of y.
//
// The part of a column is picked by a chain of compares against constants (no private array
// indexed at run time, which GPUs may place in slow memory).

// For column col of a row of y: *k the part, *off its tensor's offset (of x0..x7), *w its row
// width, *start its first column in y.
#define CONCAT_PICK(j)          \
  if (j < NIN && col >= C##j) { \
    *k = j;                     \
    *off = x##j;                \
    *w = W##j;                  \
    *start = C##j;              \
  }
void concat_part(const uint col, const uint x0, const uint x1, const uint x2, const uint x3, const uint x4,
                 const uint x5, const uint x6, const uint x7, uint* k, uint* off, uint* w, uint* start) {
  *k = 0, *off = x0, *w = W0, *start = C0;
  CONCAT_PICK(1);
  CONCAT_PICK(2);
  CONCAT_PICK(3);
  CONCAT_PICK(4);
  CONCAT_PICK(5);
  CONCAT_PICK(6);
  CONCAT_PICK(7);
}
#undef CONCAT_PICK

// y = the inputs side by side.
__kernel void concat_forward(__global float* pool, uint y_off, uint x0, uint x1, uint x2, uint x3, uint x4, uint x5,
                             uint x6, uint x7) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const uint row = i / ROW, col = i % ROW;
  uint k, off, w, start;
  concat_part(col, x0, x1, x2, x3, x4, x5, x6, x7, &k, &off, &w, &start);
  pool[y_off + i] = pool[off + row * w + (col - start)];
}

// dx_k = its slice of dy, for the parts whose bit is set in `present`.
__kernel void concat_backward(__global float* pool, uint dy_off, uint present, uint x0, uint x1, uint x2, uint x3,
                              uint x4, uint x5, uint x6, uint x7) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const uint row = i / ROW, col = i % ROW;
  uint k, off, w, start;
  concat_part(col, x0, x1, x2, x3, x4, x5, x6, x7, &k, &off, &w, &start);
  if (present >> k & 1u) pool[off + row * w + (col - start)] = pool[dy_off + i];
}
