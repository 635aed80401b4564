// CONCATENATION of up to 7 inputs along one axis; forward and backward share one program.
//
// Definitions: the tensors viewed as [OUTER, width]: y rows are ROW wide, input k's rows are Wk
// wide and start at column Ck of y's row (k = 0 .. NIN-1; Ck = W0 + ... + W(k-1)); COUNT, the
// elements of y. No arithmetic: both directions are exact copies, one work-item per element of y.

// Which input column col (of a row of y) belongs to; *at receives the column inside that input.
uint concat_input(const uint col, uint* at) {
  uint k = 0;
#define CONCAT_FROM(j) \
  if (j < NIN && col >= C##j) k = j;
  CONCAT_FROM(1) CONCAT_FROM(2) CONCAT_FROM(3) CONCAT_FROM(4) CONCAT_FROM(5) CONCAT_FROM(6)
#undef CONCAT_FROM
  const uint starts[7] = {C0, C1, C2, C3, C4, C5, C6};
  *at = col - starts[k];
  return k;
}

// y = the inputs side by side.
__kernel void concat_forward(__global float* pool, uint y_off, uint x0, uint x1, uint x2, uint x3, uint x4,
                             uint x5, uint x6) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const uint row = i / ROW;
  uint at;
  const uint k = concat_input(i % ROW, &at);
  const uint offs[7] = {x0, x1, x2, x3, x4, x5, x6};
  const uint widths[7] = {W0, W1, W2, W3, W4, W5, W6};
  pool[y_off + i] = pool[offs[k] + row * widths[k] + at];
}

// dx_k = its slice of dy, for the inputs whose bit is set in `present`.
__kernel void concat_backward(__global float* pool, uint dy_off, uint present, uint x0, uint x1, uint x2,
                              uint x3, uint x4, uint x5, uint x6) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const uint row = i / ROW;
  uint at;
  const uint k = concat_input(i % ROW, &at);
  if (!(present >> k & 1u)) return;
  const uint offs[7] = {x0, x1, x2, x3, x4, x5, x6};
  const uint widths[7] = {W0, W1, W2, W3, W4, W5, W6};
  pool[offs[k] + row * widths[k] + at] = pool[dy_off + i];
}
