// MAX_POOL_2D and AVERAGE_POOL_2D over NHWC (kernels/pool.cl).
//   MAX_POOL_2D      forward in [x] out [y, argmax];  backward in [x, dy, argmax, y] out [dx]
//                    (argmax optional, UINT8; the backward reads x or argmax, and y for
//                    params.dx_activation)
//   AVERAGE_POOL_2D  forward in [x] out [y];  backward in [dy] out [dx]
// One work-item per output element forward; backward gathers, one work-item per element of dx
// (max: recomputing the first maximum of each window that could take it), so there are no
// atomics and the order of every sum is fixed. Forward and backward share a program.
#include <climits>

#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "pool.cl";

struct PoolShape {
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0;
  int64_t fh = 0, fw = 0, sh = 0, sw = 0, pt = 0, pl = 0;
};

// Output size and padding before along one dim (cltrain_ops.h, cltrain_padding; no dilation).
bool pool_dim(int64_t in, int64_t filter, int64_t stride, int32_t padding, int64_t* out, int64_t* before) {
  if (padding == CLTRAIN_PADDING_SAME) {
    *out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((*out - 1) * stride + filter - in, 0);
    *before = total / 2;
  } else {
    *out = in >= filter ? (in - filter) / stride + 1 : 0;  // ceil((in - filter + 1) / stride)
    *before = 0;
  }
  return *out > 0;
}

std::string check_shape(const StepView& s, PoolShape& sh) {
  std::string why;
  const bool max_pool = s.step.op == CLTRAIN_OP_MAX_POOL_2D;
  int32_t x = -1, y = -1;  // y: the output or its gradient, x: the input or its gradient
  const cltrain_op_params& p = s.step.params;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    x = s.in(0), y = s.out(0);
    if (!(why = require_tensor(s, x, "input")).empty()) return why;
    if (!(why = require_tensor(s, y, "output")).empty()) return why;
    if (max_pool && s.out(1) >= 0) {
      if (int64_t{p.filter_h} * p.filter_w > 256) return "argmax needs a window of at most 256 positions";
      if (!(why = require_count(s, s.out(1), "argmax", s.count(y))).empty()) return why;
    }
  } else if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    x = s.out(0), y = s.in(max_pool ? 1 : 0);
    if (!(why = require_tensor(s, y, "output gradient")).empty()) return why;
    if (!(why = require_tensor(s, x, "input gradient")).empty()) return why;
    if (max_pool) {
      if (s.in(0) < 0 && s.in(2) < 0) return "needs the input or the argmax";
      if (s.in(0) >= 0 && dims_of(s.tensor(s.in(0))) != dims_of(s.tensor(x)))
        return "input and input gradient differ in shape";
      if (s.in(2) >= 0 && !(why = require_count(s, s.in(2), "argmax", s.count(y))).empty()) return why;
      if (p.dx_activation != CLTRAIN_ACT_NONE) {
        if (!activation_supported(p.dx_activation)) return "dx_activation is not supported";
        if (!(why = require_count(s, s.in(3), "output (for dx_activation)", s.count(y))).empty()) return why;
      }
    }
  } else {
    return "has no " + phase_name(s.step.phase) + " step";
  }
  const cltrain_tensor_desc& xt = s.tensor(x);
  const cltrain_tensor_desc& yt = s.tensor(y);
  if (xt.rank != 4 || yt.rank != 4) return "needs NHWC input and output (rank 4)";
  if (p.filter_h <= 0 || p.filter_w <= 0 || p.stride_h <= 0 || p.stride_w <= 0)
    return "needs positive filter and stride";
  if (p.padding != CLTRAIN_PADDING_SAME && p.padding != CLTRAIN_PADDING_VALID)
    return "padding " + std::to_string(p.padding) + " is not SAME or VALID";
  if (p.activation != CLTRAIN_ACT_NONE) return "a fused activation is not supported on pools";
  sh.n = xt.dims[0], sh.h = xt.dims[1], sh.w = xt.dims[2], sh.c = xt.dims[3];
  if (sh.n <= 0 || sh.h <= 0 || sh.w <= 0 || sh.c <= 0) return "input " + dims_string(dims_of(xt)) + " is empty";
  sh.fh = p.filter_h, sh.fw = p.filter_w, sh.sh = p.stride_h, sh.sw = p.stride_w;
  if (!pool_dim(sh.h, sh.fh, sh.sh, p.padding, &sh.oh, &sh.pt) ||
      !pool_dim(sh.w, sh.fw, sh.sw, p.padding, &sh.ow, &sh.pl))
    return "filter " + std::to_string(sh.fh) + "x" + std::to_string(sh.fw) + " does not fit input " +
           dims_string(dims_of(xt)) + " with VALID padding";
  const std::vector<uint64_t> want = {static_cast<uint64_t>(sh.n), static_cast<uint64_t>(sh.oh),
                                      static_cast<uint64_t>(sh.ow), static_cast<uint64_t>(sh.c)};
  if (dims_of(yt) != want)
    return "output " + dims_string(dims_of(yt)) + " should be " + dims_string(want) + " for input " +
           dims_string(dims_of(xt));
  if (s.count(x) > INT_MAX || s.count(y) > INT_MAX) return "is too large for 32-bit indexing";
  return {};
}

