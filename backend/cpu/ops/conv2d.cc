// CONV_2D: x [N,H,W,I], W [O,KH,KW,I], optional b [O], y [N,OH,OW,O] = act(conv + b), with
// strides, dilations and SAME/VALID padding. The chains of cltrain_backend.h's Numerics:
//   y[n,oh,ow,o]   fma over (kh, kw, i), i fastest, taps outside x skipped; then + b[o], act;
//   dW[o,kh,kw,i]  fma over (n, oh, ow) of dz * x, positions whose tap is outside x skipped;
//   db[o]          sum over (n, oh, ow) of dz;
//   dx[n,ih,iw,i]  sum over the (kh, kw) that reach it, in order, of (fma over o of dz * W).
// Threads take whole outputs: rows of y (n, oh), taps of dW, rows of dx (n, ih).
#include <algorithm>
#include <vector>

#include "cpu_op.h"
#include "fma_chain.h"
#include "parallel.h"
#include "window.h"

namespace cltrain {
namespace cpu {
namespace {

struct Conv {
  Window win;
  int64_t in_ch = 0, out_ch = 0;
  int64_t taps() const { return win.h.filter * win.w.filter; }
};

std::string filter_shape(const StepView& s, const TensorRef& w, Conv* c) {
  if (std::string e = require_rank4(w, "W"); !e.empty()) return e;
  if (w.dim(0) < 1 || w.dim(1) < 1 || w.dim(2) < 1 || w.dim(3) < 1)
    return "W " + shape_string(w) + " must be [O,KH,KW,I] with every dimension > 0";
  c->out_ch = w.dim(0);
  c->in_ch = w.dim(3);
  return {};
}

// The geometry from x (or, in the backward, dx) and W; checks that the input has I channels.
std::string geometry(const StepView& s, const TensorRef& x, const TensorRef& w, Conv* c) {
  if (std::string e = filter_shape(s, w, c); !e.empty()) return e;
  const cltrain_op_params& p = s.params();
  if (std::string e = make_window(p, x, w.dim(1), w.dim(2), p.dilation_h, p.dilation_w, &c->win); !e.empty()) return e;
  if (x.dim(3) != c->in_ch)
    return "x " + shape_string(x) + " does not have the " + std::to_string(c->in_ch) + " channels of W " +
           shape_string(w);
  return {};
}

std::string check_forward(const StepView& s) {
  Conv c;
  if (std::string e = require_slots(s, 3, 1); !e.empty()) return e;
  if (std::string e = geometry(s, s.in[0], s.in[1], &c); !e.empty()) return e;
  if (s.in[2].present())
    if (std::string e = require_elements(s.in[2], static_cast<uint64_t>(c.out_ch), "b"); !e.empty()) return e;
  if (std::string e = require_window_output(c.win, s.out[0], c.out_ch, "y"); !e.empty()) return e;
  return require_activation(s);
}

std::string check_backward(const StepView& s) {
  Conv c;
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
    if (std::string e = geometry(s, in, w, &c); !e.empty()) return e;
    if (std::string e = require_window_output(c.win, dy, c.out_ch, "dy"); !e.empty()) return e;
  } else {
    if (std::string e = filter_shape(s, w, &c); !e.empty()) return e;
    if (std::string e = require_rank4(dy, "dy"); !e.empty()) return e;
    if (dy.dim(3) != c.out_ch) return "dy " + shape_string(dy) + " does not have W's output channels";
  }
  if (s.params().activation != CLTRAIN_ACT_NONE)
    if (std::string e = require_elements(y, dy.elements, "y (the activation's output)"); !e.empty()) return e;
  if (dw.present())
    if (std::string e = require_elements(dw, w.elements, "dW"); !e.empty()) return e;
  if (db.present())
    if (std::string e = require_elements(db, static_cast<uint64_t>(c.out_ch), "db"); !e.empty()) return e;
  return {};
}

void forward(const Conv& c, const float* x, const float* w, const float* b, float* y, int32_t act) {
  const WindowAxis &wh = c.win.h, &ww = c.win.w;
  const int64_t I = c.in_ch, O = c.out_ch, T = c.taps() * I;
  // W^T [KH*KW*I, O]: a term of the chains of one output position reads one row of it.
  std::vector<float> wt(static_cast<size_t>(T * O));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t t = 0; t < T; ++t) wt[t * O + o] = w[o * T + t];
  const int64_t rows = c.win.batch * wh.out;
  std::fill(y, y + rows * ww.out * O, 0.0f);
  parallel_for(rows, items_per_thread(ww.out * O * T), [&](int64_t begin, int64_t end) {
    std::vector<ChainSegment> segs;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / wh.out, oh = row % wh.out;
      int64_t kh_lo, kh_hi;
      wh.taps(oh, &kh_lo, &kh_hi);
      for (int64_t ow = 0; ow < ww.out;) {
        int64_t kw_lo, kw_hi;
        ww.taps(ow, &kw_lo, &kw_hi);
        // Neighbours with the same taps share the segments (their x is sw * I further on).
        int64_t group = 1;
        for (int64_t lo, hi; group < 4 && ow + group < ww.out; ++group) {
          ww.taps(ow + group, &lo, &hi);
          if (lo != kw_lo || hi != kw_hi) break;
        }
        segs.clear();
        for (int64_t kh = kh_lo; kh < kh_hi && kw_lo < kw_hi; ++kh) {
          const float* xr = x + ((n * wh.in + wh.pos(oh, kh)) * ww.in) * I;
          const float* wr = wt.data() + kh * ww.filter * I * O;
          if (ww.dilation == 1) {  // the taps of a filter row are contiguous in x and in W^T
            segs.push_back({xr + ww.pos(ow, kw_lo) * I, wr + kw_lo * I * O, (kw_hi - kw_lo) * I});
          } else {
            for (int64_t kw = kw_lo; kw < kw_hi; ++kw) segs.push_back({xr + ww.pos(ow, kw) * I, wr + kw * I * O, I});
          }
        }
        ChainShape cs;
        cs.rows = group;
        cs.cols = O;
        cs.a_step = 1;
        cs.a_row = ww.stride * I;
        cs.b_step = O;
        cs.acc = y + (row * ww.out + ow) * O;
        cs.acc_row = O;
        fma_chain(cs, segs.data(), segs.size());
        ow += group;
      }
      float* yr = y + row * ww.out * O;
      if (b)
        for (int64_t p = 0; p < ww.out; ++p)
          for (int64_t o = 0; o < O; ++o) yr[p * O + o] = yr[p * O + o] + b[o];
      apply_activation(act, yr, static_cast<uint64_t>(ww.out * O));
    }
  });
}

