// GATHER (kernels/gather.cl).
//   forward:  in [table, ids]  out [y]       gather_forward, one work-item per element of y
//   backward: in [dy, ids]     out [dtable, dsq]  gather_backward, one work-item per row of
//             dtable, each reading every id once (no atomics: the sum order is the CPU's); dsq optional
#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "gather.cl";

std::string check(const StepView& s) {
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  const int32_t table = fwd ? s.in(0) : s.out(0), ids = s.in(1), y = fwd ? s.out(0) : s.in(0);
  if (std::string why = require_tensor(s, table, fwd ? "table" : "dtable"); !why.empty()) return why;
  if (std::string why = require_tensor(s, ids, "ids"); !why.empty()) return why;
  if (std::string why = require_tensor(s, y, fwd ? "y" : "dy"); !why.empty()) return why;
  const std::vector<uint64_t> td = dims_of(s.tensor(table)), id = dims_of(s.tensor(ids)), yd = dims_of(s.tensor(y));
  if (td.empty()) return "the table is a scalar";
  std::vector<uint64_t> want = id;
  want.insert(want.end(), td.begin() + 1, td.end());
  if (yd != want)
    return "output " + dims_string(yd) + " is not ids " + dims_string(id) + " by table rows " + dims_string(td);
  if (!fwd && s.step.num_outputs > 1 && s.out(1) >= 0 && s.count(s.out(1)) != s.count(table))
    return "dsq is not shaped as dtable";
  if (s.count(y) > UINT32_MAX || s.count(table) > UINT32_MAX || td[0] > INT32_MAX)
    return "is too large for 32-bit indexing";
  return {};
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  const int32_t table = fwd ? s.in(0) : s.out(0), ids = s.in(1), y = fwd ? s.out(0) : s.in(0);
  const uint64_t rows = dims_of(s.tensor(table))[0], width = s.count(table) / rows, n = s.count(ids);
  Defines d;
  d.set("ROWS", static_cast<long long>(rows));
  d.set("WIDTH", static_cast<long long>(width));
  d.set("N", static_cast<long long>(n));
  const int32_t sq = fwd || s.step.num_outputs < 2 ? -1 : s.out(1);
  if (sq >= 0) d.set("SQUARES", 1);
  Kernel k = c.kernel(kFamily, d, fwd ? "gather_forward" : "gather_backward");
  if (fwd)
    set_args(k, c.pool(), c.offset(table), c.offset(ids), c.offset(y));
  else
    set_args(k, c.pool(), c.offset(y), c.offset(ids), c.offset(table), c.offset_or_zero(sq));
  if (!fwd) return [k, rows](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, rows); };
  View6 w{1, 1, 1, 1, n, width};
  return row_launch(c, k, w);
}

}  // namespace

const OpFamily kOp_GATHER = {check, prepare};

}  // namespace cltrain::ocl
