// The recurrent cells LSTM_CELL_STATE, LSTM_CELL_OUTPUT and GRU_CELL: forward and backward
// against the double reference (true exp and tanh), the numerics' float definition (bit for bit:
// clt_lstm_*, clt_gru*) and finite differences; gate parts in Keras's order and permuted (in a
// GRU, differently in the input's and the state's projections), a rank-3 state, and the LSTM
// backward's prior gradient (dz_in, dc_in: the tensors the training graph passes as both input
// and output).
#include <array>
#include <cmath>
#include <type_traits>

#include "numerics.h"
#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

template <typename T>
T sigmoid(T v) {
  if constexpr (std::is_same_v<T, float>)
    return clt_logistic(v);
  else
    return 1.0 / (1.0 + std::exp(-v));
}

template <typename T>
T tanh_of(T v) {
  if constexpr (std::is_same_v<T, float>)
    return clt_tanh(v);
  else
    return std::tanh(v);
}

// state: the state's dims [..., H]; z is [..., 4H] with gate k in part perm[k].
OpCase cell_case(int32_t op, const std::string& tag, std::vector<int32_t> state, std::array<int32_t, 4> perm,
                 bool prior_given) {
  OpCase c;
  const bool state_op = op == CLTRAIN_OP_LSTM_CELL_STATE;
  c.name = std::string(state_op ? "LstmCellState_" : "LstmCellOutput_") + tag;
  c.op = op;
  std::vector<int32_t> zdims = state;
  zdims.back() *= 4;
  const int32_t z = c.input("z", zdims, 3.0f);
  const int32_t s = c.input(state_op ? "c_prev" : "c", state, 2.0f);
  const int32_t y = c.output(state_op ? "c" : "h", state);
  const int32_t dy = c.input("dy", state);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  int32_t prior = -1;
  if (prior_given) {
    prior = c.input("prior", state_op ? zdims : state);
    c.tensors[prior].role = CLTRAIN_ROLE_BACK_PROP;
  }
  const int32_t dz = c.output("dz", zdims, CLTRAIN_ROLE_BACK_PROP);
  const int32_t ds = c.output("dstate", state, CLTRAIN_ROLE_BACK_PROP);
  cltrain_op_params p{};
  for (int k = 0; k < 4; ++k) p.perm[k] = perm[static_cast<size_t>(k)];
  c.step(op, CLTRAIN_PHASE_FORWARD, {z, s}, {y}, p);
  c.step(op, CLTRAIN_PHASE_BACKWARD, {z, s, dy, prior}, {dz, ds}, p);
  c.y = y;
  c.dy = dy;
  c.grads = {{z, dz}, {s, ds}};
  // With a prior gradient the outputs hold more than the derivatives of y.
  c.fd_samples = prior_given ? 0 : 48;
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 2e-6;
  c.tol.fd_eps = 1e-3;
  c.tol.fd_tol = 1e-2;
  const int64_t width = state.back();
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(z))>::value_type;
    const auto& zv = in.at(z);
    const auto& sv = in.at(s);
    const auto& g = in.at(dy);
    std::vector<T> yv(sv.size()), dzv(zv.size()), dsv(sv.size());
    for (size_t e = 0; e < sv.size(); ++e) {
      const size_t row = e / static_cast<size_t>(width), j = e % static_cast<size_t>(width);
      size_t at[4];
      for (int k = 0; k < 4; ++k)
        at[k] = row * 4 * static_cast<size_t>(width) + static_cast<size_t>(perm[static_cast<size_t>(k)] * width) + j;
      if (state_op) {
        const T i = sigmoid(zv[at[0]]), f = sigmoid(zv[at[1]]), gg = tanh_of(zv[at[2]]);
        const T fc = f * sv[e], ig = i * gg;
        yv[e] = fc + ig;
        dzv[at[0]] = (g[e] * gg) * (i * (T(1) - i));
        dzv[at[1]] = (g[e] * sv[e]) * (f * (T(1) - f));
        dzv[at[2]] = (g[e] * i) * (T(1) - gg * gg);
        dzv[at[3]] = prior_given ? in.at(prior)[at[3]] : T(0);
        dsv[e] = g[e] * f;
      } else {
        const T o = sigmoid(zv[at[3]]), t = tanh_of(sv[e]);
        yv[e] = o * t;
        dzv[at[0]] = dzv[at[1]] = dzv[at[2]] = T(0);
        dzv[at[3]] = (g[e] * t) * (o * (T(1) - o));
        const T d = (g[e] * o) * (T(1) - t * t);
        dsv[e] = prior_given ? in.at(prior)[e] + d : d;
      }
    }
    return std::decay_t<decltype(in)>{{y, yv}, {dz, dzv}, {ds, dsv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

OpCase gru_case(const std::string& tag, std::vector<int32_t> state, std::array<int32_t, 6> perm) {
  OpCase c;
  c.name = "GruCell_" + tag;
  c.op = CLTRAIN_OP_GRU_CELL;
  std::vector<int32_t> pdims = state;
  pdims.back() *= 3;
  const int32_t xp = c.input("xp", pdims, 2.0f);
  const int32_t hp = c.input("hp", pdims, 2.0f);
  const int32_t h_prev = c.input("h_prev", state);
  const int32_t h = c.output("h", state);
  const int32_t dh = c.input("dh", state);
  c.tensors[dh].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dxp = c.output("dxp", pdims, CLTRAIN_ROLE_BACK_PROP);
  const int32_t dhp = c.output("dhp", pdims, CLTRAIN_ROLE_BACK_PROP);
  const int32_t dhprev = c.output("dh_prev", state, CLTRAIN_ROLE_BACK_PROP);
  cltrain_op_params p{};
  for (int k = 0; k < 6; ++k) p.perm[k] = perm[static_cast<size_t>(k)];
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {xp, hp, h_prev}, {h}, p);
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {xp, hp, h_prev, dh}, {dxp, dhp, dhprev}, p);
  c.y = h;
  c.dy = dh;
  c.grads = {{xp, dxp}, {hp, dhp}, {h_prev, dhprev}};
  c.fd_samples = 48;
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 2e-6;
  c.tol.fd_eps = 1e-3;
  c.tol.fd_tol = 1e-2;
  const int64_t width = state.back();
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(xp))>::value_type;
    const auto& xv = in.at(xp);
    const auto& hv = in.at(hp);
    const auto& sv = in.at(h_prev);
    const auto& g = in.at(dh);
    std::vector<T> hout(sv.size()), dx(xv.size()), dhv(hv.size()), ds(sv.size());
    for (size_t e = 0; e < sv.size(); ++e) {
      const size_t base =
          e / static_cast<size_t>(width) * 3 * static_cast<size_t>(width) + e % static_cast<size_t>(width);
      size_t at[6];
      for (int k = 0; k < 6; ++k) at[k] = base + static_cast<size_t>(perm[static_cast<size_t>(k)] * width);
      const T z = sigmoid(T(xv[at[0]] + hv[at[3]])), r = sigmoid(T(xv[at[1]] + hv[at[4]]));
      const T rh = r * hv[at[5]];
      const T n = tanh_of(T(xv[at[2]] + rh));
      const T zh = z * sv[e], omz = T(1) - z;
      const T nn = omz * n;
      hout[e] = zh + nn;
      const T an = (g[e] * omz) * (T(1) - n * n);
      const T ar = (an * hv[at[5]]) * (r * (T(1) - r));
      const T dz = g[e] * sv[e] + -(g[e] * n);
      const T az = dz * (z * (T(1) - z));
      dx[at[0]] = az, dx[at[1]] = ar, dx[at[2]] = an;
      dhv[at[3]] = az, dhv[at[4]] = ar, dhv[at[5]] = an * r;
      ds[e] = g[e] * z;
    }
    return std::decay_t<decltype(in)>{{h, hout}, {dxp, dx}, {dhp, dhv}, {dhprev, ds}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> out;
  for (int32_t op : {CLTRAIN_OP_LSTM_CELL_STATE, CLTRAIN_OP_LSTM_CELL_OUTPUT}) {
    // Keras's and PyTorch's gate order, a text_lstm-like [B, H].
    out.push_back(cell_case(op, "n3_h5", {3, 5}, {0, 1, 2, 3}, false));
    // Parts permuted, a rank-3 state [N, T, H] 70 wide (more than a work-group row).
    out.push_back(cell_case(op, "perm_n2_t2_h70", {2, 2, 70}, {2, 0, 3, 1}, false));
    // The prior gradient the graph adds into.
    out.push_back(cell_case(op, "prior_n4_h9", {4, 9}, {0, 1, 2, 3}, true));
  }
  // Keras's order (update, reset, candidate) in both projections, a text_gru-like [B, H].
  out.push_back(gru_case("n3_h5", {3, 5}, {0, 1, 2, 0, 1, 2}));
  // Other orders in each, a rank-3 state [N, T, H] 70 wide (more than a work-group row).
  out.push_back(gru_case("perm_n2_t2_h70", {2, 2, 70}, {2, 0, 1, 1, 2, 0}));
  return out;
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
