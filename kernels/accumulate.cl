// ACCUMULATE, the step the training graph inserts to sum gradients. Definitions: COUNT (elements).

// acc += a
__kernel void accumulate(__global float* pool, uint a_off, uint acc_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[acc_off + i] += pool[a_off + i];
}
