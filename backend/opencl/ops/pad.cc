// PAD with zeros and SLICE, one the other's inverse (kernels/pad.cl): the small tensor (PAD's x,
// SLICE's y) is the box of the big one (PAD's y, SLICE's x) that params.pad_before / pad_after
// leave around each axis.
//   PAD forward, SLICE backward:  pad_forward, one work-item per element of the big tensor
//   PAD backward, SLICE forward:  pad_backward (the crop), one work-item per element of the box
//   ACCUMULATE_BOX (backward):    pad_accumulate (the big one's box += the small one), one
//                                 work-item per element of the box; roles as SLICE backward's
// An axis without cuts is merged into the cut axis outside it (its coordinate then only scales
// the outer one's), so NHWC padded in H and W runs as three dims.
#include <algorithm>
#include <cstring>

#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "pad.cl";

bool is_slice(const StepView& s) { return s.step.op == CLTRAIN_OP_SLICE || s.step.op == CLTRAIN_OP_ACCUMULATE_BOX; }

// The big and small tensors of the step.
void roles(const StepView& s, int32_t* big, int32_t* small) {
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  *big = is_slice(s) == fwd ? s.in(0) : s.out(0);
  *small = is_slice(s) == fwd ? s.out(0) : s.in(0);
}

// The box's dims: the big tensor's less the cuts; "" or what is wrong.
std::string box_of(const StepView& s, std::vector<uint64_t>* box) {
  if (s.step.num_inputs != 1 || s.step.num_outputs != 1 || s.in(0) < 0 || s.out(0) < 0)
    return "needs one input and one output";
  int32_t big, small;
  roles(s, &big, &small);
  const std::vector<uint64_t> bd = dims_of(s.tensor(big)), sd = dims_of(s.tensor(small));
  const cltrain_op_params& p = s.step.params;
  box->clear();
  for (size_t d = 0; d < bd.size(); ++d) {
    if (p.pad_before[d] < 0 || p.pad_after[d] < 0) return "negative padding is not supported";
    const uint64_t cut = static_cast<uint64_t>(p.pad_before[d]) + static_cast<uint64_t>(p.pad_after[d]);
    if (bd[d] <= cut) return "cuts of axis " + std::to_string(d) + " leave nothing of " + dims_string(bd);
    box->push_back(bd[d] - cut);
  }
  std::vector<uint64_t> want, have;
  for (uint64_t n : *box)
    if (n != 1 || !is_slice(s)) want.push_back(n);
  for (uint64_t n : sd)
    if (n != 1 || !is_slice(s)) have.push_back(n);
  if (want != have)
    return "tensor " + dims_string(sd) + " is not the box " + dims_string(*box) + " of " + dims_string(bd);
  if (s.count(big) > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

std::string check(const StepView& s) {
  if (s.step.op == CLTRAIN_OP_ACCUMULATE_BOX && s.step.phase != CLTRAIN_PHASE_BACKWARD)
    return "has no " + phase_name(s.step.phase) + " step";
  std::vector<uint64_t> box;
  return box_of(s, &box);
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  int32_t big, small;
  roles(s, &big, &small);
  std::vector<uint64_t> xd;
  box_of(s, &xd);
  const bool accumulate = s.step.op == CLTRAIN_OP_ACCUMULATE_BOX;
  const bool spread = !accumulate && is_slice(s) != (s.step.phase == CLTRAIN_PHASE_FORWARD);  // into the big one
  const cltrain_op_params& p = s.step.params;
  // Outermost first: an uncut axis folds into the previous one (coordinate c_prev * n + c).
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
  define_view(d, "XS", XS);
  define_view(d, "YS", YS);
  d.set("XCOUNT", static_cast<long long>(xn)).set("YCOUNT", static_cast<long long>(yn));
  uint32_t value_bits = 0;  // PADV2's value as its bits (-inf and NaN included), else 0.0f
  if (s.step.op == CLTRAIN_OP_PADV2) std::memcpy(&value_bits, &p.pad_value, 4);
  d.set("PAD_VALUE_BITS", static_cast<long long>(value_bits));
  // In the kernels' words X is the small tensor and Y the big one. The cuts before are an
  // argument: boxes of one shape at other places share a program.
  cl_uint8 before{};
  for (int k = 0; k < kViewDims; ++k) before.s[k] = static_cast<cl_uint>(PB[k]);
  if (accumulate) {
    Kernel k = c.kernel(kFamily, d, "pad_accumulate");
    set_args(k, c.pool(), c.offset(small), c.offset(big), before);
    return row_launch(c, k, X);
  }
  Kernel k = c.kernel(kFamily, d, spread ? "pad_forward" : "pad_backward");
  set_args(k, c.pool(), c.offset(spread ? small : big), c.offset(spread ? big : small), before);
  return row_launch(c, k, spread ? Y : X);
}

}  // namespace

const OpFamily kOp_PAD = {check, prepare};
const OpFamily kOp_PADV2 = {check, prepare};
const OpFamily kOp_SLICE = {check, prepare};
const OpFamily kOp_ACCUMULATE_BOX = {check, prepare};

}  // namespace cltrain::ocl
