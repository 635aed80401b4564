// BATCH_MATMUL (kernels/batch_matmul.cl), one work-item per VEC neighbouring columns of what it
// writes (channel_lanes of them), each lane's dot product in the CPU's order (no CLBlast: the
// products are small, per attention head).
//   forward:  in [x, y]      out [z]       bmm_forward
//   backward: in [x, y, dz]  out [dx, dy]  bmm_dx (reads dz, y; a work-group per b, y[b] transposed
//             in local memory, lanes along K), bmm_dy (reads x, dz; lanes along N), each if wanted
#include <algorithm>

#include "device/device.h"
#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "batch_matmul.cl";

struct Dims {
  uint64_t batch = 1, m = 0, k = 0, n = 0;
};

// x [..., M, K], y [..., K, N], z [..., M, N] with the same leading dims.
std::string dims_of_step(const StepView& s, Dims* d) {
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  const int32_t x = s.in(0) >= 0 ? s.in(0) : s.out(0), y = s.in(1) >= 0 ? s.in(1) : s.out(1),
                z = fwd ? s.out(0) : s.in(2);
  if (std::string why = require_tensor(s, x, "x"); !why.empty()) return why;
  if (std::string why = require_tensor(s, y, "y"); !why.empty()) return why;
  if (std::string why = require_tensor(s, z, fwd ? "z" : "dz"); !why.empty()) return why;
  const std::vector<uint64_t> xd = dims_of(s.tensor(x)), yd = dims_of(s.tensor(y)), zd = dims_of(s.tensor(z));
  const size_t r = xd.size();
  if (r < 2 || yd.size() != r || zd.size() != r) return "x, y and z are not of one rank of at least 2";
  for (size_t i = 0; i + 2 < r; ++i) {
    if (yd[i] != xd[i] || zd[i] != xd[i]) return "x, y and z differ in their leading dims";
    d->batch *= xd[i];
  }
  if (yd[r - 2] != xd[r - 1] || zd[r - 2] != xd[r - 2] || zd[r - 1] != yd[r - 1])
    return "x " + dims_string(xd) + ", y " + dims_string(yd) + " and z " + dims_string(zd) + " do not chain";
  d->m = xd[r - 2], d->k = xd[r - 1], d->n = yd[r - 1];
  if (s.count(x) > UINT32_MAX || s.count(y) > UINT32_MAX || s.count(z) > UINT32_MAX)
    return "is too large for 32-bit indexing";
  return {};
}

std::string check(const StepView& s) {
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    if (s.out(0) >= 0 && s.in(1) < 0) return "dx needs y";
    if (s.out(1) >= 0 && s.in(0) < 0) return "dy needs x";
    if (s.out(0) < 0 && s.out(1) < 0) return "writes neither dx nor dy";
  }
  Dims d;
  return dims_of_step(s, &d);
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  Dims dm;
  dims_of_step(s, &dm);
  Defines d;
  d.set("M", static_cast<long long>(dm.m))
      .set("K", static_cast<long long>(dm.k))
      .set("N", static_cast<long long>(dm.n));
  // Lanes along the written columns: N for z and dy, K for dx.
  const auto lanes = [&](uint64_t cols) {
    Defines v = d;
    return v.set("VEC", channel_lanes(static_cast<int64_t>(cols)));
  };
  const auto blocks = [](uint64_t cols) {
    return cols / static_cast<uint64_t>(channel_lanes(static_cast<int64_t>(cols)));
  };
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    Kernel k = c.kernel(kFamily, lanes(dm.n), "bmm_forward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.out(0)));
    return row_launch(c, k, View6{1, 1, 1, 1, dm.batch * dm.m, blocks(dm.n)});
  }
  std::vector<StepRun> runs;
  if (s.out(0) >= 0) {
    // One work-group per b: WG work-items (a power of two, at most 256 and the (m, k block)
    // pairs), y[b] through local memory NT columns at a time (at most a quarter of the device's
    // local memory).
    const DeviceInfo& dev = c.device();
    const uint64_t pairs = dm.m * blocks(dm.k);
    const uint64_t nt =
        std::max<uint64_t>(1, std::min<uint64_t>(dm.n, dev.local_mem / 4 / 4 / std::max<uint64_t>(dm.k, 1)));
    Defines v = lanes(dm.k);
    v.set("NT", static_cast<long long>(nt));
    size_t wg = 1;
    const size_t cap = std::min<size_t>({256, dev.max_work_group});
    while (wg * 2 <= cap && wg * 2 <= pairs) wg *= 2;
    const auto build = [&](size_t size) {
      Defines w = v;
      return c.kernel(kFamily, w.set("WG", static_cast<long long>(size)), "bmm_dx");
    };
    Kernel k = build(wg);
    if (k.max_local < wg) {  // the compiled kernel's own bound
      while (wg > k.max_local) wg /= 2;
      k = build(wg);
    }
    set_args(k, c.pool(), c.offset(s.in(2)), c.offset(s.in(1)), c.offset(s.out(0)));
    const uint64_t groups = dm.batch;
    runs.push_back([k, groups, wg](const Queue& q, const cltrain_run_args*) { q.launch_groups(k, groups, wg); });
  }
  if (s.out(1) >= 0) {
    Kernel k = c.kernel(kFamily, lanes(dm.n), "bmm_dy");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(2)), c.offset(s.out(1)));
    runs.push_back(row_launch(c, k, View6{1, 1, 1, 1, dm.batch * dm.k, blocks(dm.n)}));
  }
  return [runs](const Queue& q, const cltrain_run_args* a) {
    for (const StepRun& r : runs) r(q, a);
  };
}

}  // namespace

const OpFamily kOp_BATCH_MATMUL = {check, prepare};

}  // namespace cltrain::ocl
