// CONV_2D around its matrix products (CLBlast): panels of x for the GEMMs, and the gather that
// turns the GEMM's per-tap products back into dx. NHWC; W is [OC, KH, KW, IC].
// Definitions: N H W IC OH OW OC KH KW SH SW DH DW PT PL (the geometry); PANEL_TAPS, PANEL_CH
// (a panel's columns: PANEL_TAPS taps of PANEL_CH channels each); VEC (the gather's lanes).
//
// Numerics (cltrain_backend.h): the forward dot runs over (kh, kw, i), i fastest, which is the
// order of a panel's columns; taps outside x are zeros in a panel, and fma(0, w, acc) leaves acc
// as it is (acc starts at +0 and never becomes -0), which is the chain with those taps skipped.
// dx sums, per element, the products of the taps that reach it in (kh, kw) order: s = 0; s = s + t.
// Storage (common.cl): X_H for x, DX_H for dx; panels and dcol are float32 scratch.

#define ROWS_PER_IMAGE (OH * OW)

// VEC lanes (1, 4, 8 or 16) of the gather: vfloat, VLOAD, VSTORE (common.cl).

// The forward panel, transposed: panel_t[(p - p0) PANEL_CH + (c - c0), r] for the output
// positions row0 + r, r < rows (the GEMM's A as [K, M]). A 2-D range of (8 rows, tap): each
// work-item reads PANEL_CH contiguous channels at each of its 8 positions and writes them as
// 8 neighbouring floats per channel.
__kernel void conv_panel_t(__global float* pool, uint x_off, uint panel_off, uint row0, uint rows, uint p0, uint c0) {
  const uint r0 = get_global_id(0) * 8, t = get_global_id(1);
  if (r0 >= rows || t >= PANEL_TAPS) return;
  const uint p = p0 + t;
  const uint lanes = min(8u, rows - r0);
  int src[8];  // element offset of the 8 positions' channel c0 in x, -1 outside x
  for (uint l = 0; l < 8; ++l) {
    const uint row = row0 + r0 + min(l, lanes - 1);
    const uint n = row / ROWS_PER_IMAGE, oh = row / OW % OH, ow = row % OW;
    const int ih = (int)(oh * SH + p / KW * DH) - PT;
    const int iw = (int)(ow * SW + p % KW * DW) - PL;
    src[l] = (ih < 0 || ih >= H || iw < 0 || iw >= W) ? -1 : (int)(((n * H + (uint)ih) * W + (uint)iw) * IC + c0);
  }
  __global const CLT_T(X_H)* x = CLT_PTR(X_H) + x_off;
  __global float* out = pool + panel_off + t * PANEL_CH * rows + r0;
#if X_H  // the 8 halves' bits (0 outside: +0), widened as one vector
#define PANEL_X_T uint
#define PANEL_X(l) (src[l] < 0 ? 0u : (uint)x[src[l] + c])
#define PANEL_V(w) CLT_H2F(w, float8, uint8)
#else
#define PANEL_X_T float
#define PANEL_X(l) (src[l] < 0 ? 0.0f : x[src[l] + c])
#define PANEL_V(w) (w)
#endif
  for (uint c = 0; c < PANEL_CH; ++c) {
    const float8 v = PANEL_V(((CAT(PANEL_X_T, 8))(PANEL_X(0), PANEL_X(1), PANEL_X(2), PANEL_X(3), PANEL_X(4),
                                                  PANEL_X(5), PANEL_X(6), PANEL_X(7))));
    if (lanes == 8) {
      vstore8(v, 0, out + c * rows);
    } else {
      float tail[8];
      vstore8(v, 0, tail);
      for (uint l = 0; l < lanes; ++l) out[c * rows + l] = tail[l];
    }
  }
#undef PANEL_X
#undef PANEL_V
#undef PANEL_X_T
}

