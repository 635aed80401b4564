// MAX_POOL_2D (forward in [x] out [y]; backward in [x, dy] out [dx]) and AVERAGE_POOL_2D
// (forward in [x] out [y]; backward in [dy] out [dx]) over NHWC windows of params.filter_h x
// filter_w with strides and SAME/VALID padding; windows never read padding. As cltrain_backend.h's
// Numerics say: the max is taken in (kh, kw) order, the first maximum wins; the average is the
// sequential sum of the inside positions divided by their count. Backward, each dx element sums,
// over the windows (oh, ow) in increasing order that take it, dy (max: where it is the window's
// first maximum) or dy / count (average). No fused activation: the backward would have no y.
#include <algorithm>

#include "cpu_op.h"
#include "parallel.h"
#include "window.h"

namespace cltrain {
namespace cpu {
namespace {

std::string geometry(const StepView& s, const TensorRef& x, Window* win) {
  const cltrain_op_params& p = s.params();
  if (p.activation != CLTRAIN_ACT_NONE)
    return "fused activation " + std::to_string(p.activation) + " is not supported (only NONE)";
  return make_window(p, x, p.filter_h, p.filter_w, 1, 1, win);
}

std::string check_forward(const StepView& s) {
  Window win;
  const bool max_pool = s.step->op == CLTRAIN_OP_MAX_POOL_2D;
  if (std::string e = require_slots(s, 1, max_pool ? 2 : 1); !e.empty()) return e;
  if (std::string e = geometry(s, s.in[0], &win); !e.empty()) return e;
  if (std::string e = require_window_output(win, s.out[0], s.in[0].dim(3), "y"); !e.empty()) return e;
  if (max_pool && s.out[1].present()) {
    if (win.h.filter * win.w.filter > 256) return "argmax needs a window of at most 256 positions";
    return require_elements(s.out[1], s.out[0].elements, "argmax");
  }
  return {};
}

// in: x (max) or dx (average), whose shape gives the geometry.
std::string check_backward_with(const StepView& s, const TensorRef& in, const TensorRef& dy) {
  Window win;
  if (std::string e = geometry(s, in, &win); !e.empty()) return e;
  if (std::string e = require_window_output(win, dy, in.dim(3), "dy"); !e.empty()) return e;
  return require_elements(s.out[0], in.elements, "dx");
}

// in [x, dy, argmax, y]: x or argmax; y with dx_activation.
std::string check_max_backward(const StepView& s) {
  if (std::string e = require_slots(s, 4, 1); !e.empty()) return e;
  if (std::string e = require(s.out[0], "dx"); !e.empty()) return e;
  const TensorRef &x = s.in[0], &dy = s.in[1], &argmax = s.in[2], &y = s.in[3];
  if (!x.present() && !argmax.present()) return "needs x or argmax";
  if (std::string e = check_backward_with(s, x.present() ? x : s.out[0], dy); !e.empty()) return e;
  if (argmax.present())
    if (std::string e = require_elements(argmax, dy.elements, "argmax"); !e.empty()) return e;
  const int32_t act = s.params().dx_activation;
  if (act != CLTRAIN_ACT_NONE) {
    if (!activation_supported(act)) return "dx_activation " + std::to_string(act) + " is not supported";
    if (std::string e = require_elements(y, dy.elements, "y (for dx_activation)"); !e.empty()) return e;
  }
  return {};
}

std::string check_average_backward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  if (std::string e = require(s.out[0], "dx"); !e.empty()) return e;
  return check_backward_with(s, s.out[0], s.in[0]);
}

// Calls f(n, oh, ow, kh_lo, kh_hi, kw_lo, kw_hi) for every window, images over threads and the
// windows of an image in increasing order.
template <typename F>
void for_windows(const Window& win, int64_t work, F f) {
  parallel_for(win.batch, items_per_thread(win.h.out * win.w.out * work), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      for (int64_t oh = 0; oh < win.h.out; ++oh) {
        int64_t kh_lo, kh_hi, kw_lo, kw_hi;
        win.h.taps(oh, &kh_lo, &kh_hi);
        for (int64_t ow = 0; ow < win.w.out; ++ow) {
          win.w.taps(ow, &kw_lo, &kw_hi);
          f(n, oh, ow, kh_lo, kh_hi, kw_lo, kw_hi);
        }
      }
  });
}

// Offset of x[n, ih, iw, 0].
int64_t at(const Window& win, int64_t c, int64_t n, int64_t ih, int64_t iw) {
  return ((n * win.h.in + ih) * win.w.in + iw) * c;
}

std::string max_forward(const StepView& s, const cltrain_run_args&) {
  Window win;
  geometry(s, s.in[0], &win);
  const int64_t C = s.in[0].dim(3);
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  uint8_t* argmax = reinterpret_cast<uint8_t*>(s.out[1].data);  // window position kh * FW + kw
  for_windows(win, C * win.h.filter * win.w.filter,
              [&](int64_t n, int64_t oh, int64_t ow, int64_t kh_lo, int64_t kh_hi, int64_t kw_lo, int64_t kw_hi) {
                const int64_t out = ((n * win.h.out + oh) * win.w.out + ow) * C;
                float* m = y + out;
                bool first = true;
                for (int64_t kh = kh_lo; kh < kh_hi; ++kh)
                  for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
                    const float* v = x + at(win, C, n, win.h.pos(oh, kh), win.w.pos(ow, kw));
                    const uint8_t here = static_cast<uint8_t>(kh * win.w.filter + kw);
                    for (int64_t c = 0; c < C; ++c) {
                      const bool take = first || v[c] > m[c];
                      m[c] = take ? v[c] : m[c];
                      if (argmax && take) argmax[out + c] = here;
                    }
                    first = false;
                  }
                if (first) {  // a window with no inside position
                  std::fill(m, m + C, 0.0f);
                  if (argmax) std::fill(argmax + out, argmax + out + C, uint8_t{255});
                }
              });
  return {};
}

