// BATCH_MATMUL: forward in [x, y] out [z], z = x y per leading index (x [..., M, K], y [..., K,
// N]); backward in [x, y, dz] out [dx, dy], dx = dz y^T, dy = x^T dz. Dot products with fma in
// increasing index order (cltrain_ops.h).
#include <cmath>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

struct Dims {
  uint64_t batch, m, k, n;
};

// "" when x [..., M, K], y [..., K, N] and z [..., M, N] share their leading dims.
std::string check_dims(const TensorRef& x, const TensorRef& y, const TensorRef& z, Dims* d) {
  const int r = x.rank();
  if (r < 2 || y.rank() != r || z.rank() != r) return "x, y and z are not of one rank of at least 2";
  uint64_t batch = 1;
  for (int i = 0; i < r - 2; ++i) {
    if (y.dim(i) != x.dim(i) || z.dim(i) != x.dim(i)) return "x, y and z differ in their leading dims";
    batch *= static_cast<uint64_t>(x.dim(i));
  }
  if (y.dim(r - 2) != x.dim(r - 1) || z.dim(r - 2) != x.dim(r - 2) || z.dim(r - 1) != y.dim(r - 1))
    return "x " + shape_string(x) + ", y " + shape_string(y) + " and z " + shape_string(z) + " do not chain";
  *d = {batch, static_cast<uint64_t>(x.dim(r - 2)), static_cast<uint64_t>(x.dim(r - 1)),
        static_cast<uint64_t>(y.dim(r - 1))};
  return {};
}

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  for (const auto& [t, name] :
       {std::pair<const TensorRef&, const char*>{s.in[0], "x"}, {s.in[1], "y"}, {s.out[0], "z"}})
    if (std::string e = require(t, name); !e.empty()) return e;
  Dims d;
  return check_dims(s.in[0], s.in[1], s.out[0], &d);
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 3, 2); !e.empty()) return e;
  if (std::string e = require(s.in[2], "dz"); !e.empty()) return e;
  const bool dx = s.out[0].present(), dy = s.out[1].present();
  if (dx && !s.in[1].present()) return "dx needs y";
  if (dy && !s.in[0].present()) return "dy needs x";
  if (!dx && !dy) return {};
  // x's shape from x or dx, y's from y or dy.
  const TensorRef& x = s.in[0].present() ? s.in[0] : s.out[0];
  const TensorRef& y = s.in[1].present() ? s.in[1] : s.out[1];
  Dims d;
  if (std::string e = check_dims(x, y, s.in[2], &d); !e.empty()) return e;
  if (dx && s.out[0].elements != d.batch * d.m * d.k) return "dx is not shaped as x";
  if (dy && s.out[1].elements != d.batch * d.k * d.n) return "dy is not shaped as y";
  return {};
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  Dims d;
  check_dims(s.in[0], s.in[1], s.out[0], &d);
  const float *x = s.in[0].data, *y = s.in[1].data;
  float* z = s.out[0].data;
  for (uint64_t b = 0; b < d.batch; ++b)
    for (uint64_t m = 0; m < d.m; ++m)
      for (uint64_t n = 0; n < d.n; ++n) {
        float acc = 0.0f;
        for (uint64_t k = 0; k < d.k; ++k) acc = std::fma(x[(b * d.m + m) * d.k + k], y[(b * d.k + k) * d.n + n], acc);
        z[(b * d.m + m) * d.n + n] = acc;
      }
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const TensorRef& xr = s.in[0].present() ? s.in[0] : s.out[0];
  const TensorRef& yr = s.in[1].present() ? s.in[1] : s.out[1];
  Dims d;
  check_dims(xr, yr, s.in[2], &d);
  const float *x = s.in[0].data, *y = s.in[1].data, *dz = s.in[2].data;
  if (float* dx = s.out[0].data)
    for (uint64_t b = 0; b < d.batch; ++b)
      for (uint64_t m = 0; m < d.m; ++m)
        for (uint64_t k = 0; k < d.k; ++k) {
          float acc = 0.0f;
          for (uint64_t n = 0; n < d.n; ++n)
            acc = std::fma(dz[(b * d.m + m) * d.n + n], y[(b * d.k + k) * d.n + n], acc);
          dx[(b * d.m + m) * d.k + k] = acc;
        }
  if (float* dy = s.out[1].data)
    for (uint64_t b = 0; b < d.batch; ++b)
      for (uint64_t k = 0; k < d.k; ++k)
        for (uint64_t n = 0; n < d.n; ++n) {
          float acc = 0.0f;
          for (uint64_t m = 0; m < d.m; ++m)
            acc = std::fma(x[(b * d.m + m) * d.k + k], dz[(b * d.m + m) * d.n + n], acc);
          dy[(b * d.k + k) * d.n + n] = acc;
        }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_BATCH_MATMUL = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
