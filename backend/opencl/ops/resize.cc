// RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR (kernels/resize.cl), float32 storage:
//   forward:  in [x]   out [y]    resize_forward, one work-item per element of y
//   backward: in [dy]  out [dx]   resize_backward, one work-item per element of dx (a gather over
//                                 the output positions that read it)
// The scales are arguments, computed as the CPU computes them (common/resize_geometry.h).
#include "ops/dims.h"
#include "ops/op.h"
#include "resize_geometry.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "resize.cl";

std::string operands(const StepView& s, int32_t* x, int32_t* y) {
  if (std::string why = unary_pair(s, x, y); !why.empty()) return why;
  const std::vector<uint64_t> xd = dims_of(s.tensor(*x)), yd = dims_of(s.tensor(*y));
  if (xd.size() != 4 || yd.size() != 4 || xd[0] != yd[0] || xd[3] != yd[3])
    return "input " + dims_string(xd) + " and output " + dims_string(yd) + " are not [N,H,W,C] and [N,OH,OW,C]";
  if (s.step.params.align_corners && s.step.params.half_pixel_centers)
    return "align_corners and half_pixel_centers are both set";
  if (s.count(*x) > INT32_MAX || s.count(*y) > INT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

std::string check(const StepView& s) {
  int32_t x, y;
  return operands(s, &x, &y);
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  int32_t x, y;
  operands(s, &x, &y);
  const std::vector<uint64_t> xd = dims_of(s.tensor(x)), yd = dims_of(s.tensor(y));
  const bool align = s.step.params.align_corners != 0;
  Defines d;
  d.set("RS_N", static_cast<long long>(xd[0])).set("RS_H", static_cast<long long>(xd[1]));
  d.set("RS_W", static_cast<long long>(xd[2])).set("RS_C", static_cast<long long>(xd[3]));
  d.set("RS_OH", static_cast<long long>(yd[1])).set("RS_OW", static_cast<long long>(yd[2]));
  d.set("RS_BILINEAR", s.step.op == CLTRAIN_OP_RESIZE_BILINEAR ? 1 : 0);
  d.set("RS_ALIGN", align ? 1 : 0).set("RS_HALF", s.step.params.half_pixel_centers ? 1 : 0);
  const float sh = resize_scale(static_cast<int64_t>(xd[1]), static_cast<int64_t>(yd[1]), align);
  const float sw = resize_scale(static_cast<int64_t>(xd[2]), static_cast<int64_t>(yd[2]), align);
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  Kernel k = c.kernel(kFamily, d, fwd ? "resize_forward" : "resize_backward");
  if (fwd)
    set_args(k, c.pool(), c.offset(x), c.offset(y), sh, sw);
  else
    set_args(k, c.pool(), c.offset(y), c.offset(x), sh, sw);
  const uint64_t count = fwd ? s.count(y) : s.count(x);
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_RESIZE_BILINEAR = {check, prepare};
const OpFamily kOp_RESIZE_NEAREST_NEIGHBOR = {check, prepare};

}  // namespace cltrain::ocl