std::string check(const StepView& s) {
  PoolShape sh;
  return check_shape(s, sh);
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  PoolShape sh;
  check_shape(s, sh);
  Defines d;
  d.set("N", sh.n).set("H", sh.h).set("W", sh.w).set("C", sh.c).set("OH", sh.oh).set("OW", sh.ow);
  d.set("FH", sh.fh).set("FW", sh.fw).set("SH", sh.sh).set("SW", sh.sw).set("PT", sh.pt).set("PL", sh.pl);
  const bool max_pool = s.step.op == CLTRAIN_OP_MAX_POOL_2D;
  // Storage of x, y (forward; the max pool's backward reads them as inputs 0 and 3), dy, dx.
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    c.storage(c.storage(d, "X_H", s.in(0)), "Y_H", s.out(0));
  } else {
    c.storage(d, "DX_H", s.out(0));
    c.storage(d, "DY_H", s.in(max_pool ? 1 : 0));
    if (max_pool) c.storage(c.storage(d, "X_H", s.in(0)), "Y_H", s.in(3));
  }
  Kernel k;
  uint64_t count = 0;
  const bool argmax = max_pool && s.out(1) >= 0;
  // max_pool_forward's lanes (channel_lanes), and max_pool_backward_scatter's; the other kernels work on one element
  // each.
  const bool scatter =
      max_pool && s.step.phase != CLTRAIN_PHASE_FORWARD && s.in(2) >= 0 && sh.sh >= sh.fh && sh.sw >= sh.fw;
  const long long lanes = max_pool && (s.step.phase == CLTRAIN_PHASE_FORWARD || scatter) ? channel_lanes(sh.c) : 1;
  d.set("VEC", lanes);
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    d.set("ARGMAX", argmax);
    k = c.kernel(kFamily, d, max_pool ? "max_pool_forward" : "avg_pool_forward");
    if (max_pool)
      set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)), argmax ? c.offset(s.out(1)) : cl_uint{0});
    else
      set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)));
    count = s.count(s.out(0)) / static_cast<uint64_t>(lanes);
  } else if (max_pool && s.in(2) >= 0) {  // from the argmax
    const int32_t act = s.step.params.dx_activation;
    d.set("ACT", act).set("XACT", act);
    // Windows that do not overlap scatter (one work-item per window's VEC channels); else each dx
    // gathers.
    k = c.kernel(kFamily, d, scatter ? "max_pool_backward_scatter" : "max_pool_backward_argmax");
    set_args(k, c.pool(), c.offset(s.in(2)), c.offset(s.in(1)),
             act != CLTRAIN_ACT_NONE ? c.offset(s.in(3)) : cl_uint{0}, c.offset(s.out(0)));
    count = scatter ? s.count(s.in(1)) / static_cast<uint64_t>(lanes) : s.count(s.out(0));
    // Positions no window covers: zeros first.
    const bool covered = sh.sh == sh.fh && sh.sw == sh.fw && sh.oh * sh.sh - sh.pt >= sh.h &&
                         sh.ow * sh.sw - sh.pl >= sh.w && sh.pt == 0 && sh.pl == 0;
    if (scatter && !covered) {
      const size_t elem = c.half(s.out(0)) ? 2 : 4;
      const size_t off = static_cast<size_t>(c.offset(s.out(0))) * elem, bytes = s.count(s.out(0)) * elem;
      const std::string what = s.what();
      const cl_mem pool = c.pool();
      return [k, count, pool, off, bytes, what](const Queue& q, const cltrain_run_args*) {
        q.fill_zero(pool, off, bytes, what);
        q.launch_1d(k, count);
      };
    }
  } else if (max_pool) {
    d.set("ACT", s.step.params.dx_activation);
    k = c.kernel(kFamily, d, "max_pool_backward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), s.in(3) >= 0 ? c.offset(s.in(3)) : cl_uint{0},
             c.offset(s.out(0)));
    count = s.count(s.out(0));
  } else {
    k = c.kernel(kFamily, d, "avg_pool_backward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.out(0)));
    count = s.count(s.out(0));
  }
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_MAX_POOL_2D = {check, prepare, nullptr, true};
const OpFamily kOp_AVERAGE_POOL_2D = {check, prepare, nullptr, true};

}  // namespace cltrain::ocl
