// TRANSPOSE_CONV (kernels/transpose_conv.cl): the transpose of the CONV_2D from y's shape to x's,
// float32 storage, one work-item per output element in the chains of cltrain_ops.h's numerics:
//   forward:  in [x, W, b]       out [y]           tconv_forward, per element of y
//   backward: in [x, W, y, dy]   out [dx, dW, db]  tconv_dx per element of dx, tconv_dw per
//             element of dW, tconv_db per output channel (each reads dz = act'(y) dy itself)
// Forward and backward of one op instance share a program (the definitions describe the instance).
#include "ops/dims.h"
#include "ops/op.h"
#include "window_geometry.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "transpose_conv.cl";

struct TConv {
  uint64_t n = 0, h = 0, w = 0, in_ch = 0, oh = 0, ow = 0, out_ch = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, pad_top = 0, pad_left = 0;
};

std::string geometry(const StepView& s, int32_t x, int32_t w, int32_t y, TConv* g) {
  const std::vector<uint64_t> xd = dims_of(s.tensor(x)), wd = dims_of(s.tensor(w)), yd = dims_of(s.tensor(y));
  if (xd.size() != 4 || wd.size() != 4 || yd.size() != 4 || wd[3] != xd[3] || wd[0] != yd[3] || xd[0] != yd[0])
    return "input " + dims_string(xd) + ", weights " + dims_string(wd) + " and output " + dims_string(yd) +
           " are not [N,H,W,I], [O,KH,KW,I] and [N,OH,OW,O]";
  const cltrain_op_params& p = s.step.params;
  AxisGeometry gh, gw;
  if (std::string e = axis_geometry(p.padding, static_cast<int64_t>(yd[1]), static_cast<int64_t>(wd[1]), p.stride_h, 1,
                                    "height", &gh);
      !e.empty())
    return e;
  if (std::string e = axis_geometry(p.padding, static_cast<int64_t>(yd[2]), static_cast<int64_t>(wd[2]), p.stride_w, 1,
                                    "width", &gw);
      !e.empty())
    return e;
  if (static_cast<uint64_t>(gh.out) != xd[1] || static_cast<uint64_t>(gw.out) != xd[2])
    return "input " + dims_string(xd) + " is not what a convolution of the output " + dims_string(yd) + " gives";
  *g = {xd[0], xd[1], xd[2],      xd[3],      yd[1],         yd[2],        yd[3],
        wd[1], wd[2], p.stride_h, p.stride_w, gh.pad_before, gw.pad_before};
  if (s.count(x) > UINT32_MAX || s.count(y) > UINT32_MAX || s.count(w) > UINT32_MAX)
    return "is too large for 32-bit indexing";
  return {};
}

// The step's x (or dx), W and y (or dy).
std::string operands(const StepView& s, int32_t* x, int32_t* w, int32_t* y) {
  std::string why;
  if (!activation_supported(s.step.params.activation))
    return "fused activation " + std::to_string(s.step.params.activation) + " is not supported";
  *w = s.in(1);
  if (!(why = require_tensor(s, *w, "weights")).empty()) return why;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    *x = s.in(0), *y = s.out(0);
    if (!(why = require_tensor(s, *x, "input")).empty()) return why;
    return require_tensor(s, *y, "output");
  }
  if (s.step.phase != CLTRAIN_PHASE_BACKWARD) return "has no " + phase_name(s.step.phase) + " step";
  if (s.step.params.dx_activation != CLTRAIN_ACT_NONE) return "dx_activation is not supported";
  *y = s.in(3);
  if (!(why = require_tensor(s, *y, "output gradient")).empty()) return why;
  if (s.out(1) >= 0 && s.in(0) < 0) return "the weights' gradient needs the input";
  if (s.step.params.activation != CLTRAIN_ACT_NONE && !(why = require_count(s, s.in(2), "output", s.count(*y))).empty())
    return why;
  *x = s.in(0) >= 0 ? s.in(0) : s.out(0);
  if (*x < 0) return "needs the input or its gradient (the input's shape)";
  return {};
}

std::string check(const StepView& s) {
  int32_t x, w, y;
  if (std::string why = operands(s, &x, &w, &y); !why.empty()) return why;
  TConv g;
  if (std::string why = geometry(s, x, w, y, &g); !why.empty()) return why;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD && s.in(2) >= 0) return require_count(s, s.in(2), "bias", g.out_ch);
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD && s.out(2) >= 0)
    return require_count(s, s.out(2), "bias gradient", g.out_ch);
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  int32_t x, w, y;
  operands(s, &x, &w, &y);
  TConv g;
  geometry(s, x, w, y, &g);
  Defines d;
  d.set("TC_N", static_cast<long long>(g.n))
      .set("TC_H", static_cast<long long>(g.h))
      .set("TC_W", static_cast<long long>(g.w));
  d.set("TC_I", static_cast<long long>(g.in_ch)).set("TC_OH", static_cast<long long>(g.oh));
  d.set("TC_OW", static_cast<long long>(g.ow)).set("TC_O", static_cast<long long>(g.out_ch));
  d.set("TC_KH", static_cast<long long>(g.kh)).set("TC_KW", static_cast<long long>(g.kw));
  d.set("TC_SH", static_cast<long long>(g.sh)).set("TC_SW", static_cast<long long>(g.sw));
  d.set("TC_PT", static_cast<long long>(g.pad_top)).set("TC_PL", static_cast<long long>(g.pad_left));
  d.set("ACT", s.step.params.activation);
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    Kernel k = c.kernel(kFamily, d, "tconv_forward");
    set_args(k, c.pool(), c.offset(x), c.offset(w), c.offset_or_zero(s.in(2)),
             static_cast<cl_uint>(s.in(2) >= 0 ? 1 : 0), c.offset(y));
    const uint64_t count = s.count(y);
    return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
  }
  const cl_uint x_off = c.offset_or_zero(s.in(0)), w_off = c.offset(w), y_off = c.offset_or_zero(s.in(2)),
                dy_off = c.offset(y);
  Kernel kx, kw, kb;
  uint64_t nx = 0, nw = 0, nb = 0;
  if (s.out(0) >= 0) {
    kx = c.kernel(kFamily, d, "tconv_dx");
    set_args(kx, c.pool(), w_off, y_off, dy_off, c.offset(s.out(0)));
    nx = s.count(s.out(0));
  }
  if (s.out(1) >= 0) {
    kw = c.kernel(kFamily, d, "tconv_dw");
    set_args(kw, c.pool(), x_off, y_off, dy_off, c.offset(s.out(1)));
    nw = s.count(s.out(1));
  }
  if (s.out(2) >= 0) {
    kb = c.kernel(kFamily, d, "tconv_db");
    set_args(kb, c.pool(), y_off, dy_off, c.offset(s.out(2)));
    nb = g.out_ch;
  }
  return [kx, kw, kb, nx, nw, nb](const Queue& q, const cltrain_run_args*) {
    if (kx) q.launch_1d(kx, nx);
    if (kw) q.launch_1d(kw, nw);
    if (kb) q.launch_1d(kb, nb);
  };
}

}  // namespace

const OpFamily kOp_TRANSPOSE_CONV = {check, prepare};

}  // namespace cltrain::ocl
