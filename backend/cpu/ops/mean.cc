// MEAN and SUM (and REDUCE_MAX/MIN, below) over the axes of params.axes_mask (bit i: axis i),
// with params.keep_dims: forward in [x] out [y], backward in [dy] out [dx]. MEAN: y = (sum in
// increasing flat index of x) / count, dx = dy / count (cltrain_backend.h, Numerics), count the
// product of the reduced dimensions; SUM: the same without the divide.
#include <algorithm>
#include <vector>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

struct Reduction {
  int rank = 0;
  int64_t dims[CLTRAIN_MAX_RANK] = {};
  int64_t out_stride[CLTRAIN_MAX_RANK] = {};  // y offset per step of each x axis (0 if reduced)
  int64_t count = 1;                          // elements averaged into each y element
};

// The reduction of x (or dx) onto y (or dy); "" or what is wrong.
std::string reduction(const StepView& s, const TensorRef& x, const TensorRef& y, Reduction* r) {
  if (std::string e = require(x, "x"); !e.empty()) return e;
  if (std::string e = require(y, "y"); !e.empty()) return e;
  const int32_t mask = s.params().axes_mask;
  if (mask < 0 || (x.rank() < 31 && (mask >> x.rank()) != 0))
    return "axes mask " + std::to_string(mask) + " names axes outside x " + shape_string(x);
  r->rank = x.rank();
  int64_t want[CLTRAIN_MAX_RANK];
  int want_rank = 0;
  for (int d = 0; d < r->rank; ++d) {
    r->dims[d] = x.dim(d);
    const bool reduced = (mask >> d) & 1;
    if (reduced) r->count *= x.dim(d);
    if (!reduced || s.params().keep_dims) want[want_rank++] = reduced ? 1 : x.dim(d);
  }
  int64_t stride = 1;
  for (int d = r->rank; d-- > 0;) {
    const bool reduced = (mask >> d) & 1;
    r->out_stride[d] = reduced ? 0 : stride;
    if (!reduced) stride *= x.dim(d);
  }
  // Everything reduced without keep_dims: a scalar, [] or [1].
  if (want_rank == 0 && y.rank() == 1 && y.dim(0) == 1) return {};
  return require_dims(y, want, want_rank, "y");
}

std::string check_forward(const StepView& s) {
  Reduction r;
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return reduction(s, s.in[0], s.out[0], &r);
}

std::string check_backward(const StepView& s) {
  Reduction r;
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return reduction(s, s.out[0], s.in[0], &r);
}

// Calls f(i, j) for every x index i in increasing order with its y index j.
template <typename F>
void for_each_element(const Reduction& r, F f) {
  int64_t total = 1;
  for (int d = 0; d < r.rank; ++d) total *= r.dims[d];
  int64_t coord[CLTRAIN_MAX_RANK] = {};
  int64_t j = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(i, j);
    for (int d = r.rank; d-- > 0;) {  // odometer step, last axis fastest
      j += r.out_stride[d];
      if (++coord[d] < r.dims[d]) break;
      j -= r.out_stride[d] * r.dims[d];
      coord[d] = 0;
    }
  }
}

template <bool kSum>
std::string run_forward(const StepView& s, const cltrain_run_args&) {
  Reduction r;
  reduction(s, s.in[0], s.out[0], &r);
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  std::fill(y, y + s.out[0].elements, 0.0f);
  for_each_element(r, [&](int64_t i, int64_t j) { y[j] = y[j] + x[i]; });
  if (kSum) return {};
  const float count = static_cast<float>(r.count);
  for (uint64_t j = 0; j < s.out[0].elements; ++j) y[j] = y[j] / count;
  return {};
}

template <bool kSum>
std::string run_backward(const StepView& s, const cltrain_run_args&) {
  Reduction r;
  reduction(s, s.out[0], s.in[0], &r);
  const float* dy = s.in[0].data;
  float* dx = s.out[0].data;
  const float count = static_cast<float>(r.count);
  for_each_element(r, [&](int64_t i, int64_t j) { dx[i] = kSum ? dy[j] : dy[j] / count; });
  return {};
}

// REDUCE_MAX (kMin false) and REDUCE_MIN: forward in [x] out [y]; backward in [x, y, dy] out [dx].
template <bool kMin>
std::string run_extreme_forward(const StepView& s, const cltrain_run_args&) {
  Reduction r;
  reduction(s, s.in[0], s.out[0], &r);
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  std::vector<char> seen(s.out[0].elements, 0);
  for_each_element(r, [&](int64_t i, int64_t j) {
    if (!seen[static_cast<size_t>(j)]) {
      y[j] = x[i];
      seen[static_cast<size_t>(j)] = 1;
    } else {
      y[j] = (kMin ? x[i] < y[j] : x[i] > y[j]) ? x[i] : y[j];
    }
  });
  return {};
}

std::string check_extreme_backward(const StepView& s) {
  Reduction r;
  if (std::string e = require_slots(s, 3, 1); !e.empty()) return e;
  if (std::string e = require_elements(s.in[0], s.out[0].elements, "x"); !e.empty()) return e;
  if (std::string e = require_elements(s.in[2], s.in[1].elements, "dy"); !e.empty()) return e;
  return reduction(s, s.out[0], s.in[1], &r);
}

std::string run_extreme_backward(const StepView& s, const cltrain_run_args&) {
  Reduction r;
  reduction(s, s.out[0], s.in[1], &r);
  const float *x = s.in[0].data, *y = s.in[1].data, *dy = s.in[2].data;
  float* dx = s.out[0].data;
  std::vector<float> ties(s.in[1].elements, 0.0f);
  for_each_element(r, [&](int64_t i, int64_t j) { ties[static_cast<size_t>(j)] += x[i] == y[j] ? 1.0f : 0.0f; });
  for_each_element(
      r, [&](int64_t i, int64_t j) { dx[i] = x[i] == y[j] ? (1.0f / ties[static_cast<size_t>(j)]) * dy[j] : 0.0f; });
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_REDUCE_MAX = {
    {{check_forward, run_extreme_forward<false>}, {check_extreme_backward, run_extreme_backward}, {}}};
extern const CpuOp kCpuOp_REDUCE_MIN = {
    {{check_forward, run_extreme_forward<true>}, {check_extreme_backward, run_extreme_backward}, {}}};
extern const CpuOp kCpuOp_MEAN = {{{check_forward, run_forward<false>}, {check_backward, run_backward<false>}, {}}};
extern const CpuOp kCpuOp_SUM = {{{check_forward, run_forward<true>}, {check_backward, run_backward<true>}, {}}};

}  // namespace cpu
}  // namespace cltrain
