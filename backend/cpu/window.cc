#include "window.h"

#include "window_geometry.h"

namespace cltrain {
namespace cpu {

void WindowAxis::taps(int64_t o, int64_t* lo, int64_t* hi) const {
  int64_t k = 0;
  while (k < filter && pos(o, k) < 0) ++k;
  *lo = k;
  while (k < filter && pos(o, k) < in) ++k;
  *hi = k;
}

int64_t WindowAxis::out_for(int64_t i, int64_t k) const {
  const int64_t t = i + pad_before - k * dilation;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t o = t / stride;
  return o < out ? o : -1;
}

std::string window_axis(int32_t padding, int64_t in, int64_t filter, int64_t stride, int64_t dilation, const char* what,
                        WindowAxis* a) {
  AxisGeometry g;
  if (std::string e = axis_geometry(padding, in, filter, stride, dilation, what, &g); !e.empty()) return e;
  a->in = in;
  a->filter = filter;
  a->stride = stride;
  a->dilation = dilation;
  a->out = g.out;
  a->pad_before = g.pad_before;
  return {};
}

std::string require_rank4(const TensorRef& t, const char* what) {
  if (std::string e = require(t, what); !e.empty()) return e;
  if (t.rank() != 4) return std::string(what) + " " + shape_string(t) + " is not rank 4 [N,H,W,C]";
  return {};
}

std::string make_window(const cltrain_op_params& p, const TensorRef& x, int64_t filter_h, int64_t filter_w,
                        int64_t dilation_h, int64_t dilation_w, Window* win) {
  if (std::string e = require_rank4(x, "x"); !e.empty()) return e;
  win->batch = x.dim(0);
  if (std::string e = window_axis(p.padding, x.dim(1), filter_h, p.stride_h, dilation_h, "height", &win->h); !e.empty())
    return e;
  return window_axis(p.padding, x.dim(2), filter_w, p.stride_w, dilation_w, "width", &win->w);
}

std::string require_window_output(const Window& win, const TensorRef& y, int64_t channels, const char* what) {
  if (std::string e = require_rank4(y, what); !e.empty()) return e;
  if (y.dim(0) != win.batch || y.dim(1) != win.h.out || y.dim(2) != win.w.out || y.dim(3) != channels)
    return std::string(what) + " " + shape_string(y) + " is not [" + std::to_string(win.batch) + "x" +
           std::to_string(win.h.out) + "x" + std::to_string(win.w.out) + "x" + std::to_string(channels) + "]";
  return {};
}

}  // namespace cpu
}  // namespace cltrain
