// FILL: every element of y the same value. Definitions: VALUE_BITS (the value's float32 bits, so
// that it arrives exactly); the element count is an argument.

__kernel void fill_forward(__global float* pool, uint y_off, uint count) {
  const uint i = get_global_id(0);
  if (i >= count) return;
  pool[y_off + i] = as_float((uint)VALUE_BITS);
}
