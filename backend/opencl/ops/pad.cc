// PAD with zeros, params.pad_before / pad_after per axis (kernels/pad.cl).
//   forward:  in [x]   out [y]    pad_forward, one work-item per element of y
//   backward: in [dy]  out [dx]   pad_backward (the crop), one work-item per element of dx
// An axis without padding is merged into the padded axis outside it (its coordinate then only
// scales the outer one's), so NHWC padded in H and W runs as three dims.
#include <algorithm>

#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "pad.cl";

std::string check(const StepView& s) {
  int32_t x, y;
  std::vector<uint64_t> xd, yd;
  if (std::string why = same_rank_pair(s, &x, &y, &xd, &yd); !why.empty()) return why;
  const cltrain_op_params& p = s.step.params;
  for (size_t d = 0; d < xd.size(); ++d) {
    if (p.pad_before[d] < 0 || p.pad_after[d] < 0) return "negative padding is not supported";
    if (xd[d] == 0) return "input " + dims_string(xd) + " is empty";
    if (yd[d] != xd[d] + static_cast<uint64_t>(p.pad_before[d]) + static_cast<uint64_t>(p.pad_after[d]))
      return "output " + dims_string(yd) + " is not input " + dims_string(xd) + " with the padding of axis " +
             std::to_string(d);
  }
  if (s.count(y) > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  const int32_t x = fwd ? s.in(0) : s.out(0), y = fwd ? s.out(0) : s.in(0);
  const std::vector<uint64_t> xd = dims_of(s.tensor(x));
  const cltrain_op_params& p = s.step.params;
  // Outermost first: an unpadded axis folds into the previous one (coordinate c_prev * n + c).
  std::vector<uint64_t> xs, pb, pa;
  for (size_t d = 0; d < xd.size(); ++d) {
    const uint64_t before = static_cast<uint64_t>(p.pad_before[d]), after = static_cast<uint64_t>(p.pad_after[d]);
    if (!xs.empty() && before == 0 && after == 0) {
      xs.back() *= xd[d];
      pb.back() *= xd[d];
      pa.back() *= xd[d];
    } else {
      xs.push_back(xd[d]);
      pb.push_back(before);
      pa.push_back(after);
    }
  }
  View6 X, Y, PB, XS, YS;
  X.fill(1), Y.fill(1), PB.fill(0), XS.fill(0), YS.fill(0);
  const size_t off = kViewDims - xs.size();  // rank <= 6, merging only shrinks
  for (size_t i = 0; i < xs.size(); ++i) {
    X[off + i] = xs[i];
    Y[off + i] = xs[i] + pb[i] + pa[i];
    PB[off + i] = pb[i];
  }
  uint64_t xn = 1, yn = 1;
  for (int k = kViewDims - 1; k >= 0; --k) {
    XS[k] = xn, YS[k] = yn;
    xn *= X[k], yn *= Y[k];
  }
  Defines d;
  define_view(d, "X", X);
  define_view(d, "Y", Y);
  define_view(d, "PB", PB);
  define_view(d, "XS", XS);
  define_view(d, "YS", YS);
  d.set("XCOUNT", static_cast<long long>(xn)).set("YCOUNT", static_cast<long long>(yn));
  Kernel k = c.kernel(kFamily, d, fwd ? "pad_forward" : "pad_backward");
  if (fwd)
    set_args(k, c.pool(), c.offset(x), c.offset(y));
  else
    set_args(k, c.pool(), c.offset(y), c.offset(x));
  return row_launch(c, k, fwd ? Y : X);
}

}  // namespace

const OpFamily kOp_PAD = {check, prepare};

}  // namespace cltrain::ocl
