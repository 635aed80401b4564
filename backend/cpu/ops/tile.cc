// TILE: forward in [x] out [y], y's dim d = m_d * x's (m_d from the shapes), y[i] = x[i_d mod
// x.dims[d]]; backward in [dy] out [dx], dx[j] = the sum from 0 of the dy elements that copied
// x[j], in increasing flat index of y (cltrain_ops.h).
#include <algorithm>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

// "" when y's every dim is a whole multiple of x's, at equal rank.
std::string tiled_shape(const TensorRef& x, const TensorRef& y) {
  if (std::string e = require(x, "x"); !e.empty()) return e;
  if (std::string e = require(y, "y"); !e.empty()) return e;
  if (x.rank() != y.rank()) return "y " + shape_string(y) + " and x " + shape_string(x) + " differ in rank";
  for (int d = 0; d < x.rank(); ++d)
    if (x.dim(d) < 1 || y.dim(d) % x.dim(d) != 0)
      return "y " + shape_string(y) + " is not x " + shape_string(x) + " tiled a whole number of times";
  return {};
}

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return tiled_shape(s.in[0], s.out[0]);
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return tiled_shape(s.out[0], s.in[0]);
}

// Calls f(x index, y index) for every element of y in increasing order of y's index.
template <typename F>
void for_each_element(const TensorRef& x, const TensorRef& y, F f) {
  const int rank = x.rank();
  int64_t xstride[CLTRAIN_MAX_RANK];
  int64_t stride = 1;
  for (int d = rank; d-- > 0;) {
    xstride[d] = stride;
    stride *= x.dim(d);
  }
  int64_t coord[CLTRAIN_MAX_RANK] = {}, xcoord[CLTRAIN_MAX_RANK] = {};
  int64_t xi = 0;
  for (uint64_t yi = 0; yi < y.elements; ++yi) {
    f(xi, static_cast<int64_t>(yi));
    for (int d = rank; d-- > 0;) {
      ++coord[d];
      if (++xcoord[d] < x.dim(d)) {
        xi += xstride[d];
      } else {
        xcoord[d] = 0;
        xi -= xstride[d] * (x.dim(d) - 1);
      }
      if (coord[d] < y.dim(d)) break;
      coord[d] = 0;
    }
  }
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  for_each_element(s.in[0], s.out[0], [&](int64_t xi, int64_t yi) { y[yi] = x[xi]; });
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float* dy = s.in[0].data;
  float* dx = s.out[0].data;
  std::fill(dx, dx + s.out[0].elements, 0.0f);
  for_each_element(s.out[0], s.in[0], [&](int64_t xi, int64_t yi) { dx[xi] = dx[xi] + dy[yi]; });
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_TILE = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
