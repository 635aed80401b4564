// DEPTHWISE_CONV_2D, direct: x [N,H,W,IC], W [1,KH,KW,OC] with OC = IC * M, y [N,OH,OW,OC];
// output channel c * M + j reads input channel c. One work-item per output element, each a chain
// in the order of cltrain_backend.h's Numerics (taps outside x skipped).
// Definitions: N H W IC OH OW OC KH KW SH SW DH DW PT PL M; ACT, HAS_BIAS (forward).

// y = act(fma over (kh, kw) of x * W, + b).
__kernel void dw_forward(__global float* pool, uint x_off, uint w_off, uint b_off, uint y_off) {
  const uint gid = get_global_id(0);
  if (gid >= N * OH * OW * OC) return;
  const uint oc = gid % OC, ow = gid / OC % OW, oh = gid / (OC * OW) % OH, n = gid / (OC * OW * OH);
  const uint c = oc / M;
  float acc = 0.0f;
  for (uint kh = 0; kh < KH; ++kh) {
    const int ih = (int)(oh * SH + kh * DH) - PT;
    if (ih < 0 || ih >= H) continue;
    for (uint kw = 0; kw < KW; ++kw) {
      const int iw = (int)(ow * SW + kw * DW) - PL;
      if (iw < 0 || iw >= W) continue;
      acc = clt_fma(pool[x_off + ((n * H + (uint)ih) * W + (uint)iw) * IC + c], pool[w_off + (kh * KW + kw) * OC + oc],
                    acc);
    }
  }
#if HAS_BIAS
  acc = acc + pool[b_off + oc];
#endif
  pool[y_off + gid] = clt_act(acc);
}

// dW[kh, kw, oc] = fma over (n, oh, ow) in order of dz * x, positions whose tap is outside x
// skipped. One work-item per element of dW.
__kernel void dw_filter_grad(__global float* pool, uint x_off, uint dz_off, uint dw_off) {
  const uint gid = get_global_id(0);
  if (gid >= KH * KW * OC) return;
  const uint oc = gid % OC, kw = gid / OC % KW, kh = gid / (OC * KW);
  const uint c = oc / M;
  float acc = 0.0f;
  for (uint n = 0; n < N; ++n)
    for (uint oh = 0; oh < OH; ++oh) {
      const int ih = (int)(oh * SH + kh * DH) - PT;
      if (ih < 0 || ih >= H) continue;
      __global const float* xr = pool + x_off + (n * H + (uint)ih) * (W * IC) + c;
      __global const float* dzr = pool + dz_off + (n * OH + oh) * (OW * OC) + oc;
      for (uint ow = 0; ow < OW; ++ow) {
        const int iw = (int)(ow * SW + kw * DW) - PL;
        if (iw < 0 || iw >= W) continue;
        acc = clt_fma(dzr[ow * OC], xr[(uint)iw * IC], acc);
      }
    }
  pool[dw_off + gid] = acc;
}

// dx[n, ih, iw, c] = sum over the taps (kh, kw) in order that reach it of
// (fma over j of dz[.., c M + j] * W[kh, kw, c M + j]). One work-item per element of dx.
__kernel void dw_input_grad(__global float* pool, uint w_off, uint dz_off, uint dx_off) {
  const uint gid = get_global_id(0);
  if (gid >= N * H * W * IC) return;
  const uint c = gid % IC, iw = gid / IC % W, ih = gid / (IC * W) % H, n = gid / (IC * W * H);
  float s = 0.0f;
  for (uint kh = 0; kh < KH; ++kh) {
    const int th = (int)ih + PT - (int)(kh * DH);
    if (th < 0 || th % SH != 0 || th / SH >= OH) continue;
    const uint oh = (uint)(th / SH);
    for (uint kw = 0; kw < KW; ++kw) {
      const int tw = (int)iw + PL - (int)(kw * DW);
      if (tw < 0 || tw % SW != 0 || tw / SW >= OW) continue;
      const uint ow = (uint)(tw / SW);
      __global const float* g = pool + dz_off + ((n * OH + oh) * OW + ow) * OC + c * M;
      __global const float* wr = pool + w_off + (kh * KW + kw) * OC + c * M;
      float t = 0.0f;
      for (uint j = 0; j < M; ++j) t = clt_fma(g[j], wr[j], t);
      s = s + t;
    }
  }
  pool[dx_off + gid] = s;
}
