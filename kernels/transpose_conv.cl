// TRANSPOSE_CONV: the transpose of the CONV_2D from y [N,OH,OW,O] to x [N,H,W,I] with W [O,KH,KW,I]:
// output position oh reads input ih where oh = ih * SH - PT + kh (PT, PL: the convolution's
// leading padding). Float32 storage; one work-item per output element.
//
// Definitions: TC_N, TC_H, TC_W, TC_I (x [N,H,W,I]), TC_OH, TC_OW, TC_O (y), TC_KH, TC_KW (taps),
// TC_SH, TC_SW (strides), TC_PT, TC_PL (padding), ACT (fused activation, cltrain_activation).
//
// Numerics (cltrain_ops.h), dz = clt_act_grad(y, dy) (dy where ACT is 0):
//   y = act(acc + b[o]), acc = fma chain over (kh, kw, i), i fastest, over the taps whose input
//       position is whole and inside x;
//   dx[n,ih,iw,i] = fma chain over (kh, kw, o), o fastest, of dz * W, positions outside y skipped;
//   dW[o,kh,kw,i] = fma chain over (n, ih, iw) of dz * x, positions outside y skipped;
//   db[o] = s + dz over (n, oh, ow).

// dz at flat element j of y.
#if ACT == 0
#define TCONV_DZ(j) pool[dy_off + (j)]
#else
#define TCONV_DZ(j) clt_act_grad(pool[y_off + (j)], pool[dy_off + (j)])
#endif

// The input position that output position o reads through tap k (stride s, padding p, extent e),
// or -1.
static inline int tconv_input_at(int o, int k, int s, int p, int e) {
  const int t = o + p - k;
  if (t < 0 || t % s != 0) return -1;
  const int i = t / s;
  return i < e ? i : -1;
}

// has_bias: b is given (at b_off).
__kernel void tconv_forward(__global float* pool, uint x_off, uint w_off, uint b_off, uint has_bias, uint y_off) {
  const uint j = get_global_id(0);
  if (j >= (uint)TC_N * TC_OH * TC_OW * TC_O) return;
  const int o = j % TC_O;
  const int ow = (j / TC_O) % TC_OW;
  const int oh = (j / TC_O / TC_OW) % TC_OH;
  const int n = j / TC_O / TC_OW / TC_OH;
  float acc = 0.0f;
  for (int kh = 0; kh < TC_KH; ++kh) {
    const int ih = tconv_input_at(oh, kh, TC_SH, TC_PT, TC_H);
    if (ih < 0) continue;
    for (int kw = 0; kw < TC_KW; ++kw) {
      const int iw = tconv_input_at(ow, kw, TC_SW, TC_PL, TC_W);
      if (iw < 0) continue;
      const uint xb = x_off + (((uint)n * TC_H + ih) * TC_W + iw) * TC_I;
      const uint wb = w_off + (((uint)o * TC_KH + kh) * TC_KW + kw) * TC_I;
      for (int i = 0; i < TC_I; ++i) acc = fma(pool[xb + i], pool[wb + i], acc);
    }
  }
  if (has_bias) acc = acc + pool[b_off + o];
  pool[y_off + j] = clt_act(acc);
}

__kernel void tconv_dx(__global float* pool, uint w_off, uint y_off, uint dy_off, uint dx_off) {
  const uint j = get_global_id(0);
  if (j >= (uint)TC_N * TC_H * TC_W * TC_I) return;
  const int i = j % TC_I;
  const int iw = (j / TC_I) % TC_W;
  const int ih = (j / TC_I / TC_W) % TC_H;
  const int n = j / TC_I / TC_W / TC_H;
  float acc = 0.0f;
  for (int kh = 0; kh < TC_KH; ++kh) {
    const int oh = ih * TC_SH - TC_PT + kh;
    if (oh < 0 || oh >= TC_OH) continue;
    for (int kw = 0; kw < TC_KW; ++kw) {
      const int ow = iw * TC_SW - TC_PL + kw;
      if (ow < 0 || ow >= TC_OW) continue;
      const uint zb = (((uint)n * TC_OH + oh) * TC_OW + ow) * TC_O;
      for (int o = 0; o < TC_O; ++o)
        acc = fma(TCONV_DZ(zb + o), pool[w_off + (((uint)o * TC_KH + kh) * TC_KW + kw) * TC_I + i], acc);
    }
  }
  pool[dx_off + j] = acc;
}

__kernel void tconv_dw(__global float* pool, uint x_off, uint y_off, uint dy_off, uint dw_off) {
  const uint j = get_global_id(0);
  if (j >= (uint)TC_O * TC_KH * TC_KW * TC_I) return;
  const int i = j % TC_I;
  const int kw = (j / TC_I) % TC_KW;
  const int kh = (j / TC_I / TC_KW) % TC_KH;
  const int o = j / TC_I / TC_KW / TC_KH;
  float acc = 0.0f;
  for (int n = 0; n < TC_N; ++n)
    for (int ih = 0; ih < TC_H; ++ih) {
      const int oh = ih * TC_SH - TC_PT + kh;
      if (oh < 0 || oh >= TC_OH) continue;
      for (int iw = 0; iw < TC_W; ++iw) {
        const int ow = iw * TC_SW - TC_PL + kw;
        if (ow < 0 || ow >= TC_OW) continue;
        acc = fma(TCONV_DZ((((uint)n * TC_OH + oh) * TC_OW + ow) * TC_O + o),
                  pool[x_off + (((uint)n * TC_H + ih) * TC_W + iw) * TC_I + i], acc);
      }
    }
  pool[dw_off + j] = acc;
}

__kernel void tconv_db(__global float* pool, uint y_off, uint dy_off, uint db_off) {
  const uint o = get_global_id(0);
  if (o >= TC_O) return;
  float s = 0.0f;
  for (uint p = 0; p < (uint)TC_N * TC_OH * TC_OW; ++p) s = s + TCONV_DZ(p * TC_O + o);
  pool[db_off + o] = s;
}
