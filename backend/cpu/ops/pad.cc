// PAD: forward in [x] out [y], y = x with params.pad_before[d] / pad_after[d] zeros around axis
// d; backward in [dy] out [dx], the crop of dy that x came from. Copies only: exact.
#include <algorithm>
#include <cstring>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

// x (or dx) and y (or dy) with the padding between them; "" or what is wrong.
std::string padded_shape(const StepView& s, const TensorRef& x, const TensorRef& y) {
  if (std::string e = require(x, "x"); !e.empty()) return e;
  int64_t want[CLTRAIN_MAX_RANK];
  for (int d = 0; d < x.rank(); ++d) {
    const int32_t before = s.params().pad_before[d], after = s.params().pad_after[d];
    if (before < 0 || after < 0)
      return "paddings of axis " + std::to_string(d) + " (" + std::to_string(before) + ", " + std::to_string(after) +
             ") are negative";
    want[d] = int64_t{x.dim(d)} + before + after;
  }
  return require_dims(y, want, x.rank(), "y");
}

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return padded_shape(s, s.in[0], s.out[0]);
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  return padded_shape(s, s.out[0], s.in[0]);
}

// Calls f(x offset, y offset, n) for every run of the last axis of x, in order.
template <typename F>
void for_each_row(const StepView& s, const TensorRef& x, F f) {
  const int rank = x.rank();
  if (x.elements == 0) return;
  if (rank == 0) return f(0, 0, 1);
  int64_t ystride[CLTRAIN_MAX_RANK];
  int64_t stride = 1;
  for (int d = rank; d-- > 0;) {
    ystride[d] = stride;
    stride *= int64_t{x.dim(d)} + s.params().pad_before[d] + s.params().pad_after[d];
  }
  const int64_t row = x.dim(rank - 1);
  const int64_t rows = static_cast<int64_t>(x.elements) / row;
  int64_t coord[CLTRAIN_MAX_RANK] = {};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t yo = 0;
    for (int d = 0; d < rank; ++d) yo += (coord[d] + s.params().pad_before[d]) * ystride[d];
    f(r * row, yo, row);
    for (int d = rank - 1; d-- > 0;) {
      if (++coord[d] < x.dim(d)) break;
      coord[d] = 0;
    }
  }
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  float* y = s.out[0].data;
  std::fill(y, y + s.out[0].elements, 0.0f);
  for_each_row(s, s.in[0], [&](int64_t xo, int64_t yo, int64_t n) { std::memcpy(y + yo, x + xo, n * sizeof(float)); });
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float* dy = s.in[0].data;
  float* dx = s.out[0].data;
  for_each_row(s, s.out[0],
               [&](int64_t xo, int64_t yo, int64_t n) { std::memcpy(dx + xo, dy + yo, n * sizeof(float)); });
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_PAD = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
