// TRANSPOSE_CONV: x [N,H,W,I], W [O,KH,KW,I], optional b [O], y [N,OH,OW,O]: the transpose of the
// CONV_2D from y's shape to x's (same weights, padding, strides); output position oh reads input
// ih where oh = ih * stride - pad_top + kh. The chains of cltrain_ops.h's numerics, dz = act'(y) dy:
//   y[n,oh,ow,o]   fma over (kh, kw, i), i fastest, over the taps whose input position is whole
//                  and inside x; then + b[o], act;
//   dx[n,ih,iw,i]  fma over (kh, kw, o), o fastest, of dz * W, positions outside y skipped;
//   dW[o,kh,kw,i]  fma over (n, ih, iw) of dz * x, positions outside y skipped;
//   db[o]          sum over (n, oh, ow) of dz.
#include <cmath>
#include <vector>

#include "cpu_op.h"
#include "window_geometry.h"

namespace cltrain {
namespace cpu {
namespace {

struct TConv {
  int64_t n = 0, h = 0, w = 0, in_ch = 0, oh = 0, ow = 0, out_ch = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, pad_top = 0, pad_left = 0;
};

bool rank4(const TensorRef& t) { return t.present() && t.rank() == 4; }

// The geometry from x (or dx), W and y (or dy): x must be what the CONV_2D makes of y's shape.
std::string geometry(const StepView& s, const TensorRef& x, const TensorRef& w, const TensorRef& y, TConv* g) {
  if (!rank4(x) || !rank4(w) || !rank4(y))
    return "x " + shape_string(x) + ", W " + shape_string(w) + " and y " + shape_string(y) + " must be rank 4";
  if (w.dim(3) != x.dim(3) || w.dim(0) != y.dim(3) || x.dim(0) != y.dim(0))
    return "x " + shape_string(x) + ", W " + shape_string(w) + " and y " + shape_string(y) +
           " are not [N,H,W,I], [O,KH,KW,I] and [N,OH,OW,O]";
  const cltrain_op_params& p = s.params();
  AxisGeometry gh, gw;
  if (std::string e = axis_geometry(p.padding, y.dim(1), w.dim(1), p.stride_h, 1, "height", &gh); !e.empty()) return e;
  if (std::string e = axis_geometry(p.padding, y.dim(2), w.dim(2), p.stride_w, 1, "width", &gw); !e.empty()) return e;
  if (gh.out != x.dim(1) || gw.out != x.dim(2))
    return "x " + shape_string(x) + " is not what a convolution of y " + shape_string(y) + " with W " +
           shape_string(w) + " gives";
  *g = {x.dim(0), x.dim(1), x.dim(2),   x.dim(3),   y.dim(1),      y.dim(2),     y.dim(3),
        w.dim(1), w.dim(2), p.stride_h, p.stride_w, gh.pad_before, gw.pad_before};
  return {};
}

std::string check_forward(const StepView& s) {
  TConv g;
  if (std::string e = require_slots(s, 3, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "x"); !e.empty()) return e;
  if (std::string e = require(s.in[1], "W"); !e.empty()) return e;
  if (std::string e = require(s.out[0], "y"); !e.empty()) return e;
  if (std::string e = geometry(s, s.in[0], s.in[1], s.out[0], &g); !e.empty()) return e;
  if (s.in[2].present())
    if (std::string e = require_elements(s.in[2], static_cast<uint64_t>(g.out_ch), "b"); !e.empty()) return e;
  return require_activation(s);
}

std::string check_backward(const StepView& s) {
  TConv g;
  const TensorRef &x = s.in[0], &w = s.in[1], &y = s.in[2], &dy = s.in[3];
  const TensorRef &dx = s.out[0], &dw = s.out[1], &db = s.out[2];
  if (std::string e = require_slots(s, 4, 3); !e.empty()) return e;
  if (std::string e = require(w, "W"); !e.empty()) return e;
  if (std::string e = require(dy, "dy"); !e.empty()) return e;
  if (std::string e = require_activation(s); !e.empty()) return e;
  if (s.params().dx_activation != CLTRAIN_ACT_NONE) return "dx_activation is not supported";
  if (dw.present() && !x.present()) return "dW is requested but x is missing";
  const TensorRef& in = x.present() ? x : dx;
  if (!in.present()) return "neither x nor dx is given (the input's shape)";
  if (x.present() && dx.present() && x.elements != dx.elements)
    return "dx " + shape_string(dx) + " differs from x " + shape_string(x);
  if (std::string e = geometry(s, in, w, dy, &g); !e.empty()) return e;
  if (s.params().activation != CLTRAIN_ACT_NONE)
    if (std::string e = require_elements(y, dy.elements, "y (the activation's output)"); !e.empty()) return e;
  if (dw.present())
    if (std::string e = require_elements(dw, w.elements, "dW"); !e.empty()) return e;
  if (db.present())
    if (std::string e = require_elements(db, static_cast<uint64_t>(g.out_ch), "db"); !e.empty()) return e;
  return {};
}

// The input position that output position o reads through tap k along one axis, or -1.
int64_t input_at(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t extent) {
  const int64_t t = o + pad - k;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t i = t / stride;
  return i < extent ? i : -1;
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  TConv g;
  geometry(s, s.in[0], s.in[1], s.out[0], &g);
  const float *x = s.in[0].data, *w = s.in[1].data, *b = s.in[2].data;
  float* y = s.out[0].data;
  const int32_t act = s.params().activation;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.oh; ++oh)
      for (int64_t ow = 0; ow < g.ow; ++ow)
        for (int64_t o = 0; o < g.out_ch; ++o) {
          float acc = 0.0f;
          for (int64_t kh = 0; kh < g.kh; ++kh) {
            const int64_t ih = input_at(oh, kh, g.sh, g.pad_top, g.h);
            if (ih < 0) continue;
            for (int64_t kw = 0; kw < g.kw; ++kw) {
              const int64_t iw = input_at(ow, kw, g.sw, g.pad_left, g.w);
              if (iw < 0) continue;
              const float* xp = x + ((n * g.h + ih) * g.w + iw) * g.in_ch;
              const float* wp = w + ((o * g.kh + kh) * g.kw + kw) * g.in_ch;
              for (int64_t i = 0; i < g.in_ch; ++i) acc = std::fma(xp[i], wp[i], acc);
            }
          }
          y[((n * g.oh + oh) * g.ow + ow) * g.out_ch + o] = apply_activation(act, b ? acc + b[o] : acc);
        }
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  TConv g;
  const TensorRef& in = s.in[0].present() ? s.in[0] : s.out[0];
  geometry(s, in, s.in[1], s.in[3], &g);
  const float *x = s.in[0].data, *w = s.in[1].data, *y = s.in[2].data, *dy = s.in[3].data;
  float *dx = s.out[0].data, *dw = s.out[1].data, *db = s.out[2].data;
  const int32_t act = s.params().activation;
  std::vector<float> dz(dy, dy + s.in[3].elements);
  if (act != CLTRAIN_ACT_NONE)
    for (size_t j = 0; j < dz.size(); ++j) dz[j] = activation_backward(act, y[j], dy[j]);
  const auto dz_at = [&](int64_t n, int64_t oh, int64_t ow) {
    return dz.data() + ((n * g.oh + oh) * g.ow + ow) * g.out_ch;
  };
  if (dx)
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t ih = 0; ih < g.h; ++ih)
        for (int64_t iw = 0; iw < g.w; ++iw)
          for (int64_t i = 0; i < g.in_ch; ++i) {
            float acc = 0.0f;
            for (int64_t kh = 0; kh < g.kh; ++kh) {
              const int64_t oh = ih * g.sh - g.pad_top + kh;
              if (oh < 0 || oh >= g.oh) continue;
              for (int64_t kw = 0; kw < g.kw; ++kw) {
                const int64_t ow = iw * g.sw - g.pad_left + kw;
                if (ow < 0 || ow >= g.ow) continue;
                const float* zp = dz_at(n, oh, ow);
                for (int64_t o = 0; o < g.out_ch; ++o)
                  acc = std::fma(zp[o], w[((o * g.kh + kh) * g.kw + kw) * g.in_ch + i], acc);
              }
            }
            dx[((n * g.h + ih) * g.w + iw) * g.in_ch + i] = acc;
          }
  if (dw)
    for (int64_t o = 0; o < g.out_ch; ++o)
      for (int64_t kh = 0; kh < g.kh; ++kh)
        for (int64_t kw = 0; kw < g.kw; ++kw)
          for (int64_t i = 0; i < g.in_ch; ++i) {
            float acc = 0.0f;
            for (int64_t n = 0; n < g.n; ++n)
              for (int64_t ih = 0; ih < g.h; ++ih) {
                const int64_t oh = ih * g.sh - g.pad_top + kh;
                if (oh < 0 || oh >= g.oh) continue;
                for (int64_t iw = 0; iw < g.w; ++iw) {
                  const int64_t ow = iw * g.sw - g.pad_left + kw;
                  if (ow < 0 || ow >= g.ow) continue;
                  acc = std::fma(dz_at(n, oh, ow)[o], x[((n * g.h + ih) * g.w + iw) * g.in_ch + i], acc);
                }
              }
            dw[((o * g.kh + kh) * g.kw + kw) * g.in_ch + i] = acc;
          }
  if (db)
    for (int64_t o = 0; o < g.out_ch; ++o) {
      float acc = 0.0f;
      for (int64_t p = 0; p < g.n * g.oh * g.ow; ++p) acc = acc + dz[static_cast<size_t>(p * g.out_ch + o)];
      db[o] = acc;
    }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_TRANSPOSE_CONV = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
