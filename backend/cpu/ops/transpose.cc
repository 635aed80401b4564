// TRANSPOSE: forward in [x] out [y], y's axis d is x's axis params.perm[d]; backward in [dy] out
// [dx], dy through the inverse permutation. Copies only: exact.
#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

// "" when params.perm is a permutation of x's axes and y is x with its axes permuted.
std::string permuted_shape(const StepView& s, const TensorRef& x, const TensorRef& y) {
  if (std::string e = require(x, "x"); !e.empty()) return e;
  int64_t want[CLTRAIN_MAX_RANK];
  bool seen[CLTRAIN_MAX_RANK] = {};
  for (int d = 0; d < x.rank(); ++d) {
    const int32_t a = s.params().perm[d];
    if (a < 0 || a >= x.rank() || seen[a]) return "params.perm is not a permutation of x's " + shape_string(x);
    seen[a] = true;
    want[d] = x.dim(a);
  }
  return require_dims(y, want, x.rank(), "y");
}

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return permuted_shape(s, s.in[0], s.out[0]);
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return permuted_shape(s, s.out[0], s.in[0]);
}

// Calls f(x index, y index) for every element of y in increasing order of y's index.
template <typename F>
void for_each_element(const StepView& s, const TensorRef& x, F f) {
  const int rank = x.rank();
  int64_t xstride[CLTRAIN_MAX_RANK], ydim[CLTRAIN_MAX_RANK], ystep[CLTRAIN_MAX_RANK];
  int64_t stride = 1;
  for (int d = rank; d-- > 0;) {
    xstride[d] = stride;
    stride *= x.dim(d);
  }
  for (int d = 0; d < rank; ++d) {
    ydim[d] = x.dim(s.params().perm[d]);
    ystep[d] = xstride[s.params().perm[d]];
  }
  int64_t coord[CLTRAIN_MAX_RANK] = {};
  int64_t xi = 0;
  for (uint64_t yi = 0; yi < x.elements; ++yi) {
    f(xi, static_cast<int64_t>(yi));
    for (int d = rank; d-- > 0;) {
      xi += ystep[d];
      if (++coord[d] < ydim[d]) break;
      xi -= ystep[d] * ydim[d];
      coord[d] = 0;
    }
  }
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  for_each_element(s, s.in[0], [&](int64_t xi, int64_t yi) { y[yi] = x[xi]; });
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float* dy = s.in[0].data;
  float* dx = s.out[0].data;
  for_each_element(s, s.out[0], [&](int64_t xi, int64_t yi) { dx[xi] = dy[yi]; });
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_TRANSPOSE = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
