// ADD, SUB, MUL, DIV with numpy broadcasting and a fused activation: forward in [a, b] out [y],
// backward in [a, b, y, dy] out [da, db] (a, b -1 where the op does not read them). Shapes: equal,
// [N,1,1,C] against [N,H,W,C] (squeeze-and-excite), a [1,1,1,1] operand, both operands
// broadcast, and the same tensor as both operands (x + x, x * x: one tensor id in both inputs,
// two gradient outputs whose sum is the gradient). The comparisons (GREATER ... NOT_EQUAL),
// forward only, with the same broadcasting.
#include <type_traits>

#include "op_case.h"
#include "reference.h"

namespace cltrain {
namespace optest {
namespace {

const char* op_label(int32_t op) {
  switch (op) {
    case CLTRAIN_OP_ADD: return "Add_";
    case CLTRAIN_OP_SUB: return "Sub_";
    case CLTRAIN_OP_MUL: return "Mul_";
    case CLTRAIN_OP_SQUARED_DIFFERENCE: return "SquaredDifference_";
    case CLTRAIN_OP_MAXIMUM: return "Maximum_";
    case CLTRAIN_OP_MINIMUM: return "Minimum_";
    default: return "Div_";
  }
}

struct ArithSpec {
  std::string tag;
  std::vector<int32_t> a, b;  // b empty: the same tensor as a
  int32_t act = CLTRAIN_ACT_NONE;
  bool da = true, db = true;
  float scale = 1.0f;
};

// Index of the operand element that y element i reads.
std::vector<uint64_t> operand_index(const std::vector<int32_t>& op, const std::vector<int32_t>& y) {
  std::vector<uint64_t> out(element_count(y));
  for (uint64_t i = 0; i < out.size(); ++i) {
    uint64_t rest = i, j = 0, stride = 1;
    for (size_t d = y.size(); d-- > 0;) {
      const uint64_t coord = rest % static_cast<uint64_t>(y[d]);
      rest /= static_cast<uint64_t>(y[d]);
      if (op[d] != 1) j += coord * stride;
      stride *= static_cast<uint64_t>(op[d]);
    }
    out[i] = j;
  }
  return out;
}

OpCase arith_case(int32_t op, const ArithSpec& s) {
  OpCase c;
  c.op = op;
  c.name = op_label(op) + s.tag + "_" + act_name(s.act);
  const bool same = s.b.empty();
  const std::vector<int32_t> bdims = same ? s.a : s.b;
  std::vector<int32_t> ydims(s.a.size());
  for (size_t d = 0; d < ydims.size(); ++d) ydims[d] = std::max(s.a[d], bdims[d]);
  const int32_t a = c.input("a", s.a, s.scale);
  int32_t b = a;
  if (!same) b = c.input("b", bdims, s.scale);
  if (op == CLTRAIN_OP_DIV) {  // divisors away from zero
    c.tensors[b].fill = Fill::Values;
    c.tensors[b].values = away_from_zero(element_count(bdims), 0.5f, 1.5f, static_cast<uint32_t>(c.name.size()));
  }
  const bool extreme = op == CLTRAIN_OP_MAXIMUM || op == CLTRAIN_OP_MINIMUM;
  if (extreme) {  // a and b on grids 0.05 apart: no finite-difference step (1e-2) crosses a tie
    const auto grid = [&](int32_t t, uint64_t mul, uint64_t mod, float shift) {
      c.tensors[t].fill = Fill::Values;
      c.tensors[t].values.resize(element_count(c.tensors[t].dims));
      for (size_t i = 0; i < c.tensors[t].values.size(); ++i)
        c.tensors[t].values[i] = (static_cast<float>((i * mul) % mod) - static_cast<float>(mod / 2)) * 0.1f + shift;
    };
    grid(a, 7, 21, 0.05f);
    if (!same) grid(b, 5, 19, 0.0f);
  }
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t da = s.da ? c.output("da", s.a, CLTRAIN_ROLE_BACK_PROP) : -1;
  // With one tensor in both inputs, the host gives the second use a disposable gradient.
  const int32_t db = s.db ? c.output("db", bdims, same ? CLTRAIN_ROLE_DISPOSABLE : CLTRAIN_ROLE_BACK_PROP) : -1;
  cltrain_op_params p{};
  p.activation = s.act;
  const bool mul = op == CLTRAIN_OP_MUL, div = op == CLTRAIN_OP_DIV, sq = op == CLTRAIN_OP_SQUARED_DIFFERENCE;
  const bool max = op == CLTRAIN_OP_MAXIMUM;
  const int32_t read_a = ((mul || div) && db >= 0) || sq || extreme ? a : -1;
  const int32_t read_b = (mul && da >= 0) || div || sq || extreme ? b : -1;
  c.step(op, CLTRAIN_PHASE_FORWARD, {a, b}, {y}, p);
  c.step(op, CLTRAIN_PHASE_BACKWARD, {read_a, read_b, s.act != CLTRAIN_ACT_NONE ? y : -1, dy}, {da, db}, p);
  c.y = y;
  c.dy = dy;
  c.activation = s.act;
  if (da >= 0) c.grads.push_back({a, da});
  if (db >= 0) c.grads.push_back({b, db});
  c.fd_samples = 32;
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-5;
  c.tol.fd_eps = div ? 1e-3 : 1e-2;  // a / b is curved in b
  c.tol.fd_tol = 1e-2;
  const std::vector<uint64_t> ia = operand_index(s.a, ydims), ib = operand_index(bdims, ydims);
  const int32_t act = s.act;
  // In the numerics' order: per element of y in increasing flat index, da += g (ADD, SUB), g * b
  // (MUL), g / b (DIV); db += g, -g, g * a, -((g * a) / (b * b)); MAXIMUM (MINIMUM) g to a where
  // a >= b (a <= b), else to b.
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(a))>::value_type;
    const auto& av = in.at(a);
    const auto& bv = in.at(b);
    std::vector<T> yv(ia.size()), dav(av.size(), T(0)), dbv(bv.size(), T(0));
    for (size_t i = 0; i < ia.size(); ++i) {
      const T x1 = av[ia[i]], x2 = bv[ib[i]];
      const T t = x1 - x2;
      const bool to_a = max ? x1 >= x2 : x1 <= x2;
      if (extreme) {
        yv[i] = to_a ? x1 : x2;
        dav[ia[i]] = dav[ia[i]] + (to_a ? in.at(dy)[i] : T(0));
        dbv[ib[i]] = dbv[ib[i]] + (to_a ? T(0) : in.at(dy)[i]);
        continue;
      }
      const T z = op == CLTRAIN_OP_ADD ? x1 + x2 : op == CLTRAIN_OP_SUB ? t : mul ? x1 * x2 : sq ? t * t : x1 / x2;
      yv[i] = ref_act(act, z);
      const T g = ref_act_grad(act, yv[i], in.at(dy)[i]);
      const T u = T(2) * t;
      dav[ia[i]] = dav[ia[i]] + (op == CLTRAIN_OP_ADD || op == CLTRAIN_OP_SUB ? g : mul ? g * x2 : sq ? g * u : g / x2);
      dbv[ib[i]] = dbv[ib[i]] + (op == CLTRAIN_OP_ADD   ? g
                                 : op == CLTRAIN_OP_SUB ? -g
                                 : mul                  ? g * x1
                                 : sq                   ? -(g * u)
                                                        : -((g * x1) / (x2 * x2)));
    }
    std::decay_t<decltype(in)> out{{y, yv}};
    if (da >= 0) out[da] = dav;
    if (db >= 0) out[db] = dbv;
    return out;
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

const char* comparison_label(int32_t op) {
  switch (op) {
    case CLTRAIN_OP_GREATER: return "Greater_";
    case CLTRAIN_OP_GREATER_EQUAL: return "GreaterEqual_";
    case CLTRAIN_OP_LESS: return "Less_";
    case CLTRAIN_OP_LESS_EQUAL: return "LessEqual_";
    case CLTRAIN_OP_EQUAL: return "Equal_";
    default: return "NotEqual_";
  }
}

// GREATER ... NOT_EQUAL: forward in [a, b] out [y], y = 1 where the comparison holds, else 0, with
// ADD's broadcasting; forward only (no gradient flows through a 0/1 mask). a and b on grids 0.5
// apart that meet often (ties for the EQUAL and the _EQUAL forms). Exact.
OpCase comparison_case(int32_t op, const std::string& tag, const std::vector<int32_t>& adims,
                       const std::vector<int32_t>& bdims) {
  OpCase c;
  c.op = op;
  c.name = comparison_label(op) + tag;
  std::vector<int32_t> ydims(adims.size());
  for (size_t d = 0; d < ydims.size(); ++d) ydims[d] = std::max(adims[d], bdims[d]);
  const int32_t a = c.input("a", adims), b = c.input("b", bdims);
  const auto grid = [&](int32_t t, uint64_t mul, uint64_t mod) {
    c.tensors[t].fill = Fill::Values;
    c.tensors[t].values.resize(element_count(c.tensors[t].dims));
    for (size_t i = 0; i < c.tensors[t].values.size(); ++i)
      c.tensors[t].values[i] = (static_cast<float>((i * mul) % mod) - static_cast<float>(mod / 2)) * 0.5f;
  };
  grid(a, 7, 9);
  grid(b, 5, 7);
  const int32_t y = c.output("y", ydims);
  c.step(op, CLTRAIN_PHASE_FORWARD, {a, b}, {y}, cltrain_op_params{});
  c.y = y;
  c.fd_samples = 0;
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 0.0;
  const std::vector<uint64_t> ia = operand_index(adims, ydims), ib = operand_index(bdims, ydims);
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(a))>::value_type;
    std::vector<T> yv(ia.size());
    for (size_t i = 0; i < ia.size(); ++i) {
      const T x1 = in.at(a)[ia[i]], x2 = in.at(b)[ib[i]];
      const bool holds = op == CLTRAIN_OP_GREATER         ? x1 > x2
                         : op == CLTRAIN_OP_GREATER_EQUAL ? x1 >= x2
                         : op == CLTRAIN_OP_LESS          ? x1 < x2
                         : op == CLTRAIN_OP_LESS_EQUAL    ? x1 <= x2
                         : op == CLTRAIN_OP_EQUAL         ? x1 == x2
                                                          : x1 != x2;
      yv[i] = holds ? T(1) : T(0);
    }
    return std::decay_t<decltype(in)>{{y, yv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  const int32_t ADD = CLTRAIN_OP_ADD, SUB = CLTRAIN_OP_SUB, MUL = CLTRAIN_OP_MUL, DIV = CLTRAIN_OP_DIV;
  const int32_t SQDIFF = CLTRAIN_OP_SQUARED_DIFFERENCE, MAX = CLTRAIN_OP_MAXIMUM, MIN = CLTRAIN_OP_MINIMUM;
  const int32_t RELU = CLTRAIN_ACT_RELU, RELU6 = CLTRAIN_ACT_RELU6, TANH = CLTRAIN_ACT_TANH;
  return {
      arith_case(ADD, {"same_x2x3x4x5", {2, 3, 4, 5}, {2, 3, 4, 5}, RELU}),
      arith_case(ADD, {"se_n2x1x1x4_n2x3x3x4", {2, 1, 1, 4}, {2, 3, 3, 4}}),
      arith_case(ADD, {"scalarlike_x2x3x4x2_1x1x1x1", {2, 3, 4, 2}, {1, 1, 1, 1}, RELU6, true, true, 4.0f}),
      arith_case(ADD, {"x_plus_x_x3x4", {3, 4}, {}}),
      arith_case(ADD, {"both_broadcast_x2x1x4_x1x3x1", {2, 1, 4}, {1, 3, 1}}),
      arith_case(SUB, {"same_x4x6", {4, 6}, {4, 6}}),
      arith_case(SUB, {"broadcast_b_x2x3x3x3_1x1x1x3", {2, 3, 3, 3}, {1, 1, 1, 3}, RELU}),
      arith_case(MUL, {"se_n2x3x3x4_n2x1x1x4", {2, 3, 3, 4}, {2, 1, 1, 4}}),
      arith_case(MUL, {"x_times_x_x3x5", {3, 5}, {}}),
      arith_case(MUL, {"scalarlike_1x1x1x1_x2x3x3x2", {1, 1, 1, 1}, {2, 3, 3, 2}, RELU}),
      arith_case(MUL, {"both_broadcast_x2x1x4_x1x3x1", {2, 1, 4}, {1, 3, 1}, TANH}),
      arith_case(MUL, {"da_only_x3x4", {3, 4}, {3, 4}, CLTRAIN_ACT_NONE, true, false}),
      arith_case(DIV, {"same_x3x5", {3, 5}, {3, 5}}),
      arith_case(DIV, {"broadcast_b_x2x3x3x3_1x1x1x3", {2, 3, 3, 3}, {1, 1, 1, 3}, RELU}),
      arith_case(DIV, {"broadcast_a_n2x1x1x3_n2x2x3x3", {2, 1, 1, 3}, {2, 2, 3, 3}}),
      arith_case(DIV, {"da_only_x4x3", {4, 3}, {4, 3}, CLTRAIN_ACT_NONE, true, false}),
      // A per-channel bias, one gradient asked for, a fused activation of every kind, rank 6.
      arith_case(ADD, {"channel_bias_n2x5x5x8_1x1x1x8", {2, 5, 5, 8}, {1, 1, 1, 8}}),
      arith_case(ADD, {"broadcast_x2x3x4x5_1x3x1x5", {2, 3, 4, 5}, {1, 3, 1, 5}, RELU6, true, true, 4.0f}),
      arith_case(SUB, {"db_only_x2x1x4_x1x3x1", {2, 1, 4}, {1, 3, 1}, RELU, false, true}),
      arith_case(MUL, {"da_only_x2x3x4_x2x1x4", {2, 3, 4}, {2, 1, 4}, CLTRAIN_ACT_RELU_N1_TO_1, true, false, 2.0f}),
      arith_case(DIV, {"broadcast_x3x4x5_x3x1x5", {3, 4, 5}, {3, 1, 5}, TANH}),
      arith_case(DIV, {"scalar_divisor_rank6", {1, 2, 3, 2, 5, 3}, {1, 1, 1, 1, 1, 1}}),
      // LayerNormalization's (x - mean)^2: a per-row mean broadcast along the features.
      arith_case(SQDIFF, {"rows_x4x12_x4x1", {4, 12}, {4, 1}}),
      arith_case(SQDIFF, {"same_x2x3x5", {2, 3, 5}, {2, 3, 5}}),
      arith_case(SQDIFF, {"both_broadcast_x2x1x4_x1x3x1", {2, 1, 4}, {1, 3, 1}}),
      arith_case(SQDIFF, {"db_only_x3x4_x1x4", {3, 4}, {1, 4}, CLTRAIN_ACT_NONE, false, true}),
      arith_case(SQDIFF, {"x_minus_x_x3x4", {3, 4}, {}}),
      // torch.clamp(x, min=c) / MAXIMUM(m, -inf) of log_softmax: a [1] constant-like operand.
      arith_case(MAX, {"scalarlike_x4x6_1x1", {4, 6}, {1, 1}}),
      arith_case(MAX, {"both_broadcast_x2x1x4_x1x3x1", {2, 1, 4}, {1, 3, 1}}),
      arith_case(MAX, {"x_max_x_x3x4", {3, 4}, {}}),  // a tie everywhere: the gradient to a
      arith_case(MIN, {"same_x2x3x5", {2, 3, 5}, {2, 3, 5}}),
      arith_case(MIN, {"db_only_x3x4_x1x4", {3, 4}, {1, 4}, CLTRAIN_ACT_NONE, false, true}),
  };
}

std::vector<OpCase> make_comparison_cases() {
  std::vector<OpCase> cases;
  for (int32_t op : {CLTRAIN_OP_GREATER, CLTRAIN_OP_GREATER_EQUAL, CLTRAIN_OP_LESS, CLTRAIN_OP_LESS_EQUAL,
                     CLTRAIN_OP_EQUAL, CLTRAIN_OP_NOT_EQUAL}) {
    cases.push_back(comparison_case(op, "same_x3x4x5", {3, 4, 5}, {3, 4, 5}));
    // Keras's selu and hard_shrink: x against a constant ([1, 1] after broadcast-ranks).
    cases.push_back(comparison_case(op, "scalarlike_x4x6_1x1", {4, 6}, {1, 1}));
    cases.push_back(comparison_case(op, "both_broadcast_x2x1x4_x1x3x1", {2, 1, 4}, {1, 3, 1}));
  }
  return cases;
}

const RegisterCases kCases(make_cases);
const RegisterCases kComparisonCases(make_comparison_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
