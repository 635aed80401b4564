// LSTM_CELL_STATE and LSTM_CELL_OUTPUT (cltrain_ops.h): one LSTM step's gate math, element by
// element, with numerics.h's clt_lstm_* (the roundings of the unfused ops).
//   z [rows, 4H] (any leading dims), the state tensors [rows, H]; gate part k of row r, element j
//   at z[r * 4H + perm[k] * H + j].
#include "cpu_op.h"
#include "numerics.h"

namespace cltrain {
namespace cpu {
namespace {

struct Geometry {
  uint64_t rows = 0, width = 0;  // width: H
  uint64_t part[4] = {};         // element offset of gate k's part within a row of z
  uint64_t at(uint64_t e, int k) const { return (e / width) * 4 * width + part[k] + e % width; }
};

Geometry geometry(const StepView& s) {
  Geometry g;
  const TensorRef& state = s.in[1];
  g.width = static_cast<uint64_t>(state.dim(state.rank() - 1));
  g.rows = state.elements / g.width;
  for (int k = 0; k < 4; ++k) g.part[k] = static_cast<uint64_t>(s.params().perm[k]) * g.width;
  return g;
}

std::string check_shapes(const StepView& s) {
  if (std::string e = require(s.in[0], "gates"); !e.empty()) return e;
  if (std::string e = require(s.in[1], "state"); !e.empty()) return e;
  const TensorRef& state = s.in[1];
  if (state.rank() < 1 || state.dim(state.rank() - 1) < 1) return "state " + shape_string(state) + " has no last axis";
  if (s.in[0].elements != 4 * state.elements)
    return "gates " + shape_string(s.in[0]) + " are not four parts of state " + shape_string(state);
  int seen = 0;
  for (int k = 0; k < 4; ++k) {
    const int32_t p = s.params().perm[k];
    if (p < 0 || p > 3 || (seen & (1 << p))) return "the gate parts are not a permutation of 0..3";
    seen |= 1 << p;
  }
  return {};
}

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  if (std::string e = check_shapes(s); !e.empty()) return e;
  return require_elements(s.out[0], s.in[1].elements, "output");
}

// bwd in [z, state, dy, prior] out [dz, dstate]: dz holds z's shape, dy and dstate the state's.
std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 4, 2); !e.empty()) return e;
  if (std::string e = check_shapes(s); !e.empty()) return e;
  const uint64_t n = s.in[1].elements;
  if (std::string e = require_elements(s.in[2], n, "output gradient"); !e.empty()) return e;
  // The prior gradient is dz's (LSTM_CELL_STATE) or the state's (LSTM_CELL_OUTPUT).
  const uint64_t prior = s.step->op == CLTRAIN_OP_LSTM_CELL_STATE ? 4 * n : n;
  if (s.in[3].present())
    if (std::string e = require_elements(s.in[3], prior, "prior gradient"); !e.empty()) return e;
  if (s.out[0].present())
    if (std::string e = require_elements(s.out[0], 4 * n, "gates gradient"); !e.empty()) return e;
  if (s.out[1].present())
    if (std::string e = require_elements(s.out[1], n, "state gradient"); !e.empty()) return e;
  return {};
}

std::string state_forward(const StepView& s, const cltrain_run_args&) {
  const Geometry g = geometry(s);
  const float* z = s.in[0].data;
  const float* c_prev = s.in[1].data;
  float* c = s.out[0].data;
  for (uint64_t e = 0; e < s.in[1].elements; ++e)
    c[e] = clt_lstm_state(z[g.at(e, 0)], z[g.at(e, 1)], z[g.at(e, 2)], c_prev[e]);
  return {};
}

std::string output_forward(const StepView& s, const cltrain_run_args&) {
  const Geometry g = geometry(s);
  const float* z = s.in[0].data;
  const float* c = s.in[1].data;
  float* h = s.out[0].data;
  for (uint64_t e = 0; e < s.in[1].elements; ++e) h[e] = clt_lstm_output(z[g.at(e, 3)], c[e]);
  return {};
}

// dz's input, forget and cell parts; its output part is dz_in's (0 without one). dz_in may be dz.
std::string state_backward(const StepView& s, const cltrain_run_args&) {
  const Geometry g = geometry(s);
  const float* z = s.in[0].data;
  const float* c_prev = s.in[1].data;
  const float* dc = s.in[2].data;
  const float* prior = s.in[3].data;
  float* dz = s.out[0].data;
  float* dc_prev = s.out[1].data;
  for (uint64_t e = 0; e < s.in[1].elements; ++e) {
    float di, df, dg, dp;
    clt_lstm_state_grad(z[g.at(e, 0)], z[g.at(e, 1)], z[g.at(e, 2)], c_prev[e], dc[e], &di, &df, &dg, &dp);
    if (dz) {
      dz[g.at(e, 0)] = di;
      dz[g.at(e, 1)] = df;
      dz[g.at(e, 2)] = dg;
      dz[g.at(e, 3)] = prior ? prior[g.at(e, 3)] : 0.0f;
    }
    if (dc_prev) dc_prev[e] = dp;
  }
  return {};
}

// dz's output part, its other parts 0; dc = h's part, plus dc_in where given (dc_in may be dc).
std::string output_backward(const StepView& s, const cltrain_run_args&) {
  const Geometry g = geometry(s);
  const float* z = s.in[0].data;
  const float* c = s.in[1].data;
  const float* dh = s.in[2].data;
  const float* prior = s.in[3].data;
  float* dz = s.out[0].data;
  float* dc = s.out[1].data;
  for (uint64_t e = 0; e < s.in[1].elements; ++e) {
    float dzo, dce;
    clt_lstm_output_grad(z[g.at(e, 3)], c[e], dh[e], &dzo, &dce);
    if (dz) {
      dz[g.at(e, 0)] = dz[g.at(e, 1)] = dz[g.at(e, 2)] = 0.0f;
      dz[g.at(e, 3)] = dzo;
    }
    if (dc) dc[e] = prior ? prior[e] + dce : dce;
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_LSTM_CELL_STATE = {{{check_forward, state_forward}, {check_backward, state_backward}, {}}};
extern const CpuOp kCpuOp_LSTM_CELL_OUTPUT = {{{check_forward, output_forward}, {check_backward, output_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
