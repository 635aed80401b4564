// GRU_CELL (cltrain_ops.h): one GRU step's gate math, element by element, with numerics.h's
// clt_gru (the roundings of the unfused ops). xp and hp [rows, 3H], the state [rows, H]; gate
// part k of row r, element j at r * 3H + perm[k] * H + j (perm[3 + k] in hp).
#include "cpu_op.h"
#include "numerics.h"

namespace cltrain {
namespace cpu {
namespace {

struct Geometry {
  uint64_t width = 0;
  uint64_t part[6] = {};  // element offsets within a row: xp's z, r, n, then hp's
  uint64_t at(uint64_t e, int k) const { return (e / width) * 3 * width + part[k] + e % width; }
};

Geometry geometry(const StepView& s) {
  Geometry g;
  const TensorRef& state = s.in[2];
  g.width = static_cast<uint64_t>(state.dim(state.rank() - 1));
  for (int k = 0; k < 6; ++k) g.part[k] = static_cast<uint64_t>(s.params().perm[k]) * g.width;
  return g;
}

std::string check_shapes(const StepView& s) {
  if (std::string e = require(s.in[0], "input projection"); !e.empty()) return e;
  if (std::string e = require(s.in[1], "state projection"); !e.empty()) return e;
  if (std::string e = require(s.in[2], "state"); !e.empty()) return e;
  const TensorRef& state = s.in[2];
  if (state.rank() < 1 || state.dim(state.rank() - 1) < 1) return "state " + shape_string(state) + " has no last axis";
  const uint64_t n = state.elements;
  if (std::string e = require_elements(s.in[0], 3 * n, "input projection"); !e.empty()) return e;
  if (std::string e = require_elements(s.in[1], 3 * n, "state projection"); !e.empty()) return e;
  for (int half = 0; half < 2; ++half) {
    int seen = 0;
    for (int k = 0; k < 3; ++k) {
      const int32_t p = s.params().perm[half * 3 + k];
      if (p < 0 || p > 2 || (seen & (1 << p))) return "the gate parts are not a permutation of 0..2";
      seen |= 1 << p;
    }
  }
  return {};
}

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 3, 1); !e.empty()) return e;
  if (std::string e = check_shapes(s); !e.empty()) return e;
  return require_elements(s.out[0], s.in[2].elements, "output");
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 4, 3); !e.empty()) return e;
  if (std::string e = check_shapes(s); !e.empty()) return e;
  const uint64_t n = s.in[2].elements;
  if (std::string e = require_elements(s.in[3], n, "output gradient"); !e.empty()) return e;
  for (int k = 0; k < 3; ++k)
    if (s.out[k].present())
      if (std::string e = require_elements(s.out[k], k < 2 ? 3 * n : n, "gradient"); !e.empty()) return e;
  return {};
}

std::string forward(const StepView& s, const cltrain_run_args&) {
  const Geometry g = geometry(s);
  const float* xp = s.in[0].data;
  const float* hp = s.in[1].data;
  const float* h_prev = s.in[2].data;
  float* h = s.out[0].data;
  for (uint64_t e = 0; e < s.in[2].elements; ++e)
    h[e] = clt_gru(xp[g.at(e, 0)], hp[g.at(e, 3)], xp[g.at(e, 1)], hp[g.at(e, 4)], xp[g.at(e, 2)], hp[g.at(e, 5)],
                   h_prev[e]);
  return {};
}

std::string backward(const StepView& s, const cltrain_run_args&) {
  const Geometry g = geometry(s);
  const float* xp = s.in[0].data;
  const float* hp = s.in[1].data;
  const float* h_prev = s.in[2].data;
  const float* dh = s.in[3].data;
  float* dxp = s.out[0].data;
  float* dhp = s.out[1].data;
  float* dh_prev = s.out[2].data;
  for (uint64_t e = 0; e < s.in[2].elements; ++e) {
    float az, ar, an, ahn, dp;
    clt_gru_grad(xp[g.at(e, 0)], hp[g.at(e, 3)], xp[g.at(e, 1)], hp[g.at(e, 4)], xp[g.at(e, 2)], hp[g.at(e, 5)],
                 h_prev[e], dh[e], &az, &ar, &an, &ahn, &dp);
    if (dxp) {
      dxp[g.at(e, 0)] = az;
      dxp[g.at(e, 1)] = ar;
      dxp[g.at(e, 2)] = an;
    }
    if (dhp) {
      dhp[g.at(e, 3)] = az;
      dhp[g.at(e, 4)] = ar;
      dhp[g.at(e, 5)] = ahn;
    }
    if (dh_prev) dh_prev[e] = dp;
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_GRU_CELL = {{{check_forward, forward}, {check_backward, backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
