// Prepended to every kernel family. OpenCL C 1.2, float only.
//
// Conventions: every kernel takes the backend's one pool buffer and the element offsets of its
// tensors in it; shapes and constants of the op instance come as -D definitions. 1-D kernels run
// on a global size padded to whole work-groups and check their bound.

#ifdef WG_SIZE
// Sum and maximum over the work-group (WG_SIZE work-items, a power of two). scratch holds
// WG_SIZE floats; it can be reused as soon as the function returns.
float wg_sum(float v, __local float* scratch) {
  const uint lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

float wg_max(float v, __local float* scratch) {
  const uint lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}
#endif
