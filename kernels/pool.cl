// MAX_POOL_2D and AVERAGE_POOL_2D over NHWC, forward and backward in one program.
//
// Definitions: N, H, W, C (x), OH, OW (y), FH, FW (filter), SH, SW (stride), PT, PL (padding
// before, top and left). Windows never read padding: a window covers the rows
// [oh * SH - PT, oh * SH - PT + FH) clipped to [0, H), likewise the columns.
//
// Numerics (cltrain_backend.h): max over the window in (kh, kw) order, the first maximum wins;
// average = (s = 0; s = s + x over the window's inside positions) / count. Backward gathers, one
// work-item per element of dx: dx = s = 0; s = s + (dy, max: where this element is the window's
// first maximum; average: dy / count) over the windows (oh, ow) that take it, in increasing order.
// Storage (common.cl): X_H for x, Y_H for y, DY_H for dy, DX_H for dx.

// The clipped window of output (oh, ow): rows [*h0, *h1), columns [*w0, *w1).
void pool_window(const int oh, const int ow, int* h0, int* h1, int* w0, int* w1) {
  const int hs = oh * SH - PT, ws = ow * SW - PL;
  *h0 = max(hs, 0);
  *h1 = min(hs + FH, H);
  *w0 = max(ws, 0);
  *w1 = min(ws + FW, W);
}

// The range of outputs [*o0, *o1) whose windows (start o * S - P, length F) contain i, along a
// dim of OUT outputs.
void pool_takers(const int i, const int S, const int P, const int F, const int OUT, int* o0, int* o1) {
  // o * S - P <= i  and  i < o * S - P + F   <=>   (i + P - F) / S < o <= (i + P) / S
  const int hi = (i + P) / S;        // i + P >= 0
  const int lo_num = i + P - F + 1;  // o >= ceil(lo_num / S)
  const int lo = lo_num <= 0 ? 0 : (lo_num + S - 1) / S;
  *o0 = lo;
  *o1 = min(hi + 1, OUT);
}

// Element i of dx: its image n, position (ih, iw), channel c, and the outputs whose windows take
// it, [*oh0, *oh1) x [*ow0, *ow1).
void pool_dx_element(const uint i, int* n, int* ih, int* iw, int* c, int* oh0, int* oh1, int* ow0, int* ow1) {
  *c = i % C, *iw = (i / C) % W, *ih = (i / (C * W)) % H, *n = i / (C * W * H);
  pool_takers(*ih, SH, PT, FH, OH, oh0, oh1);
  pool_takers(*iw, SW, PL, FW, OW, ow0, ow1);
}

// Whether position self (h * W + w, inside window (oh, ow)) is the window's first maximum: the
// answer of the forward's scan (m = first value, then m = v wherever v > m; the last position
// that set m wins), leaving as soon as it is known. Window order is increasing h * W + w. Before
// self: m is the running maximum; self can only win if xs > m, and once that fails it fails for
// good (m never decreases, and a NaN m stays NaN). After self: any v > xs takes over.
bool max_pool_takes(__global const CLT_T(X_H) * x, const int oh, const int ow, const int self, const float xs) {
  int h0, h1, w0, w1;
  pool_window(oh, ow, &h0, &h1, &w0, &w1);
  float m = 0.0f;
  bool first = true;
  for (int h = h0; h < h1; ++h)
    for (int w = w0; w < w1; ++w) {
      const int at = h * W + w;
      const float v = CLT_LD(X_H, x, at * C);
      if (at < self) {
        m = first || v > m ? v : m;
        first = false;
        if (!(xs > m)) return false;
      } else if (at > self && v > xs) {
        return false;
      }
    }
  return true;
}

