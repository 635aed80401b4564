// GRU_CELL (cltrain_ops.h): one GRU step's gate math, one work-item per state element, with
// numerics.h's clt_gru (the unfused ops' roundings). No definitions: width (H) and the gate parts'
// offsets within a row of xp and hp (update, reset, candidate) are arguments, and flags which
// gradients are wanted (bit 0 dxp, bit 1 dhp, bit 2 dh_prev). 2-D launch: dimension 0 the element
// j of a row (padded: checked), dimension 1 the row; state element e = row * width + j.

#define GRU_ELEMENT                  \
  const uint j = get_global_id(0);   \
  if (j >= width) return;            \
  const uint row = get_global_id(1); \
  const uint e = row * width + j;    \
  const uint prow = row * 3u * width + j;

// h = z * h_prev + (1 - z) * n.
__kernel void gru_forward(__global float* pool, uint xp_off, uint hp_off, uint hprev_off, uint h_off, uint width,
                          uint4 xparts, uint4 hparts) {
  GRU_ELEMENT
  __global const float* xp = pool + xp_off + prow;
  __global const float* hp = pool + hp_off + prow;
  pool[h_off + e] = clt_gru(xp[xparts.s0], hp[hparts.s0], xp[xparts.s1], hp[hparts.s1], xp[xparts.s2], hp[hparts.s2],
                            pool[hprev_off + e]);
}

__kernel void gru_backward(__global float* pool, uint xp_off, uint hp_off, uint hprev_off, uint dh_off, uint dxp_off,
                           uint dhp_off, uint dhprev_off, uint width, uint4 xparts, uint4 hparts, uint flags) {
  GRU_ELEMENT
  __global const float* xp = pool + xp_off + prow;
  __global const float* hp = pool + hp_off + prow;
  float az, ar, an, ahn, dp;
  clt_gru_grad(xp[xparts.s0], hp[hparts.s0], xp[xparts.s1], hp[hparts.s1], xp[xparts.s2], hp[hparts.s2],
               pool[hprev_off + e], pool[dh_off + e], &az, &ar, &an, &ahn, &dp);
  if (flags & 1u) {
    __global float* d = pool + dxp_off + prow;
    d[xparts.s0] = az;
    d[xparts.s1] = ar;
    d[xparts.s2] = an;
  }
  if (flags & 2u) {
    __global float* d = pool + dhp_off + prow;
    d[hparts.s0] = az;
    d[hparts.s1] = ar;
    d[hparts.s2] = ahn;
  }
  if (flags & 4u) pool[dhprev_off + e] = dp;
}