std::string max_backward(const StepView& s, const cltrain_run_args&) {
  Window win;
  geometry(s, s.out[0], &win);
  const int64_t C = s.out[0].dim(3);
  const float* x = s.in[0].data;
  const float* dy = s.in[1].data;
  const uint8_t* argmax = reinterpret_cast<const uint8_t*>(s.in[2].data);
  const float* y = s.in[3].data;
  const int32_t act = s.params().dx_activation;
  float* dx = s.out[0].data;
  std::fill(dx, dx + s.out[0].elements, 0.0f);
  for_windows(win, C * win.h.filter * win.w.filter,
              [&](int64_t n, int64_t oh, int64_t ow, int64_t kh_lo, int64_t kh_hi, int64_t kw_lo, int64_t kw_hi) {
                const int64_t out = ((n * win.h.out + oh) * win.w.out + ow) * C;
                for (int64_t c = 0; c < C; ++c) {
                  int64_t arg = -1;
                  if (argmax) {
                    const int64_t p = argmax[out + c], kh = p / win.w.filter, kw = p % win.w.filter;
                    if (kh >= kh_lo && kh < kh_hi && kw >= kw_lo && kw < kw_hi)
                      arg = at(win, C, n, win.h.pos(oh, kh), win.w.pos(ow, kw)) + c;
                  } else {
                    float m = 0.0f;
                    for (int64_t kh = kh_lo; kh < kh_hi; ++kh)
                      for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
                        const int64_t i = at(win, C, n, win.h.pos(oh, kh), win.w.pos(ow, kw)) + c;
                        if (arg < 0 || x[i] > m) {
                          arg = i;
                          m = x[i];
                        }
                      }
                  }
                  const float g =
                      act != CLTRAIN_ACT_NONE ? activation_backward(act, y[out + c], dy[out + c]) : dy[out + c];
                  if (arg >= 0) dx[arg] = dx[arg] + g;
                }
              });
  return {};
}

std::string average_forward(const StepView& s, const cltrain_run_args&) {
  Window win;
  geometry(s, s.in[0], &win);
  const int64_t C = s.in[0].dim(3);
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  for_windows(win, C * win.h.filter * win.w.filter,
              [&](int64_t n, int64_t oh, int64_t ow, int64_t kh_lo, int64_t kh_hi, int64_t kw_lo, int64_t kw_hi) {
                float* sum = y + ((n * win.h.out + oh) * win.w.out + ow) * C;
                std::fill(sum, sum + C, 0.0f);
                for (int64_t kh = kh_lo; kh < kh_hi; ++kh)
                  for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
                    const float* v = x + at(win, C, n, win.h.pos(oh, kh), win.w.pos(ow, kw));
                    for (int64_t c = 0; c < C; ++c) sum[c] = sum[c] + v[c];
                  }
                const int64_t count = (kh_hi - kh_lo) * (kw_hi - kw_lo);
                if (count > 0)
                  for (int64_t c = 0; c < C; ++c) sum[c] = sum[c] / static_cast<float>(count);
              });
  return {};
}

std::string average_backward(const StepView& s, const cltrain_run_args&) {
  Window win;
  geometry(s, s.out[0], &win);
  const int64_t C = s.out[0].dim(3);
  const float* dy = s.in[0].data;
  float* dx = s.out[0].data;
  std::fill(dx, dx + s.out[0].elements, 0.0f);
  for_windows(win, C * win.h.filter * win.w.filter,
              [&, C](int64_t n, int64_t oh, int64_t ow, int64_t kh_lo, int64_t kh_hi, int64_t kw_lo, int64_t kw_hi) {
                const float* g = dy + ((n * win.h.out + oh) * win.w.out + ow) * C;
                const float count = static_cast<float>((kh_hi - kh_lo) * (kw_hi - kw_lo));
                for (int64_t kh = kh_lo; kh < kh_hi; ++kh)
                  for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
                    float* d = dx + at(win, C, n, win.h.pos(oh, kh), win.w.pos(ow, kw));
                    for (int64_t c = 0; c < C; ++c) d[c] = d[c] + g[c] / count;
                  }
              });
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_MAX_POOL_2D = {{{check_forward, max_forward}, {check_max_backward, max_backward}, {}}};
extern const CpuOp kCpuOp_AVERAGE_POOL_2D = {
    {{check_forward, average_forward}, {check_average_backward, average_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
