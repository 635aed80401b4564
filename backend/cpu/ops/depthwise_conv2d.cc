// DEPTHWISE_CONV_2D: x [N,H,W,C], W [1,KH,KW,C*M], optional b [C*M], y [N,OH,OW,C*M]; output
// channel c*M + j reads input channel c. The chains of cltrain_backend.h's Numerics:
//   y[.., oc]       fma over (kh, kw) of x[.., oc / M] * W[kh,kw,oc], taps outside x skipped;
//   dW[kh,kw,oc]    fma over (n, oh, ow) of dz * x, positions whose tap is outside x skipped;
//   db[oc]          sum over (n, oh, ow) of dz;
//   dx[n,ih,iw,c]   sum over the (kh, kw) that reach it of (fma over j of dz[.., c*M+j] * W[.., c*M+j]).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_op.h"
#include "fma_chain.h"
#include "parallel.h"
#include "window.h"

namespace cltrain {
namespace cpu {
namespace {

struct Depthwise {
  Window win;
  int64_t channels = 0, multiplier = 0;
  int64_t out_ch() const { return channels * multiplier; }
};

std::string geometry(const StepView& s, const TensorRef& x, const TensorRef& w, Depthwise* d) {
  if (std::string e = require_rank4(w, "W"); !e.empty()) return e;
  if (std::string e = require_rank4(x, "x"); !e.empty()) return e;
  d->channels = x.dim(3);
  if (w.dim(0) != 1 || w.dim(1) < 1 || w.dim(2) < 1 || d->channels < 1 || w.dim(3) < 1 || w.dim(3) % d->channels != 0)
    return "W " + shape_string(w) + " is not [1,KH,KW,C*M] for x " + shape_string(x);
  d->multiplier = w.dim(3) / d->channels;
  const cltrain_op_params& p = s.params();
  if (p.depth_multiplier != 0 && p.depth_multiplier != d->multiplier)
    return "depth multiplier " + std::to_string(p.depth_multiplier) + " does not match W " + shape_string(w) +
           " for x " + shape_string(x);
  return make_window(p, x, w.dim(1), w.dim(2), p.dilation_h, p.dilation_w, &d->win);
}

std::string check_forward(const StepView& s) {
  Depthwise d;
  if (std::string e = require_slots(s, 3, 1); !e.empty()) return e;
  if (std::string e = geometry(s, s.in[0], s.in[1], &d); !e.empty()) return e;
  if (s.in[2].present())
    if (std::string e = require_elements(s.in[2], static_cast<uint64_t>(d.out_ch()), "b"); !e.empty()) return e;
  if (std::string e = require_window_output(d.win, s.out[0], d.out_ch(), "y"); !e.empty()) return e;
  return require_activation(s);
}

std::string check_backward(const StepView& s) {
  Depthwise d;
  const TensorRef &x = s.in[0], &w = s.in[1], &y = s.in[2], &dy = s.in[3];
  const TensorRef &dx = s.out[0], &dw = s.out[1], &db = s.out[2];
  if (std::string e = require_slots(s, 4, 3); !e.empty()) return e;
  if (std::string e = require_activation(s); !e.empty()) return e;
  if (std::string e = require_dx_activation(s); !e.empty()) return e;
  if (dw.present() && !x.present()) return "dW is requested but x is missing";
  if (x.present() && dx.present() &&
      !(x.desc->rank == dx.desc->rank && std::equal(x.desc->dims, x.desc->dims + x.rank(), dx.desc->dims)))
    return "dx " + shape_string(dx) + " differs from x " + shape_string(x);
  const TensorRef& in = x.present() ? x : dx;
  if (in.present()) {
    if (std::string e = geometry(s, in, w, &d); !e.empty()) return e;
    if (std::string e = require_window_output(d.win, dy, d.out_ch(), "dy"); !e.empty()) return e;
  } else {  // only db: no geometry needed
    if (std::string e = require_rank4(w, "W"); !e.empty()) return e;
    if (std::string e = require_rank4(dy, "dy"); !e.empty()) return e;
    if (dy.dim(3) != w.dim(3)) return "dy " + shape_string(dy) + " does not have W's output channels";
    d.channels = w.dim(3);
    d.multiplier = 1;
  }
  if (s.params().activation != CLTRAIN_ACT_NONE)
    if (std::string e = require_elements(y, dy.elements, "y (the activation's output)"); !e.empty()) return e;
  if (dw.present())
    if (std::string e = require_elements(dw, w.elements, "dW"); !e.empty()) return e;
  if (db.present())
    if (std::string e = require_elements(db, static_cast<uint64_t>(d.out_ch()), "db"); !e.empty()) return e;
  return {};
}

// x's row of C channels as C*M values (each repeated M times), or the row itself when M = 1.
const float* expanded(const Depthwise& d, const float* xr, std::vector<float>* buf) {
  if (d.multiplier == 1) return xr;
  buf->resize(static_cast<size_t>(d.out_ch()));
  for (int64_t c = 0; c < d.channels; ++c)
    for (int64_t j = 0; j < d.multiplier; ++j) (*buf)[c * d.multiplier + j] = xr[c];
  return buf->data();
}

void forward(const Depthwise& d, const float* x, const float* w, const float* b, float* y, int32_t act) {
  const WindowAxis &wh = d.win.h, &ww = d.win.w;
  const int64_t C = d.channels, OC = d.out_ch();
  const int64_t rows = d.win.batch * wh.out;
  std::fill(y, y + rows * ww.out * OC, 0.0f);
  parallel_for(rows, items_per_thread(ww.out * OC * wh.filter * ww.filter), [&](int64_t begin, int64_t end) {
    std::vector<float> buf;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / wh.out, oh = row % wh.out;
      int64_t kh_lo, kh_hi, kw_lo, kw_hi;
      wh.taps(oh, &kh_lo, &kh_hi);
      for (int64_t ow = 0; ow < ww.out; ++ow) {
        ww.taps(ow, &kw_lo, &kw_hi);
        float* acc = y + (row * ww.out + ow) * OC;
        for (int64_t kh = kh_lo; kh < kh_hi; ++kh)
          for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
            const float* xr = x + ((n * wh.in + wh.pos(oh, kh)) * ww.in + ww.pos(ow, kw)) * C;
            fma_elementwise(acc, expanded(d, xr, &buf), w + (kh * ww.filter + kw) * OC, OC);
          }
        if (b)
          for (int64_t o = 0; o < OC; ++o) acc[o] = acc[o] + b[o];
        apply_activation(act, acc, static_cast<uint64_t>(OC));
      }
    }
  });
}

void filter_grad(const Depthwise& d, const float* x, const float* dz, float* dw) {
  const WindowAxis &wh = d.win.h, &ww = d.win.w;
  const int64_t C = d.channels, OC = d.out_ch();
  std::fill(dw, dw + wh.filter * ww.filter * OC, 0.0f);
  for (int64_t n = 0; n < d.win.batch; ++n) {  // images outer: each chain still runs in order
    parallel_for(wh.filter * ww.filter, items_per_thread(wh.out * ww.out * OC), [&](int64_t begin, int64_t end) {
      std::vector<float> buf;
      for (int64_t tap = begin; tap < end; ++tap) {
        const int64_t kh = tap / ww.filter, kw = tap % ww.filter;
        float* acc = dw + tap * OC;
        for (int64_t oh = 0; oh < wh.out; ++oh) {
          const int64_t ih = wh.pos(oh, kh);
          if (ih < 0 || ih >= wh.in) continue;
          for (int64_t ow = 0; ow < ww.out; ++ow) {
            const int64_t iw = ww.pos(ow, kw);
            if (iw < 0 || iw >= ww.in) continue;
            const float* xr = x + ((n * wh.in + ih) * ww.in + iw) * C;
            fma_elementwise(acc, dz + ((n * wh.out + oh) * ww.out + ow) * OC, expanded(d, xr, &buf), OC);
          }
        }
      }
    });
  }
}

void input_grad(const Depthwise& d, const float* w, const float* dz, float* dx) {
  const WindowAxis &wh = d.win.h, &ww = d.win.w;
  const int64_t C = d.channels, M = d.multiplier, OC = d.out_ch();
  const int64_t rows = d.win.batch * wh.in;
  std::fill(dx, dx + rows * ww.in * C, 0.0f);
  parallel_for(rows, items_per_thread(ww.in * OC * wh.filter * ww.filter), [&](int64_t begin, int64_t end) {
    std::vector<float> t(static_cast<size_t>(C));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / wh.in, ih = row % wh.in;
      for (int64_t iw = 0; iw < ww.in; ++iw) {
        float* s = dx + (row * ww.in + iw) * C;
        for (int64_t kh = 0; kh < wh.filter; ++kh) {
          const int64_t oh = wh.out_for(ih, kh);
          if (oh < 0) continue;
          for (int64_t kw = 0; kw < ww.filter; ++kw) {
            const int64_t ow = ww.out_for(iw, kw);
            if (ow < 0) continue;
            const float* g = dz + ((n * wh.out + oh) * ww.out + ow) * OC;
            const float* wr = w + (kh * ww.filter + kw) * OC;
            std::fill(t.begin(), t.end(), 0.0f);
            if (M == 1) {
              fma_elementwise(t.data(), g, wr, C);
            } else {
              for (int64_t c = 0; c < C; ++c)
                for (int64_t j = 0; j < M; ++j) t[c] = std::fma(g[c * M + j], wr[c * M + j], t[c]);
            }
            for (int64_t c = 0; c < C; ++c) s[c] = s[c] + t[c];
          }
        }
      }
    }
  });
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  Depthwise d;
  geometry(s, s.in[0], s.in[1], &d);
  forward(d, s.in[0].data, s.in[1].data, s.in[2].data, s.out[0].data, s.params().activation);
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  Depthwise d;
  const TensorRef& in = s.in[0].present() ? s.in[0] : s.out[0];
  if (in.present()) {
    geometry(s, in, s.in[1], &d);
  } else {
    d.channels = s.in[1].dim(3);
    d.multiplier = 1;
  }
  float* dz = s.in[3].data;  // dy, turned into dz in place (dy is dead after this step)
  activation_backward(s.params().activation, s.in[2].data, dz, s.in[3].elements);
  const int64_t OC = d.out_ch(), positions = static_cast<int64_t>(s.in[3].elements) / OC;
  if (float* db = s.out[2].data) {
    std::fill(db, db + OC, 0.0f);
    for (int64_t p = 0; p < positions; ++p)
      for (int64_t o = 0; o < OC; ++o) db[o] = db[o] + dz[p * OC + o];
  }
  if (s.out[1].data) filter_grad(d, s.in[0].data, dz, s.out[1].data);
  if (s.out[0].data) input_grad_into(s, [&](float* dx) { input_grad(d, s.in[1].data, dz, dx); });
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_DEPTHWISE_CONV_2D = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