// ARGMAX: also writes the window position (kh * FW + kw) of the first maximum as a byte.
#if VEC == 1
typedef int ivec;
#define ARGMAX_STORE(a, p) (*(p) = (uchar)(a))
#else
typedef CAT(int, VEC) ivec;
#define ARGMAX_STORE(a, p) CAT(vstore, VEC)(CAT(convert_uchar, VEC)(a), 0, (p))
#endif
// One work-item per VEC neighbouring channels of an output position (VEC divides C), each lane
// its own scan: the same compares and selects as one lane at a time.
__kernel void max_pool_forward(__global float* pool, uint x_off, uint y_off, uint argmax_off) {
  const uint i = get_global_id(0) * VEC;
  if (i >= N * OH * OW * C) return;
  const int c = i % C, ow = (i / C) % OW, oh = (i / (C * OW)) % OH, n = i / (C * OW * OH);
  __global const CLT_T(X_H)* x = CLT_PTR(X_H) + x_off + (uint)n * (H * W * C) + c;
  int h0, h1, w0, w1;
  pool_window(oh, ow, &h0, &h1, &w0, &w1);
  vfloat m = CLT_VLD(X_H, x + (h0 * W + w0) * C);
  ivec arg = (ivec)((h0 - (oh * SH - PT)) * FW + (w0 - (ow * SW - PL)));
  for (int h = h0; h < h1; ++h)
    for (int w = w0; w < w1; ++w) {
      const vfloat v = CLT_VLD(X_H, x + (h * W + w) * C);
      const ivec take = v > m;
      m = select(m, v, take);
      arg = select(arg, (ivec)((h - (oh * SH - PT)) * FW + (w - (ow * SW - PL))), take);
    }
  CLT_VST(Y_H, m, CLT_PTR(Y_H) + y_off + i);
#if ARGMAX
  ARGMAX_STORE(arg, (__global uchar*)(pool + argmax_off) + i);
#endif
}

// dy of a window, with the derivative of the producer's activation (ACT, from the window's
// output y, which is the input at its maximum) when ACT != 0.
#if ACT
#define POOL_GRAD(k) clt_act_grad(CLT_LD(Y_H, yv, k), CLT_LD(DY_H, dy, k))
#else
#define POOL_GRAD(k) CLT_LD(DY_H, dy, k)
#endif

// From argmax: dx = s = 0; s = s + dy over the windows (oh, ow) in increasing order whose
// maximum is this element.
__kernel void max_pool_backward_argmax(__global float* pool, uint argmax_off, uint dy_off, uint y_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= N * H * W * C) return;
  int n, ih, iw, c, oh0, oh1, ow0, ow1;
  pool_dx_element(i, &n, &ih, &iw, &c, &oh0, &oh1, &ow0, &ow1);
  const uint base = (uint)n * (OH * OW * C) + c;
  __global const uchar* am = (__global const uchar*)(pool + argmax_off) + base;
  __global const CLT_T(DY_H)* dy = CLT_PTR(DY_H) + dy_off + base;
  __global const CLT_T(Y_H)* yv = CLT_PTR(Y_H) + y_off + base;
  float s = 0.0f;
  for (int oh = oh0; oh < oh1; ++oh)
    for (int ow = ow0; ow < ow1; ++ow) {
      const int k = (oh * OW + ow) * C;
      const int here = (ih - (oh * SH - PT)) * FW + (iw - (ow * SW - PL));
      if (am[k] == here) s = s + POOL_GRAD(k);
    }
  CLT_ST(DX_H, CLT_PTR(DX_H) + dx_off, i, s);
}