// A panel of rows: panel[r, (p - p0) PANEL_CH + (c - c0)] for the output positions row0 + r
// (the dW GEMM's B as [K, N]). One work-item per (r, tap), copying PANEL_CH channels VEC at a
// time (VEC divides PANEL_CH).
__kernel void conv_panel(__global float* pool, uint x_off, uint panel_off, uint row0, uint rows, uint p0, uint c0) {
  const uint gid = get_global_id(0);
  if (gid >= rows * PANEL_TAPS) return;
  const uint r = gid / PANEL_TAPS, t = gid % PANEL_TAPS;
  const uint row = row0 + r, p = p0 + t;
  const uint n = row / ROWS_PER_IMAGE, oh = row / OW % OH, ow = row % OW;
  const int ih = (int)(oh * SH + p / KW * DH) - PT;
  const int iw = (int)(ow * SW + p % KW * DW) - PL;
  __global float* out = pool + panel_off + (r * PANEL_TAPS + t) * PANEL_CH;
  if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
    for (uint c = 0; c < PANEL_CH; c += VEC) VSTORE((vfloat)(0.0f), out + c);
  } else {
    __global const CLT_T(X_H)* in = CLT_PTR(X_H) + x_off + ((n * H + (uint)ih) * W + (uint)iw) * IC + c0;
    for (uint c = 0; c < PANEL_CH; c += VEC) VSTORE(CLT_VLD(X_H, in + c), out + c);
  }
}

// dx[n, ih, iw, i] for the images n0 <= n < n0 + images, from dcol [(n - n0) OH OW + oh OW + ow,
// (kh KW + kw) IC + i] = dot over o of dz W: the sum over the taps (kh, kw) in order whose output
// position (oh, ow) reaches (ih, iw). One work-item per VEC neighbouring channels of a dx
// position, as vector lanes (each lane its own sum; VEC divides IC).
// With XACT != 0, dx = the derivative of x's producer's activation applied to that sum, from x
// at the same element (read before dx is written there: dx may share x's bytes).
__kernel void conv_gather_dx(__global float* pool, uint dcol_off, uint dx_off, uint n0, uint images, uint x_off) {
  const uint gid = get_global_id(0);
  if (gid >= images * H * W * (IC / VEC)) return;
  const uint i = gid % (IC / VEC) * VEC, pos = gid / (IC / VEC);
  const uint iw = pos % W, ih = pos / W % H, nl = pos / (W * H);
  const uint K = KH * KW * IC;
  vfloat s = 0.0f;
  for (uint kh = 0; kh < KH; ++kh) {
    const int th = (int)ih + PT - (int)(kh * DH);
    if (th < 0 || th % SH != 0 || th / SH >= OH) continue;
    const uint oh = (uint)(th / SH);
    for (uint kw = 0; kw < KW; ++kw) {
      const int tw = (int)iw + PL - (int)(kw * DW);
      if (tw < 0 || tw % SW != 0 || tw / SW >= OW) continue;
      const uint ow = (uint)(tw / SW);
#if DCOL_T  // dcol stored [K, images OH OW] (VEC is 1)
      const vfloat t =
          pool[dcol_off + ((kh * KW + kw) * IC + i) * (images * ROWS_PER_IMAGE) + nl * ROWS_PER_IMAGE + oh * OW + ow];
#else
      const vfloat t = VLOAD(pool + dcol_off + (nl * ROWS_PER_IMAGE + oh * OW + ow) * K + (kh * KW + kw) * IC + i);
#endif
      s = s + t;
    }
  }
#if XACT
  s = CLT_XACT_GRAD(CLT_VLD(X_H, CLT_PTR(X_H) + x_off + (n0 * (H * W) + pos) * IC + i), s);
#endif
  CLT_VST(DX_H, s, CLT_PTR(DX_H) + dx_off + (n0 * (H * W) + pos) * IC + i);
}

