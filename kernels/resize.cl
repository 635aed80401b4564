// RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR as cltrain_ops.h defines them (the host side of the
// same float arithmetic: common/resize_geometry.h). Float32 storage.
//
// Definitions: RS_N, RS_H, RS_W, RS_C (x [N,H,W,C]), RS_OH, RS_OW (y), RS_BILINEAR (1: bilinear,
// 0: nearest), RS_ALIGN, RS_HALF (align_corners, half_pixel_centers). The scales sh, sw are
// arguments (float bits as the host computed them).

// Bilinear: output position o reads lo with weight 1 - t and hi with weight t.
static inline void rs_bilinear(int o, float scale, int in, int* lo, int* hi, float* t) {
  const float f = RS_HALF ? ((float)o + 0.5f) * scale - 0.5f : (float)o * scale;
  *lo = max((int)floor(f), 0);
  *hi = min((int)ceil(f), in - 1);
  *t = f - (float)*lo;
}

// Nearest: the input position output position o copies.
static inline int rs_nearest(int o, float scale, int in) {
  const float f = ((float)o + (RS_HALF ? 0.5f : 0.0f)) * scale;
  int i = min((int)(RS_ALIGN ? round(f) : floor(f)), in - 1);
  return RS_HALF ? max(i, 0) : i;
}

// Output positions [*begin, *end) that include every one reading input position i.
static inline void rs_candidates(int i, float scale, int out, int* begin, int* end) {
  if (!(scale > 0.0f)) {
    *begin = 0;
    *end = out;
    return;
  }
  *begin = max((int)floor((float)(i - 2) / scale) - 2, 0);
  *end = min((int)ceil((float)(i + 2) / scale) + 3, out);
}

// One work-item per element of y.
__kernel void resize_forward(__global float* pool, uint x_off, uint y_off, float sh, float sw) {
  const uint j = get_global_id(0);
  if (j >= (uint)RS_N * RS_OH * RS_OW * RS_C) return;
  const int c = j % RS_C;
  const int ow = (j / RS_C) % RS_OW;
  const int oh = (j / RS_C / RS_OW) % RS_OH;
  const uint xb = x_off + (j / RS_C / RS_OW / RS_OH) * (uint)(RS_H * RS_W * RS_C) + c;
#if RS_BILINEAR
  int h0, h1, w0, w1;
  float th, tw;
  rs_bilinear(oh, sh, RS_H, &h0, &h1, &th);
  rs_bilinear(ow, sw, RS_W, &w0, &w1, &tw);
  float acc = pool[xb + (h0 * RS_W + w0) * RS_C] * (1.0f - th) * (1.0f - tw);
  acc = acc + pool[xb + (h1 * RS_W + w0) * RS_C] * th * (1.0f - tw);
  acc = acc + pool[xb + (h0 * RS_W + w1) * RS_C] * (1.0f - th) * tw;
  acc = acc + pool[xb + (h1 * RS_W + w1) * RS_C] * th * tw;
  pool[y_off + j] = acc;
#else
  pool[y_off + j] = pool[xb + (rs_nearest(oh, sh, RS_H) * RS_W + rs_nearest(ow, sw, RS_W)) * RS_C];
#endif
}

// One work-item per element of dx: the sum over the output positions that read it, in
// increasing (oh, ow), and per position over its taps in order.
__kernel void resize_backward(__global float* pool, uint dy_off, uint dx_off, float sh, float sw) {
  const uint j = get_global_id(0);
  if (j >= (uint)RS_N * RS_H * RS_W * RS_C) return;
  const int c = j % RS_C;
  const int iw = (j / RS_C) % RS_W;
  const int ih = (j / RS_C / RS_W) % RS_H;
  const uint gb = dy_off + (j / RS_C / RS_W / RS_H) * (uint)(RS_OH * RS_OW * RS_C) + c;
  int h_begin, h_end, w_begin, w_end;
  rs_candidates(ih, sh, RS_OH, &h_begin, &h_end);
  rs_candidates(iw, sw, RS_OW, &w_begin, &w_end);
  float acc = 0.0f;
  for (int oh = h_begin; oh < h_end; ++oh)
    for (int ow = w_begin; ow < w_end; ++ow) {
      const float g = pool[gb + (oh * RS_OW + ow) * RS_C];
#if RS_BILINEAR
      int h0, h1, w0, w1;
      float th, tw;
      rs_bilinear(oh, sh, RS_H, &h0, &h1, &th);
      rs_bilinear(ow, sw, RS_W, &w0, &w1, &tw);
      if (h0 == ih && w0 == iw) acc = acc + g * (1.0f - th) * (1.0f - tw);
      if (h1 == ih && w0 == iw) acc = acc + g * th * (1.0f - tw);
      if (h0 == ih && w1 == iw) acc = acc + g * (1.0f - th) * tw;
      if (h1 == ih && w1 == iw) acc = acc + g * th * tw;
#else
      if (rs_nearest(oh, sh, RS_H) == ih && rs_nearest(ow, sw, RS_W) == iw) acc = acc + g;
#endif
    }
  pool[dx_off + j] = acc;
}
