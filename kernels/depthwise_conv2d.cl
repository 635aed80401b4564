// DEPTHWISE_CONV_2D, direct: x [N,H,W,IC], W [1,KH,KW,OC] with OC = IC * M, y [N,OH,OW,OC];
// output channel c * M + j reads input channel c. Every output element is its own chain in the
// order of cltrain_backend.h's Numerics (taps outside x skipped).
// Definitions: N H W IC OH OW OC KH KW SH SW DH DW PT PL M; ACT, HAS_BIAS (forward); VEC.
//
// A work-item computes VEC neighbouring channels (1, 4, 8 or 16; VEC > 1 only with M = 1 and
// channel counts that VEC divides) as the lanes of a vector: each lane is one element's chain,
// fma and + act lane by lane, so the lanes round exactly as scalars do. The lanes share their
// position and tap, so every branch and loop bound is the same for all of them.

// VEC lanes: vfloat, VLOAD, VSTORE (common.cl). Storage (common.cl): X_H for x, Y_H for y, DY_H for
// dz, DX_H for dx.

// y = act(fma over (kh, kw) of x * W, + b). One work-item per VEC output channels of a position.
// Positions whose every tap is inside x take the taps unrolled at constant offsets, unchecked;
// the others check each tap. The same taps in the same order either way.
__kernel void dw_forward(__global float* pool, uint x_off, uint w_off, uint b_off, uint y_off) {
  const uint gid = get_global_id(0);
  if (gid >= N * OH * OW * (OC / VEC)) return;
  const uint oc = gid % (OC / VEC) * VEC, pos = gid / (OC / VEC);
  const uint ow = pos % OW, oh = pos / OW % OH, n = pos / (OW * OH);
  vfloat acc = 0.0f;
#if VEC == 1
#define DWF_TAP(xp, wp) acc = clt_fma(CLT_LD(X_H, xp, oc / M), *(wp), acc)
#else
#define DWF_TAP(xp, wp) acc = clt_fma(CLT_VLD(X_H, (xp) + oc), VLOAD(wp), acc)
#endif
  const int ih0 = (int)(oh * SH) - PT, iw0 = (int)(ow * SW) - PL;
  if (ih0 >= 0 && ih0 + (int)((KH - 1) * DH) < H && iw0 >= 0 && iw0 + (int)((KW - 1) * DW) < W) {
    __global const CLT_T(X_H)* xp = CLT_PTR(X_H) + x_off + ((n * H + (uint)ih0) * W + (uint)iw0) * IC;
    __global const float* wp = pool + w_off + oc;
#pragma unroll
    for (uint kh = 0; kh < KH; ++kh)
#pragma unroll
      for (uint kw = 0; kw < KW; ++kw) DWF_TAP(xp + (kh * DH * W + kw * DW) * IC, wp + (kh * KW + kw) * OC);
  } else {
    for (uint kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + (int)(kh * DH);
      if (ih < 0 || ih >= H) continue;
      for (uint kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + (int)(kw * DW);
        if (iw < 0 || iw >= W) continue;
        DWF_TAP(CLT_PTR(X_H) + x_off + ((n * H + (uint)ih) * W + (uint)iw) * IC,
                pool + w_off + (kh * KW + kw) * OC + oc);
      }
    }
  }
#undef DWF_TAP
#if HAS_BIAS
  acc = acc + VLOAD(pool + b_off + oc);
#endif
  // The activation lane by lane, then one store (one rounding of a float16 y).
#if VEC == 1
  acc = clt_act(acc);
#elif defined(CLT_ACT_LANES)
  acc = clt_actv(acc);
#else
  float lanes[VEC];
  VSTORE(acc, lanes);
  for (uint l = 0; l < VEC; ++l) lanes[l] = clt_act(lanes[l]);
  acc = VLOAD(lanes);
#endif
  CLT_VST(Y_H, acc, CLT_PTR(Y_H) + y_off + pos * OC + oc);
}

