/* cltrain's shared numerics: valid OpenCL C 1.2 and C++17.
 *
 * The CPU backend and the OpenCL kernels compute with these functions and in the orders that
 * include/cltrain/cltrain_backend.h states ("Numerics"), so that on a device that rounds
 * IEEE-754 single precision exactly (POCL) both backends give bitwise the same results. A
 * device's own exp/log are allowed several ulp of error and differ between drivers; these are
 * within about 1 ulp over the ranges training uses, and the same everywhere.
 *
 * OpenCL programs include this text before the kernel family (FP_CONTRACT OFF: no fused
 * multiply-add unless written as clt_fma).
 */
#ifndef CLTRAIN_NUMERICS_H
#define CLTRAIN_NUMERICS_H

#ifdef __OPENCL_VERSION__
#pragma OPENCL FP_CONTRACT OFF
#define CLT_FN static inline
#define clt_fma(a, b, c) fma((a), (b), (c))
#define clt_rint(x) rint(x)
#define clt_as_float(i) as_float(i)
#define clt_as_int(f) as_int(f)
#define clt_sqrt(x) sqrt(x)
#define clt_fabs(x) fabs(x)
#else
#include <cmath>
#include <cstdint>
#include <cstring>
#define CLT_FN static inline
static inline float clt_fma(float a, float b, float c) { return std::fma(a, b, c); }
static inline float clt_rint(float x) { return std::rint(x); }
static inline float clt_as_float(int32_t i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
static inline int32_t clt_as_int(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}
static inline float clt_sqrt(float x) { return std::sqrt(x); }
static inline float clt_fabs(float x) { return std::fabs(x); }
#endif

/* e^x. Below about -87.3 the result is 0, above 88.7 it is +inf. */
CLT_FN float clt_exp(float x) {
  if (x != x) return x; /* NaN stays NaN (and never reaches the integer conversion below) */
  if (x < -87.33654f) return 0.0f;
  if (x > 88.72283f) return clt_as_float(0x7f800000);
  /* x = n ln2 + r, |r| <= ln2/2 (Cody-Waite with a two-part ln2). */
  const float n = clt_rint(x * 1.44269504f);
  float r = clt_fma(n, -0.693145752f, x);
  r = clt_fma(n, -1.42860677e-6f, r);
  /* e^r by its Taylor polynomial to degree 7 (error below 1e-9 for |r| <= 0.35). */
  float p = 1.98412698e-4f;
  p = clt_fma(p, r, 1.38888889e-3f);
  p = clt_fma(p, r, 8.33333333e-3f);
  p = clt_fma(p, r, 4.16666667e-2f);
  p = clt_fma(p, r, 1.66666667e-1f);
  p = clt_fma(p, r, 0.5f);
  p = clt_fma(p, r, 1.0f);
  p = clt_fma(p, r, 1.0f);
  /* times 2^n, in two halves so that n down to -126 - 23 stays representable. */
  const int ni = (int)n;
  const int n1 = ni / 2;
  const int n2 = ni - n1;
  return p * clt_as_float((n1 + 127) << 23) * clt_as_float((n2 + 127) << 23);
}

/* Natural logarithm of a positive normal x (callers clamp: losses take log of clamp(p, 1e-7, 1));
   NaN gives NaN, so that a NaN prediction makes a NaN loss. */
CLT_FN float clt_log(float x) {
  if (x != x) return x;
  int bits = clt_as_int(x);
  int e = ((bits >> 23) & 0xff) - 127;
  float m = clt_as_float((bits & 0x007fffff) | 0x3f800000); /* in [1, 2) */
  if (m > 1.41421356f) {
    m = m * 0.5f;
    e = e + 1;
  }
  /* log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716. */
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  float p = 0.1111111111f;
  p = clt_fma(p, s2, 0.1428571429f);
  p = clt_fma(p, s2, 0.2f);
  p = clt_fma(p, s2, 0.3333333333f);
  p = p * s2;
  const float ef = (float)e;
  /* 2s + 2s p + e ln2, with ln2 in two parts. */
  const float hi = clt_fma(ef, 0.693145752f, 2.0f * s);
  return hi + clt_fma(2.0f * s, p, ef * 1.42860677e-6f);
}

/* tanh: e = exp(-2|x|), t = (1 - e) / (1 + e), with the sign of x. */
CLT_FN float clt_tanh(float x) {
  const float e = clt_exp(-2.0f * clt_fabs(x));
  const float t = (1.0f - e) / (1.0f + e);
  return x < 0.0f ? -t : t;
}

/* LOGISTIC: 1 / (1 + exp(-x)). */
CLT_FN float clt_logistic(float x) { return 1.0f / (1.0f + clt_exp(-x)); }

/* One LSTM step's element, LSTM_CELL_STATE and LSTM_CELL_OUTPUT (cltrain_ops.h): the roundings
   of the unfused LOGISTIC, TANH, MUL and ADD ops, so that the fused and unfused graphs agree
   bitwise. The backward recomputes the gates from their pre-activations. */
CLT_FN float clt_lstm_state(float zi, float zf, float zg, float c_prev) {
  const float i = clt_logistic(zi), f = clt_logistic(zf), g = clt_tanh(zg);
  const float fc = f * c_prev, ig = i * g;
  return fc + ig;
}

CLT_FN float clt_lstm_output(float zo, float c) {
  const float o = clt_logistic(zo), t = clt_tanh(c);
  return o * t;
}

/* dz of the input, forget and cell gates, and dc_prev (= dc * f), from dc. */
CLT_FN void clt_lstm_state_grad(float zi, float zf, float zg, float c_prev, float dc, float* dzi, float* dzf,
                                float* dzg, float* dc_prev) {
  const float i = clt_logistic(zi), f = clt_logistic(zf), g = clt_tanh(zg);
  *dzi = (dc * g) * (i * (1.0f - i));
  *dzf = (dc * c_prev) * (f * (1.0f - f));
  *dzg = (dc * i) * (1.0f - g * g);
  *dc_prev = dc * f;
}

/* dz of the output gate and h's part of dc, from dh. */
CLT_FN void clt_lstm_output_grad(float zo, float c, float dh, float* dzo, float* dc) {
  const float o = clt_logistic(zo), t = clt_tanh(c);
  *dzo = (dh * t) * (o * (1.0f - o));
  *dc = (dh * o) * (1.0f - t * t);
}

/* One GRU step's element, GRU_CELL (cltrain_ops.h), in the unfused ops' roundings. */
CLT_FN float clt_gru(float xz, float hz, float xr, float hr, float xn, float hn, float h_prev) {
  const float z = clt_logistic(xz + hz), r = clt_logistic(xr + hr);
  const float rh = r * hn;
  const float n = clt_tanh(xn + rh);
  const float zh = z * h_prev, omz = 1.0f - z;
  const float nn = omz * n;
  return zh + nn;
}

/* The gradients of the update, reset and candidate pre-activations (az, ar, an: xp's parts; hp's
   are az, ar and an * r) and dh_prev (= dh * z), from dh. */
CLT_FN void clt_gru_grad(float xz, float hz, float xr, float hr, float xn, float hn, float h_prev, float dh, float* az,
                         float* ar, float* an, float* ahn, float* dh_prev) {
  const float z = clt_logistic(xz + hz), r = clt_logistic(xr + hr);
  const float rh = r * hn;
  const float n = clt_tanh(xn + rh);
  const float omz = 1.0f - z;
  const float d_an = (dh * omz) * (1.0f - n * n);
  const float d_ar = (d_an * hn) * (r * (1.0f - r));
  const float dz = dh * h_prev + -(dh * n);
  *az = dz * (z * (1.0f - z));
  *ar = d_ar;
  *an = d_an;
  *ahn = d_an * r;
  *dh_prev = dh * z;
}

/* erf(x): x clamped to [-4, 4] (beyond, erf is +-1 in float), then x P(x^2) / Q(x^2) with the
   rational approximation Eigen and XLA use for float (a few ulp), each step one fma. */
CLT_FN float clt_erf(float x) {
  if (x != x) return x;
  const float c = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
  const float x2 = c * c;
  float p = clt_fma(x2, -2.72614225801306e-10f, 2.77068142495902e-08f);
  p = clt_fma(x2, p, -2.10102402082508e-06f);
  p = clt_fma(x2, p, -5.69250639462346e-05f);
  p = clt_fma(x2, p, -7.34990630326855e-04f);
  p = clt_fma(x2, p, -2.95459980854025e-03f);
  p = clt_fma(x2, p, -1.60960333262415e-02f);
  float q = clt_fma(x2, -1.45660718464996e-05f, -2.13374055278905e-04f);
  q = clt_fma(x2, q, -1.68282697438203e-03f);
  q = clt_fma(x2, q, -7.37332916720468e-03f);
  q = clt_fma(x2, q, -1.42647390514189e-02f);
  return (c * p) / q;
}

/* e^x - 1, accurate near 0 where clt_exp(x) - 1 cancels (ELU's negative side): Kahan's
   (u - 1) * x / log(u) with u = clt_exp(x), exact where u rounds to 1 or u - 1 to -1. */
CLT_FN float clt_expm1(float x) {
  const float u = clt_exp(x);
  if (u == 1.0f) return x;
  const float um = u - 1.0f;
  if (um == -1.0f || u - u != 0.0f) return um; /* -1, or +inf / NaN as they are */
  return (um * x) / clt_log(u);
}

/* log(x) for any float, as the LOG op takes it: NaN for x < 0 and NaN, -inf for 0, +inf for +inf;
   a subnormal x scaled by 2^23 into clt_log's range first. */
CLT_FN float clt_log_any(float x) {
  const float inf = clt_as_float(0x7f800000);
  if (x != x || x == inf) return x;
  if (x < 0.0f) return inf - inf;
  if (x == 0.0f) return -inf;
  if (x < 1.17549435e-38f) return clt_log(x * 8388608.0f) - 15.9423852f; /* 23 ln 2 */
  return clt_log(x);
}

/* The element-wise ops whose derivative reads x (cltrain_ops.h): y = clt_pointwise(fn, x, alpha),
   dx = clt_pointwise_grad(fn, x, dy, alpha), fn one of these. */
#define CLT_PW_LEAKY_RELU 0
#define CLT_PW_ELU 1
#define CLT_PW_ABS 2
#define CLT_PW_SQUARE 3
#define CLT_PW_EXP 4
#define CLT_PW_SQRT 5
#define CLT_PW_LOG 6

CLT_FN float clt_pointwise(int fn, float x, float alpha) {
  switch (fn) {
    case CLT_PW_LEAKY_RELU: return x > 0.0f ? x : alpha * x;
    case CLT_PW_ELU: return x > 0.0f ? x : clt_expm1(x);
    case CLT_PW_ABS: return clt_fabs(x);
    case CLT_PW_SQUARE: return x * x;
    case CLT_PW_EXP: return clt_exp(x);
    case CLT_PW_SQRT: return clt_sqrt(x);
    default: return clt_log_any(x);
  }
}

CLT_FN float clt_pointwise_grad(int fn, float x, float dy, float alpha) {
  switch (fn) {
    case CLT_PW_LEAKY_RELU: return x > 0.0f ? dy : alpha * dy;
    case CLT_PW_ELU: return x > 0.0f ? dy : dy * clt_exp(x);
    case CLT_PW_ABS: return x > 0.0f ? dy : (x < 0.0f ? -dy : 0.0f);
    case CLT_PW_SQUARE: return dy * (2.0f * x);
    case CLT_PW_EXP: return dy * clt_exp(x);
    case CLT_PW_SQRT: return (0.5f * dy) / clt_sqrt(x);
    default: return dy / x;
  }
}

#endif /* CLTRAIN_NUMERICS_H */
