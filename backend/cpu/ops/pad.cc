// PAD and SLICE, one the other's inverse: the small tensor (PAD's x, SLICE's y) is the box of the
// big one (PAD's y, SLICE's x) that params.pad_before[d] / pad_after[d] elements around each axis
// d leave.
//   PAD    forward in [x] out [y]: y = x with zeros around; backward in [dy] out [dx], the box.
//   SLICE  forward in [x] out [y]: y = the box (its size-1 axes may be dropped); backward in [dy]
//          out [dx]: dy in the box, zeros around.
//   ACCUMULATE_BOX  backward in [a] out [acc]: acc's box += a (a SLICE's backward into a dx that
//          has a value: its roles are SLICE's backward's).
// Copies only, but for ACCUMULATE_BOX's one addition per element.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

// PAD's small tensor is its own; SLICE's box comes from the big one's dims less the cuts (its
// tensor may have dropped size-1 axes).
struct Box {
  int rank = 0;
  int64_t dims[CLTRAIN_MAX_RANK] = {};
  uint64_t elements = 1;
};

bool is_slice(const StepView& s) { return s.step->op == CLTRAIN_OP_SLICE || s.step->op == CLTRAIN_OP_ACCUMULATE_BOX; }

// The big tensor of the step: PAD's y (or dy), SLICE's x (or dx).
const TensorRef& big(const StepView& s) {
  const bool fwd = s.step->phase == CLTRAIN_PHASE_FORWARD;
  return is_slice(s) == fwd ? s.in[0] : s.out[0];
}
const TensorRef& small(const StepView& s) {
  const bool fwd = s.step->phase == CLTRAIN_PHASE_FORWARD;
  return is_slice(s) == fwd ? s.out[0] : s.in[0];
}

// The box of the step; "" or what is wrong.
std::string box_of(const StepView& s, Box* b) {
  const TensorRef &B = big(s), &S = small(s);
  if (std::string e = require(B, "the larger tensor"); !e.empty()) return e;
  if (std::string e = require(S, "the smaller tensor"); !e.empty()) return e;
  b->rank = B.rank();
  for (int d = 0; d < b->rank; ++d) {
    const int32_t before = s.params().pad_before[d], after = s.params().pad_after[d];
    b->dims[d] = int64_t{B.dim(d)} - before - after;
    if (before < 0 || after < 0 || b->dims[d] < 1)
      return "cuts of axis " + std::to_string(d) + " (" + std::to_string(before) + ", " + std::to_string(after) +
             ") are negative or larger than its " + std::to_string(B.dim(d)) + " elements";
    b->elements *= static_cast<uint64_t>(b->dims[d]);
  }
  if (!is_slice(s)) return require_dims(S, b->dims, b->rank, "the unpadded tensor");
  // SLICE: the box's dims with size-1 axes dropped, as the tensor's are.
  std::vector<int64_t> want, have;
  for (int d = 0; d < b->rank; ++d)
    if (b->dims[d] != 1) want.push_back(b->dims[d]);
  for (int d = 0; d < S.rank(); ++d)
    if (S.dim(d) != 1) have.push_back(S.dim(d));
  if (want != have || S.elements != b->elements) return "the slice's shape is not the box the cuts leave";
  return {};
}

std::string check(const StepView& s) {
  if (std::string e = require_slots(s, 1, 1); !e.empty()) return e;
  Box b;
  return box_of(s, &b);
}

// Calls f(small offset, big offset, n) for every run of the box's last axis, in order.
template <typename F>
void for_each_row(const StepView& s, const Box& b, F f) {
  const int rank = b.rank;
  if (b.elements == 0) return;
  if (rank == 0) return f(0, 0, 1);
  int64_t bstride[CLTRAIN_MAX_RANK];
  int64_t stride = 1;
  for (int d = rank; d-- > 0;) {
    bstride[d] = stride;
    stride *= b.dims[d] + s.params().pad_before[d] + s.params().pad_after[d];
  }
  const int64_t row = b.dims[rank - 1];
  const int64_t rows = static_cast<int64_t>(b.elements) / row;
  int64_t coord[CLTRAIN_MAX_RANK] = {};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t bo = 0;
    for (int d = 0; d < rank; ++d) bo += (coord[d] + s.params().pad_before[d]) * bstride[d];
    f(r * row, bo, row);
    for (int d = rank - 1; d-- > 0;) {
      if (++coord[d] < b.dims[d]) break;
      coord[d] = 0;
    }
  }
}

// Into the big tensor: zeros (PADV2: its value), then the small one in its box (PAD forward, SLICE
// backward).
std::string run_spread(const StepView& s, const cltrain_run_args&) {
  Box b;
  box_of(s, &b);
  const float* from = small(s).data;
  float* to = big(s).data;
  std::fill(to, to + big(s).elements, s.step->op == CLTRAIN_OP_PADV2 ? s.params().pad_value : 0.0f);
  for_each_row(s, b, [&](int64_t so, int64_t bo, int64_t n) { std::memcpy(to + bo, from + so, n * sizeof(float)); });
  return {};
}

// The box of the big tensor into the small one (PAD backward, SLICE forward).
std::string run_crop(const StepView& s, const cltrain_run_args&) {
  Box b;
  box_of(s, &b);
  const float* from = big(s).data;
  float* to = small(s).data;
  for_each_row(s, b, [&](int64_t so, int64_t bo, int64_t n) { std::memcpy(to + so, from + bo, n * sizeof(float)); });
  return {};
}

// The small tensor added into the big one's box (ACCUMULATE_BOX).
std::string run_accumulate(const StepView& s, const cltrain_run_args&) {
  Box b;
  box_of(s, &b);
  const float* from = small(s).data;
  float* to = big(s).data;
  for_each_row(s, b, [&](int64_t so, int64_t bo, int64_t n) {
    for (int64_t i = 0; i < n; ++i) to[bo + i] += from[so + i];
  });
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_ACCUMULATE_BOX = {{{}, {check, run_accumulate}, {}}};
extern const CpuOp kCpuOp_PAD = {{{check, run_spread}, {check, run_crop}, {}}};
extern const CpuOp kCpuOp_PADV2 = {{{check, run_spread}, {check, run_crop}, {}}};
extern const CpuOp kCpuOp_SLICE = {{{check, run_crop}, {check, run_spread}, {}}};

}  // namespace cpu
}  // namespace cltrain
