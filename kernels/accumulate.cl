// ACCUMULATE, the step the training graph inserts to sum gradients. Definitions: storage
// (common.cl), A_H for a, Y_H for acc; the element count is an argument (tensors of any size share
// a program).

// acc += a (one rounding of a float16 acc)
__kernel void accumulate(__global float* pool, uint a_off, uint acc_off, uint count) {
  const uint i = get_global_id(0);
  if (i >= count) return;
  __global CLT_T(Y_H)* acc = CLT_PTR(Y_H) + acc_off;
  CLT_ST(Y_H, acc, i, CLT_LD(Y_H, acc, i) + CLT_LD(A_H, CLT_PTR(A_H) + a_off, i));
}