// dW^T [KH*KW*I, O] first: the chain of (tap, i) over positions reads rows of dz. Images are
// the outer loop (their x and dz stay in cache); each chain still runs over (n, oh, ow) in order.
void filter_grad(const Conv& c, const float* x, const float* dz, float* dw) {
  const WindowAxis &wh = c.win.h, &ww = c.win.w;
  const int64_t I = c.in_ch, O = c.out_ch, T = c.taps() * I;
  std::vector<float> dwt(static_cast<size_t>(T * O), 0.0f);
  constexpr int64_t kRows = 4;  // input channels per work item
  const int64_t i_blocks = (I + kRows - 1) / kRows;
  const int64_t items = c.taps() * i_blocks;
  for (int64_t n = 0; n < c.win.batch; ++n) {
    parallel_for(items, items_per_thread(kRows * O * wh.out * ww.out), [&](int64_t begin, int64_t end) {
      std::vector<ChainSegment> segs;
      for (int64_t item = begin; item < end; ++item) {
        const int64_t tap = item / i_blocks, i0 = item % i_blocks * kRows;
        const int64_t kh = tap / ww.filter, kw = tap % ww.filter;
        int64_t ow_lo = 0, ow_hi = ww.out;  // the positions whose tap kw is inside x
        while (ow_lo < ww.out && ww.pos(ow_lo, kw) < 0) ++ow_lo;
        while (ow_hi > ow_lo && ww.pos(ow_hi - 1, kw) >= ww.in) --ow_hi;
        segs.clear();
        for (int64_t oh = 0; oh < wh.out && ow_lo < ow_hi; ++oh) {
          const int64_t ih = wh.pos(oh, kh);
          if (ih < 0 || ih >= wh.in) continue;
          segs.push_back({x + ((n * wh.in + ih) * ww.in + ww.pos(ow_lo, kw)) * I + i0,
                          dz + ((n * wh.out + oh) * ww.out + ow_lo) * O, ow_hi - ow_lo});
        }
        ChainShape cs;
        cs.rows = std::min(kRows, I - i0);
        cs.cols = O;
        cs.a_step = ww.stride * I;
        cs.a_row = 1;
        cs.b_step = O;
        cs.acc = dwt.data() + (tap * I + i0) * O;
        cs.acc_row = O;
        fma_chain(cs, segs.data(), segs.size());
      }
    });
  }
  for (int64_t o = 0; o < O; ++o)
    for (int64_t t = 0; t < T; ++t) dw[o * T + t] = dwt[t * O + o];
}

