// CONCATENATION along params.axis: forward in [x0, x1, ...] out [y]; backward in [dy] out
// [dx0, dx1, ...], each of which may be -1 (no gradient needed). Copies only: exact.
//
// The backward knows an input's extent along the axis from params.concat_extents, else only from
// its dx. Without the extents, where one dx is absent its extent is what the others leave of dy's;
// where several are, the present ones must all come before them (else where they start in dy is
// unknown).
#include <cstring>
#include <vector>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

struct Layout {
  int64_t outer = 1, inner = 1, axis_total = 0;
  std::vector<int64_t> start, extent;  // per part along the axis; extent -1: unknown (absent, unneeded)
};

// parts: the inputs (forward) or dx outputs (backward); whole: y or dy.
std::string layout(const StepView& s, const TensorRef* parts, int count, const TensorRef& whole, bool backward,
                   Layout* l) {
  if (std::string e = require(whole, backward ? "dy" : "y"); !e.empty()) return e;
  const int rank = whole.rank();
  const int32_t axis = s.params().axis;
  if (rank < 1) return "y is a scalar";
  if (axis < 0 || axis >= rank) return "axis " + std::to_string(axis) + " is outside [0, " + std::to_string(rank) + ")";
  if (count < 1) return "no inputs";
  for (int d = 0; d < axis; ++d) l->outer *= whole.dim(d);
  for (int d = axis + 1; d < rank; ++d) l->inner *= whole.dim(d);
  l->axis_total = whole.dim(axis);
  int64_t known = 0;
  int absent = 0;
  for (int k = 0; k < count; ++k) {
    const TensorRef& p = parts[k];
    const int32_t given = k < CLTRAIN_MAX_STEP_IO ? s.params().concat_extents[k] : 0;
    if (!p.present()) {
      if (!backward) return "input " + std::to_string(k) + " is missing";
      if (given > 0) {
        l->extent.push_back(given);
        known += given;
        continue;
      }
      ++absent;
      l->extent.push_back(-1);
      continue;
    }
    if (given > 0 && given != (p.rank() > axis ? p.dim(axis) : -1))
      return std::string(backward ? "dx" : "x") + std::to_string(k) + " " + shape_string(p) + " is not " +
             std::to_string(given) + " long along axis " + std::to_string(axis) + " as params.concat_extents says";
    bool fits = p.rank() == rank;
    for (int d = 0; fits && d < rank; ++d) fits = d == axis || p.dim(d) == whole.dim(d);
    if (!fits)
      return std::string(backward ? "dx" : "x") + std::to_string(k) + " " + shape_string(p) + " does not fit " +
             (backward ? "dy " : "y ") + shape_string(whole) + " along axis " + std::to_string(axis);
    l->extent.push_back(p.dim(axis));
    known += p.dim(axis);
  }
  if (absent == 1)
    for (int64_t& e : l->extent)
      if (e < 0) e = l->axis_total - known;
  if (known > l->axis_total)
    return "the parts are longer along axis " + std::to_string(axis) + " than " + shape_string(whole);
  int64_t at = 0;
  for (int k = 0; k < count; ++k) {
    l->start.push_back(at);
    if (l->extent[k] < 0) {
      for (int j = k + 1; j < count; ++j)
        if (parts[j].present())
          return "dx" + std::to_string(j) + " follows two or more absent gradients: where it starts in dy is unknown";
      break;
    }
    at += l->extent[k];
  }
  if (absent <= 1 && at != l->axis_total)
    return "the parts add up to " + std::to_string(at) + " along axis " + std::to_string(axis) + ", " +
           shape_string(whole) + " has " + std::to_string(l->axis_total);
  return {};
}

std::string check_forward(const StepView& s) {
  Layout l;
  if (std::string e = require_slots(s, CLTRAIN_MAX_STEP_IO, 1); !e.empty()) return e;
  return layout(s, s.in, s.step->num_inputs, s.out[0], false, &l);
}

std::string check_backward(const StepView& s) {
  Layout l;
  if (std::string e = require_slots(s, 1, CLTRAIN_MAX_STEP_IO); !e.empty()) return e;
  return layout(s, s.out, s.step->num_outputs, s.in[0], true, &l);
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  Layout l;
  layout(s, s.in, s.step->num_inputs, s.out[0], false, &l);
  float* y = s.out[0].data;
  for (int k = 0; k < s.step->num_inputs; ++k) {
    const int64_t n = l.extent[k] * l.inner;
    for (int64_t o = 0; o < l.outer; ++o)
      std::memcpy(y + (o * l.axis_total + l.start[k]) * l.inner, s.in[k].data + o * n, n * sizeof(float));
  }
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  Layout l;
  layout(s, s.out, s.step->num_outputs, s.in[0], true, &l);
  const float* dy = s.in[0].data;
  for (int k = 0; k < s.step->num_outputs; ++k) {
    if (!s.out[k].data) continue;
    const int64_t n = l.extent[k] * l.inner;
    for (int64_t o = 0; o < l.outer; ++o)
      std::memcpy(s.out[k].data + o * n, dy + (o * l.axis_total + l.start[k]) * l.inner, n * sizeof(float));
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_CONCATENATION = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
