// The parts of FullyConnected and Conv2D around their matrix products (which run in CLBlast),
// on an output viewed as [ROWS, COLS] (COLS = output channels) with the bias along COLS.
// Definitions: COLS; ACT (cltrain_activation); HAS_BIAS (0 or 1); storage (common.cl) of the
// backward's operands: Y_H for y, DY_H for dy; VEC (bias_grad's lanes: 1, 4, 8 or 16, dividing
// COLS; bias_vec() in ops/op.h); ACC (bias_grad adds its sums into db). The rows are an
// argument: layers of one width at other batch or image sizes share a program.

// Forward, in place on the GEMM result: y = act(acc + b). (A float16 y takes its bias and
// activation in the GEMM's epilogue instead, gemm.cl's EPI, so that it is rounded once.)
__kernel void bias_act(__global float* pool, uint y_off, uint b_off, uint rows) {
  const uint i = get_global_id(0);
  if (i >= rows * COLS) return;
  float v = pool[y_off + i];
#if HAS_BIAS
  v = v + pool[b_off + i % COLS];
#endif
  pool[y_off + i] = clt_act(v);
}

// Backward, in place on dy: dz = act'(y) applied to dy (a select: exact at either storage).
__kernel void act_grad(__global float* pool, uint y_off, uint dy_off, uint rows) {
  const uint i = get_global_id(0);
  if (i >= rows * COLS) return;
  // both loads unconditional: no branch
  const float y = CLT_LD(Y_H, CLT_PTR(Y_H) + y_off, i), dy = CLT_LD(DY_H, CLT_PTR(DY_H) + dy_off, i);
  CLT_ST(DY_H, CLT_PTR(DY_H) + dy_off, i, clt_act_grad(y, dy));
}

// Backward: db[c] = sum over rows r, in increasing order, of dz[r, c]. One work-item per VEC
// neighbouring columns (VEC divides COLS), each lane its own sum: a pass over the rows reads whole
// cache lines, where a work-item per column (POCL runs a group's work-items one after another)
// walked all of dz once per column.
__kernel void bias_grad(__global float* pool, uint dz_off, uint db_off, uint rows) {
  const uint c = get_global_id(0) * VEC;
  if (c >= COLS) return;
  __global const CLT_T(DY_H)* dz = CLT_PTR(DY_H) + dz_off + c;
  vfloat s = 0.0f;
  for (uint r = 0; r < rows; ++r) s = s + CLT_VLD(DY_H, dz + r * COLS);
#if ACC
  s = VLOAD(pool + db_off + c) + s;  // ACCUMULATE_FC_GRADS: db += the sum
#endif
  VSTORE(s, pool + db_off + c);
}
