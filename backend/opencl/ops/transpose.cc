// TRANSPOSE, params.perm (kernels/transpose.cl).
//   forward:  in [x]   out [y]    transpose_copy, y's axis d from x's axis perm[d]
//   backward: in [dy]  out [dx]   transpose_copy, dx's axis perm[d] from dy's axis d
// Both write their output in order, one work-item per element, gathering from the input.
#include <algorithm>

#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "transpose.cl";

std::string check(const StepView& s) {
  int32_t x, y;
  std::vector<uint64_t> xd, yd;
  if (std::string why = same_rank_pair(s, &x, &y, &xd, &yd); !why.empty()) return why;
  bool seen[CLTRAIN_MAX_RANK] = {};
  for (size_t d = 0; d < xd.size(); ++d) {
    const int32_t a = s.step.params.perm[d];
    if (a < 0 || static_cast<size_t>(a) >= xd.size() || seen[a]) return "params.perm is not a permutation";
    seen[a] = true;
    if (yd[d] != xd[static_cast<size_t>(a)])
      return "output " + dims_string(yd) + " is not input " + dims_string(xd) + " permuted";
  }
  if (s.count(y) > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  const int32_t x = fwd ? s.in(0) : s.out(0), y = fwd ? s.out(0) : s.in(0);
  const std::vector<uint64_t> xd = dims_of(s.tensor(x));
  const size_t rank = xd.size();
  std::vector<uint64_t> xstride(rank);
  uint64_t n = 1;
  for (size_t d = rank; d-- > 0;) xstride[d] = n, n *= xd[d];
  // The written tensor's axes with their strides in the read one: y's axis d reads x's axis
  // perm[d]; dx's axis perm[d] reads dy's axis d.
  std::vector<uint64_t> size(rank), stride(rank);
  if (fwd) {
    for (size_t d = 0; d < rank; ++d) size[d] = xd[s.step.params.perm[d]], stride[d] = xstride[s.step.params.perm[d]];
  } else {
    std::vector<uint64_t> ystride(rank);
    uint64_t m = 1;
    for (size_t d = rank; d-- > 0;) ystride[d] = m, m *= xd[s.step.params.perm[d]];
    for (size_t d = 0; d < rank; ++d) size[s.step.params.perm[d]] = xd[s.step.params.perm[d]];
    for (size_t d = 0; d < rank; ++d) stride[s.step.params.perm[d]] = ystride[d];
  }
  // Size-1 axes dropped; an axis merged into the one outside it where they are neighbours in the
  // read tensor too.
  std::vector<uint64_t> ms, mst;
  for (size_t d = 0; d < rank; ++d) {
    if (size[d] == 1) continue;
    if (!ms.empty() && mst.back() == stride[d] * size[d]) {
      ms.back() *= size[d];
      mst.back() = stride[d];
    } else {
      ms.push_back(size[d]);
      mst.push_back(stride[d]);
    }
  }
  View6 O, S;
  O.fill(1), S.fill(0);
  const size_t off = kViewDims - ms.size();
  for (size_t i = 0; i < ms.size(); ++i) O[off + i] = ms[i], S[off + i] = mst[i];
  Defines d;
  define_view(d, "O", O);
  define_view(d, "S", S);
  Kernel k = c.kernel(kFamily, d, "transpose_copy");
  set_args(k, c.pool(), c.offset(fwd ? x : y), c.offset(fwd ? y : x));
  return row_launch(c, k, O);
}

}  // namespace

const OpFamily kOp_TRANSPOSE = {check, prepare};

}  // namespace cltrain::ocl