// dW[kh, kw, oc] = fma over (n, oh, ow) in order of dz * x, positions whose tap is outside x
// skipped: the loops run over the positions inside only. One work-item per VEC elements of dW.
__kernel void dw_filter_grad(__global float* pool, uint x_off, uint dz_off, uint dw_off) {
  const uint gid = get_global_id(0);
  if (gid >= KH * KW * (OC / VEC)) return;
  const uint oc = gid % (OC / VEC) * VEC, tap = gid / (OC / VEC);
  const uint kh = tap / KW, kw = tap % KW;
  // Output rows and columns whose tap (kh, kw) falls inside x: [oh0, oh1) and [ow0, ow1).
  uint oh0 = 0, oh1 = OH, ow0 = 0, ow1 = OW;
  while (oh0 < OH && (int)(oh0 * SH + kh * DH) - PT < 0) ++oh0;
  while (oh1 > oh0 && (int)((oh1 - 1) * SH + kh * DH) - PT >= H) --oh1;
  while (ow0 < OW && (int)(ow0 * SW + kw * DW) - PL < 0) ++ow0;
  while (ow1 > ow0 && (int)((ow1 - 1) * SW + kw * DW) - PL >= W) --ow1;
  vfloat acc = 0.0f;
  for (uint n = 0; n < N; ++n)
    for (uint oh = oh0; oh < oh1; ++oh) {
      const uint ih = oh * SH + kh * DH - PT;
      __global const CLT_T(X_H)* xr = CLT_PTR(X_H) + x_off + (n * H + ih) * (W * IC);
      __global const CLT_T(DY_H)* dzr = CLT_PTR(DY_H) + dz_off + (n * OH + oh) * (OW * OC) + oc;
      for (uint ow = ow0; ow < ow1; ++ow) {
        __global const CLT_T(X_H)* xp = xr + (ow * SW + kw * DW - PL) * IC;
#if VEC == 1
        acc = clt_fma(CLT_LD(DY_H, dzr, ow * OC), CLT_LD(X_H, xp, oc / M), acc);
#else
        acc = clt_fma(CLT_VLD(DY_H, dzr + ow * OC), CLT_VLD(X_H, xp + oc), acc);
#endif
      }
    }
  VSTORE(acc, pool + dw_off + tap * OC + oc);
}

// dw_filter_grad with every tap in one pass (TAPS_IN_ONE_PASS, for small filters): one work-item
// per VEC channels keeps KH KW accumulators and reads dz once; each tap's chain still runs over
// (n, oh, ow) in order, skipping the positions whose tap falls outside x: the same chains.
// Positions whose every tap is inside x (rows [oh_in0, oh_in1), columns [ow_in0, ow_in1)) take
// the taps unrolled at constant offsets from one pixel pointer, without bounds checks; the
// border positions check each tap. The taps' accumulators are separate, so the order of taps
// within a position does not matter; each chain's order over the positions is unchanged.
#if VEC == 1
#define DW_XLD(p) CLT_LD(X_H, p, oc / M)
#define DW_DZLD(p) CLT_LD(DY_H, p, 0)
typedef float dw_vec;
#else
#define DW_XLD(p) CLT_VLD(X_H, (p) + oc)
#define DW_DZLD(p) CLT_VLD(DY_H, p)
typedef vfloat dw_vec;
#endif

// One border position: every tap checked.
inline void dw_taps_checked(__global float* pool, uint x_off, uint n, uint oh, uint ow, uint oc, dw_vec dz,
                            dw_vec* acc) {
  for (uint kh = 0; kh < KH; ++kh) {
    const int ih = (int)(oh * SH + kh * DH) - PT;
    if (ih < 0 || ih >= H) continue;
    for (uint kw = 0; kw < KW; ++kw) {
      const int iw = (int)(ow * SW + kw * DW) - PL;
      if (iw < 0 || iw >= W) continue;
      __global const CLT_T(X_H)* xp = CLT_PTR(X_H) + x_off + ((n * H + (uint)ih) * W + (uint)iw) * IC;
      acc[kh * KW + kw] = clt_fma(dz, DW_XLD(xp), acc[kh * KW + kw]);
    }
  }
}

__kernel void dw_filter_grad_taps(__global float* pool, uint x_off, uint dz_off, uint dw_off) {
  const uint gid = get_global_id(0);
  if (gid >= OC / VEC) return;
  const uint oc = gid * VEC;
  dw_vec acc[KH * KW];
  for (uint t = 0; t < KH * KW; ++t) acc[t] = 0.0f;
  // The first output row and column whose taps all lie inside x, and one past the last.
  const uint oh_in0 = PT > 0 ? (PT + SH - 1) / SH : 0, ow_in0 = PL > 0 ? (PL + SW - 1) / SW : 0;
  const int oh_last = (H - 1 + PT - (int)((KH - 1) * DH)), ow_last = (W - 1 + PL - (int)((KW - 1) * DW));
  const uint oh_in1 = oh_last < 0 ? 0 : min((uint)OH, (uint)oh_last / SH + 1);
  const uint ow_in1 = ow_last < 0 ? 0 : min((uint)OW, (uint)ow_last / SW + 1);
  for (uint n = 0; n < N; ++n)
    for (uint oh = 0; oh < OH; ++oh) {
      __global const CLT_T(DY_H)* dzr = CLT_PTR(DY_H) + dz_off + (n * OH + oh) * OW * OC + oc;
      const bool rows_in = oh >= oh_in0 && oh < oh_in1;
      const uint c0 = rows_in ? min(ow_in0, (uint)OW) : OW, c1 = rows_in ? max(c0, ow_in1) : OW;
      for (uint ow = 0; ow < c0; ++ow) dw_taps_checked(pool, x_off, n, oh, ow, oc, DW_DZLD(dzr + ow * OC), acc);
      for (uint ow = c0; ow < c1; ++ow) {
        const dw_vec dz = DW_DZLD(dzr + ow * OC);
        __global const CLT_T(X_H)* xp = CLT_PTR(X_H) + x_off + ((n * H + oh * SH - PT) * W + ow * SW - PL) * IC;
#pragma unroll
        for (uint kh = 0; kh < KH; ++kh)
#pragma unroll
          for (uint kw = 0; kw < KW; ++kw)
            acc[kh * KW + kw] = clt_fma(dz, DW_XLD(xp + (kh * DH * W + kw * DW) * IC), acc[kh * KW + kw]);
      }
      for (uint ow = c1; ow < OW; ++ow) dw_taps_checked(pool, x_off, n, oh, ow, oc, DW_DZLD(dzr + ow * OC), acc);
    }
  for (uint t = 0; t < KH * KW; ++t) VSTORE(acc[t], pool + dw_off + t * OC + oc);
}

