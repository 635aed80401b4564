// CONCATENATION along params.axis of up to CLTRAIN_MAX_STEP_IO (8) inputs (kernels/concatenation.cl).
//   forward:  in [x0, x1, ...]  out [y]              concat_forward, one work-item per element of y
//   backward: in [dy]           out [dx0, dx1, ...]  concat_backward: each present dx gets its slice
// The tensors are viewed as [OUTER, width] with OUTER the product of the dims before the axis;
// forward and backward of one op instance share a program. The backward takes the widths from the
// dx shapes and params.concat_extents; without the extents, absent dx that form one block take
// the block's width, and a present dx between two absent ones is refused.
#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "concatenation.cl";
constexpr int kMaxInputs = CLTRAIN_MAX_STEP_IO;
static_assert(kMaxInputs == 8, "kernels/concatenation.cl takes x0..x7");

struct ConcatShape {
  uint64_t outer = 0, row = 0, inner = 0;
  int parts = 0;
  uint64_t width[kMaxInputs] = {};
};

std::string check_shape(const StepView& s, ConcatShape& sh) {
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  if (!fwd && s.step.phase != CLTRAIN_PHASE_BACKWARD) return "has no " + phase_name(s.step.phase) + " step";
  const int32_t y = fwd ? s.out(0) : s.in(0);
  std::string why;
  if (!(why = require_tensor(s, y, fwd ? "output" : "output gradient")).empty()) return why;
  sh.parts = fwd ? s.step.num_inputs : s.step.num_outputs;
  if (sh.parts < 1 || sh.parts > kMaxInputs)
    return "has " + std::to_string(sh.parts) + " inputs (1 to " + std::to_string(kMaxInputs) + " are supported)";
  const std::vector<uint64_t> yd = dims_of(s.tensor(y));
  const int32_t axis = s.step.params.axis;
  if (axis < 0 || static_cast<size_t>(axis) >= yd.size())
    return "axis " + std::to_string(axis) + " is outside output " + dims_string(yd);
  sh.outer = 1;
  for (int32_t d = 0; d < axis; ++d) sh.outer *= yd[d];
  uint64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < yd.size(); ++d) inner *= yd[d];
  sh.row = yd[axis] * inner;
  sh.inner = inner;
  // Widths of the parts. In the backward, absent dx leave gaps: one block of them takes the
  // block's width (given to its first part; none of them is written).
  uint64_t known = 0;
  int missing = -1, last_missing = -1;
  for (int k = 0; k < sh.parts; ++k) {
    const int32_t x = fwd ? s.in(k) : s.out(k);
    if (x < 0) {
      if (fwd) return "needs input " + std::to_string(k);
      if (const int32_t given = s.step.params.concat_extents[k]; given > 0) {
        sh.width[k] = static_cast<uint64_t>(given) * inner;
        known += sh.width[k];
        continue;
      }
      if (missing >= 0 && last_missing != k - 1)
        return "dx" + std::to_string(k - 1) +
               " lies between absent gradients whose extents params.concat_extents "
               "does not give";
      if (missing < 0) missing = k;
      last_missing = k;
      continue;
    }
    const std::vector<uint64_t> xd = dims_of(s.tensor(x));
    if (xd.size() != yd.size())
      return "part " + std::to_string(k) + " " + dims_string(xd) + " and output differ in rank";
    for (size_t d = 0; d < yd.size(); ++d)
      if (d != static_cast<size_t>(axis) && xd[d] != yd[d])
        return "part " + std::to_string(k) + " " + dims_string(xd) + " does not match output " + dims_string(yd) +
               " outside axis " + std::to_string(axis);
    sh.width[k] = xd[axis] * inner;
    known += sh.width[k];
  }
  if (known > sh.row || (missing < 0 && known != sh.row))
    return "parts along axis " + std::to_string(axis) + " do not add up to output " + dims_string(yd);
  if (missing >= 0) sh.width[missing] = sh.row - known;
  if (s.count(y) > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

std::string check(const StepView& s) {
  ConcatShape sh;
  return check_shape(s, sh);
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  ConcatShape sh;
  check_shape(s, sh);
  Defines d;
  d.set("NIN", sh.parts).set("ROW", static_cast<long long>(sh.row));
  d.set("COUNT", static_cast<long long>(sh.outer * sh.row));
  uint64_t start = 0;
  for (int k = 0; k < kMaxInputs; ++k) {
    const std::string j = std::to_string(k);
    d.set(("W" + j).c_str(), static_cast<long long>(k < sh.parts ? sh.width[k] : 0));
    d.set(("C" + j).c_str(), static_cast<long long>(start));
    if (k < sh.parts) start += sh.width[k];
  }
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  Kernel k = c.kernel(kFamily, d, fwd ? "concat_forward" : "concat_backward");
  cl_uint offs[kMaxInputs] = {};
  cl_uint present = 0;
  for (int i = 0; i < sh.parts; ++i) {
    const int32_t x = fwd ? s.in(i) : s.out(i);
    if (x < 0) continue;
    offs[i] = c.offset(x);
    present |= 1u << i;
  }
  const cl_uint y_off = c.offset(fwd ? s.out(0) : s.in(0));
  if (fwd)
    set_args(k, c.pool(), y_off, offs[0], offs[1], offs[2], offs[3], offs[4], offs[5], offs[6], offs[7]);
  else
    set_args(k, c.pool(), y_off, present, offs[0], offs[1], offs[2], offs[3], offs[4], offs[5], offs[6], offs[7]);
  const uint64_t count = sh.outer * sh.row;
  if (!fwd && present == 0) return [](const Queue&, const cltrain_run_args*) {};
  return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
}

}  // namespace

const OpFamily kOp_CONCATENATION = {check, prepare};

}  // namespace cltrain::ocl
