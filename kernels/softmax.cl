// Softmax over the last dimension: one work-item per row, every sum sequential in increasing
// column order (cltrain_backend.h, Numerics). Definitions: ROWS, COLS (row length), BETA.

// t_i = BETA x_i; mx = max t_i (fmax from t_0); e_i = clt_exp(t_i - mx); s = sum e_i; y_i = e_i / s.
__kernel void softmax_forward(__global float* pool, uint x_off, uint y_off) {
  const uint r = get_global_id(0);
  if (r >= ROWS) return;
  __global const float* x = pool + x_off + (ulong)r * COLS;
  __global float* y = pool + y_off + (ulong)r * COLS;
  float mx = BETA * x[0];
  for (uint c = 1; c < COLS; ++c) mx = fmax(mx, BETA * x[c]);
  float s = 0.0f;
  for (uint c = 0; c < COLS; ++c) {
    const float e = clt_exp(BETA * x[c] - mx);
    y[c] = e;
    s = s + e;
  }
  for (uint c = 0; c < COLS; ++c) y[c] = y[c] / s;
}

// d = sum of (dy_i * y_i), products rounded then summed; dx_i = BETA * (y_i * (dy_i - d)).
__kernel void softmax_backward(__global float* pool, uint y_off, uint dy_off, uint dx_off) {
  const uint r = get_global_id(0);
  if (r >= ROWS) return;
  const ulong row = (ulong)r * COLS;
  __global const float* y = pool + y_off + row;
  __global const float* dy = pool + dy_off + row;
  __global float* dx = pool + dx_off + row;
  float d = 0.0f;
  for (uint c = 0; c < COLS; ++c) {
    const float p = dy[c] * y[c];
    d = d + p;
  }
  for (uint c = 0; c < COLS; ++c) dx[c] = BETA * (y[c] * (dy[c] - d));
}

// LOG_SOFTMAX (BETA unused): mx = max x_i (fmax from x_0); s = sum of clt_exp(x_i - mx);
// y_i = (x_i - mx) - clt_log(s).
__kernel void log_softmax_forward(__global float* pool, uint x_off, uint y_off) {
  const uint r = get_global_id(0);
  if (r >= ROWS) return;
  __global const float* x = pool + x_off + (ulong)r * COLS;
  __global float* y = pool + y_off + (ulong)r * COLS;
  float mx = x[0];
  for (uint c = 1; c < COLS; ++c) mx = fmax(mx, x[c]);
  float s = 0.0f;
  for (uint c = 0; c < COLS; ++c) s = s + clt_exp(x[c] - mx);
  const float g = clt_log(s);
  for (uint c = 0; c < COLS; ++c) y[c] = (x[c] - mx) - g;
}

// d = sum of dy_i; dx_i = dy_i - clt_exp(y_i) * d.
__kernel void log_softmax_backward(__global float* pool, uint y_off, uint dy_off, uint dx_off) {
  const uint r = get_global_id(0);
  if (r >= ROWS) return;
  const ulong row = (ulong)r * COLS;
  __global const float* y = pool + y_off + row;
  __global const float* dy = pool + dy_off + row;
  __global float* dx = pool + dx_off + row;
  float d = 0.0f;
  for (uint c = 0; c < COLS; ++c) d = d + dy[c];
  for (uint c = 0; c < COLS; ++c) {
    const float e = clt_exp(y[c]);
    const float p = e * d;
    dx[c] = dy[c] - p;
  }
}
