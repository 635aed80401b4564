// The parts of FullyConnected and Conv2D around their matrix products (which run in CLBlast),
// on an output viewed as [ROWS, COLS] (COLS = output channels) with the bias along COLS.
// Definitions: ROWS, COLS; ACT (cltrain_activation); HAS_BIAS (0 or 1).

// Forward, in place on the GEMM result: y = act(acc + b).
__kernel void bias_act(__global float* pool, uint y_off, uint b_off) {
  const uint i = get_global_id(0);
  if (i >= ROWS * COLS) return;
  float v = pool[y_off + i];
#if HAS_BIAS
  v = v + pool[b_off + i % COLS];
#endif
  pool[y_off + i] = clt_act(v);
}

// Backward, in place on dy: dz = act'(y) applied to dy.
__kernel void act_grad(__global float* pool, uint y_off, uint dy_off) {
  const uint i = get_global_id(0);
  if (i >= ROWS * COLS) return;
  const float y = pool[y_off + i], dy = pool[dy_off + i];  // both loads unconditional: no branch
  pool[dy_off + i] = clt_act_grad(y, dy);
}

// Backward: db[c] = sum over rows r, in increasing order, of dz[r, c]. One work-item per column;
// neighbours read neighbouring addresses.
__kernel void bias_grad(__global float* pool, uint dz_off, uint db_off) {
  const uint c = get_global_id(0);
  if (c >= COLS) return;
  float s = 0.0f;
  for (uint r = 0; r < ROWS; ++r) s = s + pool[dz_off + r * COLS + c];
  pool[db_off + c] = s;
}
