// RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: x [N,H,W,C] -> y [N,OH,OW,C] as cltrain_ops.h defines
// them (common/resize_geometry.h: where each output reads); backward in [dy] out [dx], dx gathered
// per element over the output positions that read it, in increasing order.
#include <algorithm>

#include "cpu_op.h"
#include "resize_geometry.h"
#include "window.h"

namespace cltrain {
namespace cpu {
namespace {

struct Resize {
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0;
  float sh = 0, sw = 0;
  bool align = false, half = false;
};

// x (or dx) and y (or dy).
std::string geometry(const StepView& s, const TensorRef& x, const TensorRef& y, Resize* r) {
  if (std::string e = require_rank4(x, "x"); !e.empty()) return e;
  if (std::string e = require_rank4(y, "y"); !e.empty()) return e;
  if (x.dim(0) != y.dim(0) || x.dim(3) != y.dim(3))
    return "x " + shape_string(x) + " and y " + shape_string(y) + " differ in batch or channels";
  if (s.params().align_corners && s.params().half_pixel_centers)
    return "align_corners and half_pixel_centers are both set";
  r->n = x.dim(0), r->h = x.dim(1), r->w = x.dim(2), r->c = x.dim(3), r->oh = y.dim(1), r->ow = y.dim(2);
  r->align = s.params().align_corners != 0;
  r->half = s.params().half_pixel_centers != 0;
  r->sh = resize_scale(r->h, r->oh, r->align);
  r->sw = resize_scale(r->w, r->ow, r->align);
  return {};
}

std::string check_forward(const StepView& s) {
  Resize r;
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return geometry(s, s.in[0], s.out[0], &r);
}

std::string check_backward(const StepView& s) {
  Resize r;
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return geometry(s, s.out[0], s.in[0], &r);
}

// The weights of the four taps of one output position along both axes (bilinear), in the order
// of cltrain_ops.h: (lo_h, lo_w), (hi_h, lo_w), (lo_h, hi_w), (hi_h, hi_w).
struct Taps {
  int64_t h[4], w[4];
  float wh[4], ww[4];
};

Taps taps(const Resize& r, int64_t oh, int64_t ow) {
  int64_t h0, h1, w0, w1;
  float th, tw;
  bilinear_source(oh, r.sh, r.half, r.h, &h0, &h1, &th);
  bilinear_source(ow, r.sw, r.half, r.w, &w0, &w1, &tw);
  return {{h0, h1, h0, h1}, {w0, w0, w1, w1}, {1.0f - th, th, 1.0f - th, th}, {1.0f - tw, 1.0f - tw, tw, tw}};
}

template <bool kBilinear>
std::string run_forward(const StepView& s, const cltrain_run_args&) {
  Resize r;
  geometry(s, s.in[0], s.out[0], &r);
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  for (int64_t n = 0; n < r.n; ++n)
    for (int64_t oh = 0; oh < r.oh; ++oh)
      for (int64_t ow = 0; ow < r.ow; ++ow) {
        float* yp = y + ((n * r.oh + oh) * r.ow + ow) * r.c;
        if (kBilinear) {
          const Taps t = taps(r, oh, ow);
          for (int64_t c = 0; c < r.c; ++c) {
            float acc = 0.0f;
            for (int k = 0; k < 4; ++k) {
              const float term = x[((n * r.h + t.h[k]) * r.w + t.w[k]) * r.c + c] * t.wh[k] * t.ww[k];
              acc = k == 0 ? term : acc + term;
            }
            yp[c] = acc;
          }
        } else {
          const int64_t ih = nearest_source(oh, r.sh, r.align, r.half, r.h);
          const int64_t iw = nearest_source(ow, r.sw, r.align, r.half, r.w);
          for (int64_t c = 0; c < r.c; ++c) yp[c] = x[((n * r.h + ih) * r.w + iw) * r.c + c];
        }
      }
  return {};
}

template <bool kBilinear>
std::string run_backward(const StepView& s, const cltrain_run_args&) {
  Resize r;
  geometry(s, s.out[0], s.in[0], &r);
  const float* dy = s.in[0].data;
  float* dx = s.out[0].data;
  for (int64_t n = 0; n < r.n; ++n)
    for (int64_t ih = 0; ih < r.h; ++ih)
      for (int64_t iw = 0; iw < r.w; ++iw) {
        int64_t h_begin, h_end, w_begin, w_end;
        resize_candidates(ih, r.sh, r.oh, &h_begin, &h_end);
        resize_candidates(iw, r.sw, r.ow, &w_begin, &w_end);
        float* acc = dx + ((n * r.h + ih) * r.w + iw) * r.c;  // per channel, in increasing (oh, ow)
        std::fill(acc, acc + r.c, 0.0f);
        for (int64_t oh = h_begin; oh < h_end; ++oh)
          for (int64_t ow = w_begin; ow < w_end; ++ow) {
            const float* g = dy + ((n * r.oh + oh) * r.ow + ow) * r.c;
            if (kBilinear) {
              const Taps t = taps(r, oh, ow);
              for (int k = 0; k < 4; ++k)
                if (t.h[k] == ih && t.w[k] == iw)
                  for (int64_t c = 0; c < r.c; ++c) acc[c] = acc[c] + g[c] * t.wh[k] * t.ww[k];
            } else if (nearest_source(oh, r.sh, r.align, r.half, r.h) == ih &&
                       nearest_source(ow, r.sw, r.align, r.half, r.w) == iw) {
              for (int64_t c = 0; c < r.c; ++c) acc[c] = acc[c] + g[c];
            }
          }
      }
  return {};
}

template <bool kBilinear>
constexpr CpuOp resize() {
  return {{{check_forward, run_forward<kBilinear>}, {check_backward, run_backward<kBilinear>}, {}}};
}

}  // namespace

extern const CpuOp kCpuOp_RESIZE_BILINEAR = resize<true>();
extern const CpuOp kCpuOp_RESIZE_NEAREST_NEIGHBOR = resize<false>();

}  // namespace cpu
}  // namespace cltrain
