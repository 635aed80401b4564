// TILE (kernels/tile.cl), the multiples from the shapes (y's dim over x's).
//   forward:  in [x]   out [y]    tile_forward, one work-item per element of y (a copy)
//   backward: in [dy]  out [dx]   tile_backward, one work-item per element of dx: the sum of its
//                                 copies' gradients in increasing flat index of y
// Forward and backward of one op instance share a program (the definitions describe x and y).
#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "tile.cl";

// x (or dx) and y (or dy) of the step (unary_pair) with their dims.
std::string operands(const StepView& s, int32_t* x, int32_t* y, std::vector<uint64_t>* xd, std::vector<uint64_t>* yd) {
  if (std::string why = unary_pair(s, x, y); !why.empty()) return why;
  *xd = dims_of(s.tensor(*x));
  *yd = dims_of(s.tensor(*y));
  return {};
}

std::string check(const StepView& s) {
  int32_t x, y;
  std::vector<uint64_t> xd, yd;
  if (std::string why = operands(s, &x, &y, &xd, &yd); !why.empty()) return why;
  if (xd.size() != yd.size() || xd.empty() || xd.size() > kViewDims)
    return "input " + dims_string(xd) + " and output " + dims_string(yd) + " need one rank, 1 to 6";
  for (size_t d = 0; d < xd.size(); ++d)
    if (xd[d] == 0 || yd[d] % xd[d] != 0)
      return "output " + dims_string(yd) + " is not input " + dims_string(xd) + " tiled a whole number of times";
  if (s.count(y) > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  int32_t x, y;
  std::vector<uint64_t> xd, yd;
  operands(s, &x, &y, &xd, &yd);
  View6 X, M, XS, YS;
  X.fill(1), M.fill(1), XS.fill(0), YS.fill(0);
  const size_t off = kViewDims - xd.size();
  for (size_t d = 0; d < xd.size(); ++d) X[off + d] = xd[d], M[off + d] = yd[d] / xd[d];
  uint64_t xs = 1, ys = 1;
  for (size_t k = kViewDims; k-- > 0;) {
    XS[k] = xs, YS[k] = ys;
    xs *= X[k], ys *= X[k] * M[k];
  }
  Defines d;
  define_view(d, "X", X);
  define_view(d, "M", M);
  define_view(d, "XS", XS);
  define_view(d, "YS", YS);
  d.set("XCOUNT", static_cast<long long>(s.count(x))).set("YCOUNT", static_cast<long long>(s.count(y)));
  Kernel k = c.kernel(kFamily, d, fwd ? "tile_forward" : "tile_backward");
  if (fwd)
    set_args(k, c.pool(), c.offset(x), c.offset(y));
  else
    set_args(k, c.pool(), c.offset(y), c.offset(x));
  const uint64_t count = fwd ? s.count(y) : s.count(x);
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_TILE = {check, prepare};

}  // namespace cltrain::ocl