// conv_gather_dx for the dx rows [ih0, ih0 + ihn) of image n, from a dcol that holds the output
// rows [oh0, oh0 + band) of that image (every row those dx rows reach; band may be 0): for an
// image whose dcol is over the step's scratch. The same sums in the same order as conv_gather_dx.
__kernel void conv_gather_dx_band(__global float* pool, uint dcol_off, uint dx_off, uint n, uint oh0, uint band,
                                  uint ih0, uint ihn, uint x_off) {
  const uint gid = get_global_id(0);
  if (gid >= ihn * W * (IC / VEC)) return;
  const uint i = gid % (IC / VEC) * VEC, pos = gid / (IC / VEC);
  const uint iw = pos % W, ih = ih0 + pos / W;
  const uint K = KH * KW * IC;
  vfloat s = 0.0f;
  for (uint kh = 0; kh < KH; ++kh) {
    const int th = (int)ih + PT - (int)(kh * DH);
    if (th < 0 || th % SH != 0 || th / SH >= OH) continue;
    const uint r = (uint)(th / SH) - oh0;  // < band: the host's band covers every row reached
    for (uint kw = 0; kw < KW; ++kw) {
      const int tw = (int)iw + PL - (int)(kw * DW);
      if (tw < 0 || tw % SW != 0 || tw / SW >= OW) continue;
      const uint ow = (uint)(tw / SW);
#if DCOL_T  // dcol stored [K, band OW] (VEC is 1)
      const vfloat t = pool[dcol_off + ((kh * KW + kw) * IC + i) * (band * OW) + r * OW + ow];
#else
      const vfloat t = VLOAD(pool + dcol_off + (r * OW + ow) * K + (kh * KW + kw) * IC + i);
#endif
      s = s + t;
    }
  }
  const uint at = (n * (H * W) + ih * W + iw) * IC + i;
#if XACT
  s = CLT_XACT_GRAD(CLT_VLD(X_H, CLT_PTR(X_H) + x_off + at), s);
#endif
  CLT_VST(DX_H, s, CLT_PTR(DX_H) + dx_off + at);
}

// conv_gather_dx for image n by blocks of taps, for a dcol of one image over the step's scratch:
// dcol holds the taps [p0, p0 + np) of the image's output positions, [OH OW, np IC], and acc the
// image's sums so far as float32 ([H W IC]: s carries from block to block as the float it is, so
// every sum takes the same terms in the same (kh, kw) order as conv_gather_dx). The first block
// starts the sums at 0, the last applies XACT and stores dx (one rounding of a float16 dx).
__kernel void conv_gather_dx_taps(__global float* pool, uint dcol_off, uint acc_off, uint dx_off, uint n, uint p0,
                                  uint np, uint first, uint last, uint x_off) {
  const uint gid = get_global_id(0);
  if (gid >= H * W * (IC / VEC)) return;
  const uint i = gid % (IC / VEC) * VEC, pos = gid / (IC / VEC);
  const uint iw = pos % W, ih = pos / W;
  vfloat s = first ? (vfloat)(0.0f) : VLOAD(pool + acc_off + pos * IC + i);
  for (uint kh = p0 / KW; kh < KH && kh * KW < p0 + np; ++kh) {
    const int th = (int)ih + PT - (int)(kh * DH);
    if (th < 0 || th % SH != 0 || th / SH >= OH) continue;
    const uint oh = (uint)(th / SH);
    for (uint kw = 0; kw < KW; ++kw) {
      const uint p = kh * KW + kw;
      if (p < p0 || p >= p0 + np) continue;
      const int tw = (int)iw + PL - (int)(kw * DW);
      if (tw < 0 || tw % SW != 0 || tw / SW >= OW) continue;
      const uint ow = (uint)(tw / SW);
      s = s + VLOAD(pool + dcol_off + (oh * OW + ow) * (np * IC) + (p - p0) * IC + i);
    }
  }
  if (!last) {
    VSTORE(s, pool + acc_off + pos * IC + i);
    return;
  }
  const uint at = (n * (H * W) + pos) * IC + i;
#if XACT
  s = CLT_XACT_GRAD(CLT_VLD(X_H, CLT_PTR(X_H) + x_off + at), s);
#endif
  CLT_VST(DX_H, s, CLT_PTR(DX_H) + dx_off + at);
}