void input_grad(const Conv& c, const float* w, const float* dz, float* dx) {
  const WindowAxis &wh = c.win.h, &ww = c.win.w;
  const int64_t I = c.in_ch, O = c.out_ch, T = c.taps() * I;
  const int64_t rows = c.win.batch * wh.in;
  std::fill(dx, dx + rows * ww.in * I, 0.0f);
  parallel_for(rows, items_per_thread(ww.in * I * O * c.taps()), [&](int64_t begin, int64_t end) {
    std::vector<ChainSegment> segs;
    std::vector<int64_t> kw_out(static_cast<size_t>(ww.filter)), next(kw_out.size());
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / wh.in, ih = row % wh.in;
      for (int64_t iw = 0; iw < ww.in;) {
        for (int64_t kw = 0; kw < ww.filter; ++kw) kw_out[kw] = ww.out_for(iw, kw);
        // With stride 1, neighbours reached by the same taps read dz O further on.
        int64_t group = 1;
        for (; ww.stride == 1 && group < 4 && iw + group < ww.in; ++group) {
          bool same = true;
          for (int64_t kw = 0; kw < ww.filter && same; ++kw) {
            const int64_t o = ww.out_for(iw + group, kw);
            same = (o < 0) == (kw_out[kw] < 0) && (o < 0 || o == kw_out[kw] + group);
          }
          if (!same) break;
        }
        segs.clear();
        for (int64_t kh = 0; kh < wh.filter; ++kh) {
          const int64_t oh = wh.out_for(ih, kh);
          if (oh < 0) continue;
          for (int64_t kw = 0; kw < ww.filter; ++kw) {
            if (kw_out[kw] < 0) continue;
            segs.push_back({dz + ((n * wh.out + oh) * ww.out + kw_out[kw]) * O, w + (kh * ww.filter + kw) * I, O});
          }
        }
        ChainShape cs;
        cs.rows = group;
        cs.cols = I;
        cs.a_step = 1;
        cs.a_row = O;
        cs.b_step = T;
        cs.acc = dx + (row * ww.in + iw) * I;
        cs.acc_row = I;
        fma_chain_sum(cs, segs.data(), segs.size());
        iw += group;
      }
    }
  });
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  Conv c;
  geometry(s, s.in[0], s.in[1], &c);
  forward(c, s.in[0].data, s.in[1].data, s.in[2].data, s.out[0].data, s.params().activation);
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  Conv c;
  const TensorRef& in = s.in[0].present() ? s.in[0] : s.out[0];
  if (in.present())
    geometry(s, in, s.in[1], &c);
  else
    filter_shape(s, s.in[1], &c);
  float* dz = s.in[3].data;  // dy, turned into dz in place (dy is dead after this step)
  const int64_t positions = static_cast<int64_t>(s.in[3].elements) / c.out_ch;
  activation_backward(s.params().activation, s.in[2].data, dz, s.in[3].elements);
  if (float* db = s.out[2].data) {
    std::fill(db, db + c.out_ch, 0.0f);
    for (int64_t p = 0; p < positions; ++p)
      for (int64_t o = 0; o < c.out_ch; ++o) db[o] = db[o] + dz[p * c.out_ch + o];
  }
  if (s.out[1].data) filter_grad(c, s.in[0].data, dz, s.out[1].data);
  if (s.out[0].data) input_grad_into(s, [&](float* dx) { input_grad(c, s.in[1].data, dz, dx); });
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_CONV_2D = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
