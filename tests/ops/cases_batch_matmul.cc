// BATCH_MATMUL: forward in [x, y] out [z] (z = x y per leading index), backward in [x, y, dz] out
// [dx, dy] (dx = dz y^T, dy = x^T dz), dot products with fma in increasing index order.
#include <cmath>

#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

// x [lead..., M, K], y [lead..., K, N]. dx / dy false: that gradient is not asked for (its
// operand of the other side is then -1).
OpCase bmm_case(const std::string& tag, std::vector<int32_t> lead, int32_t M, int32_t K, int32_t N, bool want_dx = true,
                bool want_dy = true) {
  OpCase c;
  c.op = CLTRAIN_OP_BATCH_MATMUL;
  c.name = "BatchMatMul_" + tag;
  auto dims = [&](int32_t a, int32_t b) {
    std::vector<int32_t> d = lead;
    d.push_back(a);
    d.push_back(b);
    return d;
  };
  const int32_t x = c.input("x", dims(M, K)), y = c.input("y", dims(K, N));
  const int32_t z = c.output("z", dims(M, N));
  const int32_t dz = c.input("dz", dims(M, N));
  c.tensors[dz].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = want_dx ? c.output("dx", dims(M, K), CLTRAIN_ROLE_BACK_PROP) : -1;
  const int32_t dy = want_dy ? c.output("dy", dims(K, N), CLTRAIN_ROLE_BACK_PROP) : -1;
  c.step(CLTRAIN_OP_BATCH_MATMUL, CLTRAIN_PHASE_FORWARD, {x, y}, {z});
  c.step(CLTRAIN_OP_BATCH_MATMUL, CLTRAIN_PHASE_BACKWARD, {want_dy ? x : -1, want_dx ? y : -1, dz}, {dx, dy});
  c.y = z;
  c.dy = dz;
  if (want_dx) c.grads.push_back({x, dx});
  if (want_dy) c.grads.push_back({y, dy});
  c.fd_samples = 24;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 2e-3;
  c.tol.vs_cpu = 1e-6;
  uint64_t batch = 1;
  for (int32_t d : lead) batch *= static_cast<uint64_t>(d);
  const uint64_t m_ = static_cast<uint64_t>(M), k_ = static_cast<uint64_t>(K), n_ = static_cast<uint64_t>(N);
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    const auto &X = in.at(x), &Y = in.at(y), &DZ = in.at(dz);
    std::vector<T> Z(batch * m_ * n_), DX(batch * m_ * k_), DY(batch * k_ * n_);
    for (uint64_t b = 0; b < batch; ++b) {
      for (uint64_t m = 0; m < m_; ++m)
        for (uint64_t n = 0; n < n_; ++n) {
          T acc = 0;
          for (uint64_t k = 0; k < k_; ++k) acc = std::fma(X[(b * m_ + m) * k_ + k], Y[(b * k_ + k) * n_ + n], acc);
          Z[(b * m_ + m) * n_ + n] = acc;
        }
      for (uint64_t m = 0; m < m_; ++m)
        for (uint64_t k = 0; k < k_; ++k) {
          T acc = 0;
          for (uint64_t n = 0; n < n_; ++n) acc = std::fma(DZ[(b * m_ + m) * n_ + n], Y[(b * k_ + k) * n_ + n], acc);
          DX[(b * m_ + m) * k_ + k] = acc;
        }
      for (uint64_t k = 0; k < k_; ++k)
        for (uint64_t n = 0; n < n_; ++n) {
          T acc = 0;
          for (uint64_t m = 0; m < m_; ++m) acc = std::fma(X[(b * m_ + m) * k_ + k], DZ[(b * m_ + m) * n_ + n], acc);
          DY[(b * k_ + k) * n_ + n] = acc;
        }
    }
    std::decay_t<decltype(in)> out{{z, Z}};
    if (dx >= 0) out[dx] = DX;
    if (dy >= 0) out[dy] = DY;
    return out;
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      bmm_case("rank2_3x4x2", {}, 3, 4, 2),
      bmm_case("rank3_b2_3x4x5", {2}, 3, 4, 5),
      // MultiHeadAttention's scores [B, heads, T, d] x [B, heads, d, T]; N wider than a work-group.
      bmm_case("heads_b2_h2_5x3x70", {2, 2}, 5, 3, 70),
      bmm_case("only_dx_b2_4x3x2", {2}, 4, 3, 2, true, false),
      bmm_case("only_dy_b2_4x3x2", {2}, 4, 3, 2, false, true),
      // The transformer's shapes in small: the OpenCL kernels' vector lanes along N (16, 8) and K
      // (16, 4) for z, dy and dx.
      bmm_case("lanes_b2_h2_6x16x32", {2, 2}, 6, 16, 32),
      bmm_case("lanes_b3_5x12x8", {3}, 5, 12, 8),
      // dx by work-groups: more (m, k block) pairs than a work-group's 256 (each work-item takes
      // several), and 160 columns of n, which Oclgrind's 32 KiB of local memory takes in two parts.
      bmm_case("pairs_300_100x12x4", {}, 100, 12, 4),
      bmm_case("columns_b2_3x16x160", {2}, 3, 16, 160),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
