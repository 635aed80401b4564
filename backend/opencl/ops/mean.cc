// MEAN (and SUM, without the divide) over the axes of params.axes_mask, with or without keep_dims
// (kernels/mean.cl); REDUCE_MAX
// and REDUCE_MIN over the same views (extreme_forward, extreme_backward: in [x, y, dy] out [dx]).
//   forward:  in [x]   out [y]    mean_forward, one work-item per element of y, summing its
//                                 elements of x in increasing flat index, then / count
//   backward: in [dy]  out [dx]   mean_backward, one work-item per element of dx: dy / count
// Forward and backward of one op instance share a program: the definitions describe x and the
// reduced axes, which the backward reads from dx (x's shape).
#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "mean.cl";

// The shape y must have for x, mask and keep_dims.
std::vector<uint64_t> mean_output_dims(const std::vector<uint64_t>& x, uint32_t mask, bool keep_dims) {
  std::vector<uint64_t> y;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!(mask >> d & 1u))
      y.push_back(x[d]);
    else if (keep_dims)
      y.push_back(1);
  }
  return y;
}

bool is_extreme(const StepView& s) { return s.step.op == CLTRAIN_OP_REDUCE_MAX || s.step.op == CLTRAIN_OP_REDUCE_MIN; }

// x (or dx) and y (or dy) of the step: MEAN's unary pair; REDUCE_MAX/MIN backward in [x, y, dy]
// out [dx].
std::string operands(const StepView& s, int32_t* x, int32_t* y) {
  if (!is_extreme(s) || s.step.phase == CLTRAIN_PHASE_FORWARD) return unary_pair(s, x, y);
  if (s.step.phase != CLTRAIN_PHASE_BACKWARD || s.step.num_inputs != 3 || s.step.num_outputs != 1)
    return "needs x, y and dy in and dx out";
  for (int k = 0; k < 3; ++k)
    if (s.in(k) < 0) return "needs x, y and dy in and dx out";
  if (s.out(0) < 0) return "needs x, y and dy in and dx out";
  if (s.count(s.in(0)) != s.count(s.out(0)) || s.count(s.in(1)) != s.count(s.in(2)))
    return "x and dx, y and dy must have the same element counts";
  *x = s.out(0);
  *y = s.in(1);
  return {};
}

std::string check(const StepView& s) {
  std::string why;
  int32_t x, y;
  if (!(why = operands(s, &x, &y)).empty()) return why;
  const std::vector<uint64_t> xd = dims_of(s.tensor(x));
  const uint32_t mask = static_cast<uint32_t>(s.step.params.axes_mask);
  if (s.step.params.axes_mask < 0 || (xd.size() < 32 && (mask >> xd.size()) != 0))
    return "axes_mask " + std::to_string(s.step.params.axes_mask) + " names axes outside the input " + dims_string(xd);
  for (uint64_t d : xd)
    if (d == 0) return "input " + dims_string(xd) + " is empty";
  const std::vector<uint64_t> want = mean_output_dims(xd, mask, s.step.params.keep_dims != 0);
  const std::vector<uint64_t> yd = dims_of(s.tensor(y));
  // Everything reduced without keep_dims: a scalar, [] or [1].
  const bool scalar = want.empty() && yd == std::vector<uint64_t>{1};
  if (yd != want && !scalar)
    return "output " + dims_string(yd) + " should be " + dims_string(want) + " for input " + dims_string(xd);
  if (s.count(x) > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  int32_t x, y;
  operands(s, &x, &y);
  const std::vector<uint64_t> xd = dims_of(s.tensor(x));
  const uint32_t mask = static_cast<uint32_t>(s.step.params.axes_mask);
  std::vector<unsigned> masks(xd.size());
  uint64_t reduced = 1;
  for (size_t d = 0; d < xd.size(); ++d) {
    const bool red = mask >> d & 1u;
    masks[d] = red ? 1u : 3u;  // bit 0: x, bit 1: y
    if (red) reduced *= xd[d];
  }
  const SpanView v = make_span_view(xd, masks);
  Defines d;
  define_view(d, "X", v.size);
  define_view(d, "XS", v.strides(0));
  define_view(d, "YS", v.strides(1));
  d.set("XCOUNT", static_cast<long long>(s.count(x))).set("YCOUNT", static_cast<long long>(s.count(y)));
  d.set_float("RCOUNT", static_cast<float>(reduced));
  if (is_extreme(s)) {
    d.set("EXTREME_MIN", s.step.op == CLTRAIN_OP_REDUCE_MIN ? 1 : 0);
    Kernel k = c.kernel(kFamily, d, fwd ? "extreme_forward" : "extreme_backward");
    if (fwd)
      set_args(k, c.pool(), c.offset(x), c.offset(y));
    else
      set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.in(2)), c.offset(s.out(0)));
    const uint64_t count = fwd ? s.count(y) : s.count(x);
    return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
  }
  d.set("REDUCE_SUM", s.step.op == CLTRAIN_OP_SUM ? 1 : 0);
  c.storage(c.storage(d, fwd ? "X_H" : "DX_H", x), fwd ? "Y_H" : "DY_H", y);
  Kernel k = c.kernel(kFamily, d, fwd ? "mean_forward" : "mean_backward");
  if (fwd)
    set_args(k, c.pool(), c.offset(x), c.offset(y));
  else
    set_args(k, c.pool(), c.offset(y), c.offset(x));
  const uint64_t count = fwd ? s.count(y) : s.count(x);
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_MEAN = {check, prepare, nullptr, true};
const OpFamily kOp_REDUCE_MAX = {check, prepare};
const OpFamily kOp_REDUCE_MIN = {check, prepare};
const OpFamily kOp_SUM = {check, prepare, nullptr, true};

}  // namespace cltrain::ocl
