// Softmax over the last dimension: one work-group per row.
// Definitions: COLS (row length), BETA, WG_SIZE.

// y = exp(BETA x - max(BETA x)) / sum over the row.
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void softmax_forward(__global float* pool, uint x_off, uint y_off) {
  __local float scratch[WG_SIZE];
  const uint lid = get_local_id(0);
  __global const float* x = pool + x_off + get_group_id(0) * COLS;
  __global float* y = pool + y_off + get_group_id(0) * COLS;
  float m = -INFINITY;
  for (uint c = lid; c < COLS; c += WG_SIZE) m = fmax(m, BETA * x[c]);
  m = wg_max(m, scratch);
  float s = 0.0f;
  for (uint c = lid; c < COLS; c += WG_SIZE) {
    const float e = exp(BETA * x[c] - m);
    y[c] = e;
    s += e;
  }
  s = wg_sum(s, scratch);
  for (uint c = lid; c < COLS; c += WG_SIZE) y[c] = y[c] / s;
}

// dx = BETA y (dy - sum over the row of dy y).
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void softmax_backward(__global float* pool, uint y_off, uint dy_off, uint dx_off) {
  __local float scratch[WG_SIZE];
  const uint lid = get_local_id(0);
  const uint row = get_group_id(0) * COLS;
  __global const float* y = pool + y_off + row;
  __global const float* dy = pool + dy_off + row;
  __global float* dx = pool + dx_off + row;
  float dot = 0.0f;
  for (uint c = lid; c < COLS; c += WG_SIZE) dot += dy[c] * y[c];
  dot = wg_sum(dot, scratch);
  for (uint c = lid; c < COLS; c += WG_SIZE) dx[c] = BETA * y[c] * (dy[c] - dot);
}
