// ACCUMULATE (backward phase): in [a] out [acc], acc += a; run twice so that it accumulates.
// ACCUMULATE_FC_GRADS: below.
#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

OpCase accumulate_case(const std::string& tag, std::vector<int32_t> dims) {
  OpCase c;
  c.name = "Accumulate_" + tag;
  c.op = CLTRAIN_OP_ACCUMULATE;
  const int32_t a = c.input("a", dims);
  c.tensors[a].role = CLTRAIN_ROLE_DISPOSABLE;
  const int32_t acc = c.input("acc", dims);
  c.tensors[acc].role = CLTRAIN_ROLE_BACK_PROP;
  c.step(CLTRAIN_OP_ACCUMULATE, CLTRAIN_PHASE_BACKWARD, {a}, {acc});
  c.stateful = true;
  c.iterations = 2;
  c.fresh = {a};
  c.state = {acc};
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-6;
  c.reference_step = [=](Values& v, int64_t) {
    for (size_t i = 0; i < v[acc].size(); ++i) v[acc][i] += v[a][i];
  };
  return c;
}

// ACCUMULATE_FC_GRADS (backward phase): in [x, dz] out [dW, db], dW += dz^T x and db += the column
// sums of dz (x viewed as [N, K], dz as [N, M]); run twice so that it accumulates.
OpCase accumulate_fc_grads_case(const std::string& tag, std::vector<int32_t> xdims, int32_t m, bool with_w,
                                bool with_b) {
  OpCase c;
  c.name = "AccumulateFcGrads_" + tag;
  c.op = CLTRAIN_OP_ACCUMULATE_FC_GRADS;
  const int32_t k = xdims.back();
  const int32_t n = static_cast<int32_t>(element_count(xdims) / static_cast<uint64_t>(k));
  const int32_t x = c.input("x", xdims);
  const int32_t dz = c.input("dz", {n, m});
  c.tensors[dz].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dw = with_w ? c.input("dW", {m, k}) : -1;
  const int32_t db = with_b ? c.input("db", {m}) : -1;
  for (int32_t g : {dw, db})
    if (g >= 0) c.tensors[g].role = CLTRAIN_ROLE_GRADIENT;
  c.step(CLTRAIN_OP_ACCUMULATE_FC_GRADS, CLTRAIN_PHASE_BACKWARD, {with_w ? x : -1, dz}, {dw, db});
  c.stateful = true;
  c.iterations = 2;
  c.fresh = {x, dz};
  for (int32_t g : {dw, db})
    if (g >= 0) c.state.push_back(g);
  c.tol.vs_cpu = 1e-4;  // the GEMM's sums against the CPU's chains, as FULLY_CONNECTED's dW
  c.tol.vs_reference = 1e-4;
  c.reference_step = [=](Values& v, int64_t) {
    for (int32_t i = 0; i < n; ++i)
      for (int32_t j = 0; j < m; ++j) {
        const double d = v[dz][static_cast<size_t>(i * m + j)];
        if (db >= 0) v[db][static_cast<size_t>(j)] += d;
        if (dw >= 0)
          for (int32_t l = 0; l < k; ++l)
            v[dw][static_cast<size_t>(j * k + l)] += d * v[x][static_cast<size_t>(i * k + l)];
      }
  };
  return c;
}

std::vector<OpCase> make_cases() {
  return {accumulate_case("x4x7", {4, 7}),
          accumulate_case("x64", {64}),
          accumulate_case("x32x784", {32, 784}),
          accumulate_fc_grads_case("n8_m12_k5", {8, 5}, 12, true, true),
          accumulate_fc_grads_case("rank3_n2x4_m16_k6_no_bias", {2, 4, 6}, 16, true, false),
          accumulate_fc_grads_case("bias_only_n6_m10", {6, 3}, 10, false, true),
          accumulate_fc_grads_case("lstm_n8_m256_k64", {8, 64}, 256, true, true)};
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
