// FULLY_CONNECTED: y = act(x W^T + b), forward and backward, several shapes and activations.
#include <cmath>

#include "op_case.h"
#include "reference.h"

namespace cltrain {
namespace optest {
namespace {

struct FcShape {
  std::string tag;
  std::vector<int32_t> x;
  int32_t k, m;
  int32_t act;
  bool bias;
  bool dx = true;  // false: the backward has no dx (a first layer)
  bool dw = true;  // false: no dW, db, and x is -1 (a frozen layer)
  float w_scale = 1.0f;
  int fd_samples = 64;
};

OpCase fc_case(const FcShape& s) {
  OpCase c;
  c.name = std::string("FullyConnected_") + act_name(s.act) + (s.bias ? "_bias_" : "_nobias_") + s.tag;
  c.op = CLTRAIN_OP_FULLY_CONNECTED;
  const int32_t n = static_cast<int32_t>(element_count(s.x) / static_cast<uint64_t>(s.k));
  std::vector<int32_t> ydims = {n, s.m};
  if (s.x.back() == s.k) {
    ydims = s.x;
    ydims.back() = s.m;
  }
  const int32_t x = c.input("x", s.x);
  const int32_t w = c.weight("W", {s.m, s.k}, s.w_scale);
  const int32_t b = s.bias ? c.weight("b", {s.m}) : -1;
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = s.dx ? c.output("dx", s.x, CLTRAIN_ROLE_BACK_PROP) : -1;
  const int32_t dw = s.dw ? c.output("dW", {s.m, s.k}, CLTRAIN_ROLE_GRADIENT) : -1;
  const int32_t db = s.dw && s.bias ? c.output("db", {s.m}, CLTRAIN_ROLE_GRADIENT) : -1;
  cltrain_op_params p{};
  p.activation = s.act;
  c.step(CLTRAIN_OP_FULLY_CONNECTED, CLTRAIN_PHASE_FORWARD, {x, w, b}, {y}, p);
  c.step(CLTRAIN_OP_FULLY_CONNECTED, CLTRAIN_PHASE_BACKWARD, {s.dw ? x : -1, w, s.act != CLTRAIN_ACT_NONE ? y : -1, dy},
         {dx, dw, db}, p);
  c.y = y;
  c.dy = dy;
  c.activation = s.act;
  if (dx >= 0) c.grads.push_back({x, dx});
  if (dw >= 0) c.grads.push_back({w, dw});
  if (db >= 0) c.grads.push_back({b, db});
  c.fd_samples = s.fd_samples;
  c.tol.vs_cpu = 1e-4;
  c.tol.vs_reference = 1e-4;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-2;

  const int32_t m = s.m, k = s.k, act = s.act;
  c.reference = [=](const Values& in) {
    const std::vector<double>& xv = in.at(x);
    const std::vector<double>& wv = in.at(w);
    const std::vector<double>& r = in.at(dy);
    std::vector<double> yv(static_cast<size_t>(n) * m), dz(yv.size());
    std::vector<double> dxv(xv.size(), 0.0), dwv(wv.size(), 0.0), dbv(static_cast<size_t>(m), 0.0);
    for (int32_t i = 0; i < n; ++i)
      for (int32_t j = 0; j < m; ++j) {
        double z = b >= 0 ? in.at(b)[j] : 0.0;
        for (int32_t l = 0; l < k; ++l) z += xv[i * k + l] * wv[j * k + l];
        yv[i * m + j] = ref_activation(act, z);
        dz[i * m + j] = r[i * m + j] * ref_activation_derivative(act, yv[i * m + j]);
      }
    for (int32_t i = 0; i < n; ++i)
      for (int32_t j = 0; j < m; ++j)
        for (int32_t l = 0; l < k; ++l) {
          dxv[i * k + l] += dz[i * m + j] * wv[j * k + l];
          dwv[j * k + l] += dz[i * m + j] * xv[i * k + l];
        }
    for (int32_t i = 0; i < n; ++i)
      for (int32_t j = 0; j < m; ++j) dbv[j] += dz[i * m + j];
    Values out{{y, yv}};
    if (dx >= 0) out[dx] = dxv;
    if (dw >= 0) out[dw] = dwv;
    if (db >= 0) out[db] = dbv;
    return out;
  };
  return c;
}

std::vector<OpCase> make_cases() {
  const int32_t NONE = CLTRAIN_ACT_NONE, RELU = CLTRAIN_ACT_RELU;
  std::vector<FcShape> shapes = {
      {"n4_k10_m7", {4, 10}, 10, 7, NONE, true},
      {"n5_k13_m16", {5, 13}, 13, 16, RELU, true},
      {"n16_k64_m32", {16, 64}, 64, 32, NONE, true},  // sizes multiple of 64 bytes: guards touch
      {"n3_k8_m5", {3, 8}, 8, 5, NONE, false},
      {"x2x3x2x4_k24_m6", {2, 3, 2, 4}, 24, 6, RELU, false},  // rank 4, each sample flattened
      {"x2x3x5_k5_m4", {2, 3, 5}, 5, 4, RELU, true},          // rows across two dimensions
      {"nodx_n6_k9_m8", {6, 9}, 9, 8, RELU, true, false, true},
      {"nodw_n4_k7_m3", {4, 7}, 7, 3, NONE, false, true, false},
      {"n4_k6_m5", {4, 6}, 6, 5, CLTRAIN_ACT_TANH, true},
      {"n4_k6_m5", {4, 6}, 6, 5, CLTRAIN_ACT_RELU6, true, true, true, 4.0f},
      {"n4_k6_m5", {4, 6}, 6, 5, CLTRAIN_ACT_RELU_N1_TO_1, true},
      {"n32_k784_m128", {32, 784}, 784, 128, RELU, true, true, true, 1.0f, 16},  // an mnist layer
  };
  std::vector<OpCase> cases;
  for (const FcShape& s : shapes) cases.push_back(fc_case(s));
  return cases;
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