// dz of image n as float32 at dst: a float16 dz widened once for the GEMMs of its tap blocks.
// W^T for gemm.cl's forward: wt[k, o] = W[o, k] over k = (kh KW + kw) IC + i (float32 W).
// Both filter layouts below are followed by the zeros gemm.cl's A_CONV reads for pixels outside
// the image (IC of them after W^T, OC after the dx layout).
__kernel void conv_filter_t(__global float* pool, uint w_off, uint wt_off) {
  const uint gid = get_global_id(0), K = KH * KW * IC;
  if (gid >= K * OC + IC) return;
  pool[wt_off + gid] = gid < K * OC ? pool[w_off + gid % OC * K + gid / OC] : 0.0f;
}

// The filter as gemm.cl's B for dx of a stride-1 convolution: wp[(kh KW + kw) OC + o, i] =
// W[o, kh, kw, i] (float32 W).
__kernel void conv_filter_p(__global float* pool, uint w_off, uint wp_off) {
  const uint gid = get_global_id(0), taps = KH * KW;
  if (gid >= taps * OC * IC + OC) return;
  const uint i = gid % IC, o = gid / IC % OC, tap = gid / (IC * OC);
  pool[wp_off + gid] = gid < taps * OC * IC ? pool[w_off + (o * taps + tap) * IC + i] : 0.0f;
}

__kernel void conv_widen_dz(__global float* pool, uint dz_off, uint dst_off, uint n) {
  const uint gid = get_global_id(0);
  if (gid >= OH * OW * OC) return;
  pool[dst_off + gid] = CLT_LD(DY_H, CLT_PTR(DY_H) + dz_off, n * (OH * OW * OC) + gid);
}

// dW of convolutions of few products per output (KH KW IC <= 27: a first layer over an image's
// channels) on CPU devices, direct rather than a panel and a GEMM whose B would be packed a few
// channels at a time. Per work-item VEC output channels and every (kh, kw, i) at once (SMALL_K
// accumulators), each element one chain over the output positions (n, oh, ow) in order, dz times
// the pixel the tap reads (+0 outside x, as a panel holds it): gemm.cl's chains (fma(a, b, c) =
// fma(b, a, c)). One work-item per group: the chains are long and few.
#define SMALL_K (KH * KW * IC)
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void conv_small_filter_grad(__global float* pool, uint x_off,
                                                                                    uint dz_off, uint dw_off) {
  const uint o = get_global_id(0) * VEC;
  if (o >= OC) return;
  vfloat acc[SMALL_K];
  for (uint k = 0; k < SMALL_K; ++k) acc[k] = 0.0f;
  for (uint pos = 0; pos < N * OH * OW; ++pos) {
    const uint ow = pos % OW, oh = pos / OW % OH, n = pos / (OW * OH);
    const vfloat dz = VLOAD(pool + dz_off + pos * OC + o);
    for (uint kh = 0; kh < KH; ++kh) {
      const int ih = (int)(oh * SH + kh * DH) - PT;
      for (uint kw = 0; kw < KW; ++kw) {
        const int iw = (int)(ow * SW + kw * DW) - PL;
        const bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
        const uint at = in ? ((n * H + (uint)ih) * W + (uint)iw) * IC : 0;
        for (uint i = 0; i < IC; ++i) {
          const uint k = (kh * KW + kw) * IC + i;
          acc[k] = fma(dz, (vfloat)(in ? pool[x_off + at + i] : 0.0f), acc[k]);
        }
      }
    }
  }
  for (uint k = 0; k < SMALL_K; ++k) {
    float e[VEC];
    VSTORE(acc[k], e);
    for (uint l = 0; l < VEC; ++l) pool[dw_off + (o + l) * SMALL_K + k] = e[l];
  }
}