// dx[n, ih, iw, c] = sum over the taps (kh, kw) in order that reach it of
// (fma over j of dz[.., c M + j] * W[kh, kw, c M + j]). One work-item per VEC elements of dx.
// With XACT != 0, the derivative of x's producer's activation is applied from x at the same
// element (read before dx is written there: dx may share x's bytes).
__kernel void dw_input_grad(__global float* pool, uint w_off, uint dz_off, uint dx_off, uint x_off) {
  const uint gid = get_global_id(0);
  if (gid >= N * H * W * (IC / VEC)) return;
  const uint c = gid % (IC / VEC) * VEC, pos = gid / (IC / VEC);
  const uint iw = pos % W, ih = pos / W % H, n = pos / (W * H);
  vfloat s = 0.0f;
#if SH == 1 && SW == 1 && M == 1
  // Stride 1: every tap reaches an output inside dz when the kernel's whole window does; then
  // the same taps in the same order at constant offsets, unchecked.
  const int oh0 = (int)ih + PT - (int)((KH - 1) * DH), ow0 = (int)iw + PL - (int)((KW - 1) * DW);
  if (oh0 >= 0 && (int)ih + PT < OH && ow0 >= 0 && (int)iw + PL < OW) {
    __global const CLT_T(DY_H)* g = CLT_PTR(DY_H) + dz_off + ((n * OH + ih + PT) * OW + iw + PL) * OC + c;
    __global const float* wr = pool + w_off + c;
#pragma unroll
    for (uint kh = 0; kh < KH; ++kh)
#pragma unroll
      for (uint kw = 0; kw < KW; ++kw) {
#if VEC == 1
        const float t = clt_fma(CLT_LD(DY_H, g - (kh * DH * OW + kw * DW) * OC, 0), wr[(kh * KW + kw) * OC], 0.0f);
#else
        const vfloat t =
            clt_fma(CLT_VLD(DY_H, g - (kh * DH * OW + kw * DW) * OC), VLOAD(wr + (kh * KW + kw) * OC), (vfloat)(0.0f));
#endif
        s = s + t;
      }
  } else
#endif
    for (uint kh = 0; kh < KH; ++kh) {
      const int th = (int)ih + PT - (int)(kh * DH);
      if (th < 0 || th % SH != 0 || th / SH >= OH) continue;
      const uint oh = (uint)(th / SH);
      for (uint kw = 0; kw < KW; ++kw) {
        const int tw = (int)iw + PL - (int)(kw * DW);
        if (tw < 0 || tw % SW != 0 || tw / SW >= OW) continue;
        const uint ow = (uint)(tw / SW);
        __global const CLT_T(DY_H)* g = CLT_PTR(DY_H) + dz_off + ((n * OH + oh) * OW + ow) * OC + c * M;
        __global const float* wr = pool + w_off + (kh * KW + kw) * OC + c * M;
#if VEC == 1
        float t = 0.0f;
        for (uint j = 0; j < M; ++j) t = clt_fma(CLT_LD(DY_H, g, j), wr[j], t);
#else
      const vfloat t = clt_fma(CLT_VLD(DY_H, g), VLOAD(wr), (vfloat)(0.0f));  // M = 1: one term
#endif
        s = s + t;
      }
    }
#if XACT
  s = CLT_XACT_GRAD(CLT_VLD(X_H, CLT_PTR(X_H) + x_off + pos * IC + c), s);
#endif
  CLT_VST(DX_H, s, CLT_PTR(DX_H) + dx_off + pos * IC + c);
}