// From argmax, where windows do not overlap (stride >= filter): one work-item per window writes
// its inside positions, s = 0 + dy at the maximum and 0 elsewhere (the gather's sums, each over
// the one window that takes the element). dx is filled with zeros first where windows leave
// positions out.
__kernel void max_pool_backward_scatter(__global float* pool, uint argmax_off, uint dy_off, uint y_off, uint dx_off) {
  const uint i = get_global_id(0) * VEC;  // VEC neighbouring channels of one window (VEC divides C)
  if (i >= N * OH * OW * C) return;
  const int c = i % C, ow = (i / C) % OW, oh = (i / (C * OW)) % OH, n = i / (C * OW * OH);
  __global const uchar* am = (__global const uchar*)(pool + argmax_off);
  __global const CLT_T(DY_H)* dy = CLT_PTR(DY_H) + dy_off;
  __global const CLT_T(Y_H)* yv = CLT_PTR(Y_H) + y_off;
#if ACT  // XACT = ACT: CLT_XACT_GRAD is clt_act_grad's selects on vfloat lanes
  const vfloat g = (vfloat)(0.0f) + CLT_XACT_GRAD(CLT_VLD(Y_H, yv + i), CLT_VLD(DY_H, dy + i));
#else
  const vfloat g = (vfloat)(0.0f) + CLT_VLD(DY_H, dy + i);
#endif
#if VEC == 1
  const ivec arg = am[i];
#else
  const ivec arg = CAT(convert_int, VEC)(CAT(vload, VEC)(0, am + i));
#endif
  int h0, h1, w0, w1;
  pool_window(oh, ow, &h0, &h1, &w0, &w1);
  __global CLT_T(DX_H)* dx = CLT_PTR(DX_H) + dx_off + (uint)n * (H * W * C) + c;
  for (int h = h0; h < h1; ++h)
    for (int w = w0; w < w1; ++w) {
      const int here = (h - (oh * SH - PT)) * FW + (w - (ow * SW - PL));
      CLT_VST(DX_H, select((vfloat)(0.0f), g, arg == (ivec)(here)), dx + (h * W + w) * C);
    }
}

__kernel void max_pool_backward(__global float* pool, uint x_off, uint dy_off, uint y_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= N * H * W * C) return;
  int n, ih, iw, c, oh0, oh1, ow0, ow1;
  pool_dx_element(i, &n, &ih, &iw, &c, &oh0, &oh1, &ow0, &ow1);
  __global const CLT_T(X_H)* x = CLT_PTR(X_H) + x_off + (uint)n * (H * W * C) + c;
  __global const CLT_T(DY_H)* dy = CLT_PTR(DY_H) + dy_off + (uint)n * (OH * OW * C) + c;
  const int self = ih * W + iw;
  const float xs = CLT_LD(X_H, x, self * C);
  __global const CLT_T(Y_H)* yv = CLT_PTR(Y_H) + y_off + (uint)n * (OH * OW * C) + c;
  float s = 0.0f;
  for (int oh = oh0; oh < oh1; ++oh)
    for (int ow = ow0; ow < ow1; ++ow)
      if (max_pool_takes(x, oh, ow, self, xs)) s = s + POOL_GRAD((oh * OW + ow) * C);
  CLT_ST(DX_H, CLT_PTR(DX_H) + dx_off, i, s);
}

__kernel void avg_pool_forward(__global float* pool, uint x_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= N * OH * OW * C) return;
  const int c = i % C, ow = (i / C) % OW, oh = (i / (C * OW)) % OH, n = i / (C * OW * OH);
  __global const CLT_T(X_H)* x = CLT_PTR(X_H) + x_off + (uint)n * (H * W * C) + c;
  int h0, h1, w0, w1;
  pool_window(oh, ow, &h0, &h1, &w0, &w1);
  float s = 0.0f;
  for (int h = h0; h < h1; ++h)
    for (int w = w0; w < w1; ++w) s = s + CLT_LD(X_H, x, (h * W + w) * C);
  CLT_ST(Y_H, CLT_PTR(Y_H) + y_off, i, s / (float)((h1 - h0) * (w1 - w0)));
}

__kernel void avg_pool_backward(__global float* pool, uint dy_off, uint dx_off) {
  const uint i = get_global_id(0);
  if (i >= N * H * W * C) return;
  int n, ih, iw, c, oh0, oh1, ow0, ow1;
  pool_dx_element(i, &n, &ih, &iw, &c, &oh0, &oh1, &ow0, &ow1);
  __global const CLT_T(DY_H)* dy = CLT_PTR(DY_H) + dy_off + (uint)n * (OH * OW * C) + c;
  float s = 0.0f;
  for (int oh = oh0; oh < oh1; ++oh)
    for (int ow = ow0; ow < ow1; ++ow) {
      int h0, h1, w0, w1;
      pool_window(oh, ow, &h0, &h1, &w0, &w1);
      s = s + CLT_LD(DY_H, dy, (oh * OW + ow) * C) / (float)((h1 - h0) * (w1 - w0));
    }
  CLT_ST(DX_H, CLT_PTR(DX_H) + dx_off, i, s);
}
