// FILL: every element of y the same value. Definitions: COUNT (elements), VALUE_BITS (the
// value's float32 bits, so that it arrives exactly).

__kernel void fill_forward(__global float* pool, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  pool[y_off + i] = as_float((uint)VALUE_BITS);
}
