// UPDATE_SGD in [grad] out [W], UPDATE_ADAM in [grad] and UPDATE_ADAM_SQUARES in [grad, gsq] out
// [W, m, v] (update phase), over
// several iterations with a new gradient each, against the update rule in double. The run's
// learning rate overrides the step's when > 0; Adam's bias correction uses t = the iteration.
// Partial updates (params.update_offset, update_count: onert-micro's half-weight ranks) update
// one range of W, with Adam's m and v of the range's size; PartialUpdate checks that the rest of
// W keeps its bits on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "op_case.h"
#include "op_harness.h"

namespace cltrain {
namespace optest {
namespace {

// update_count 0: the whole tensor; else W[offset, offset + count).
OpCase sgd_case(const std::string& tag, std::vector<int32_t> dims, float lr, float lr_override, int32_t offset = 0,
                int32_t count = 0) {
  OpCase c;
  c.name = "SGD_" + tag;
  c.op = CLTRAIN_OP_UPDATE_SGD;
  const int32_t grad = c.input("grad", dims);
  c.tensors[grad].role = CLTRAIN_ROLE_GRADIENT;
  const int32_t w = c.weight("W", dims);
  cltrain_op_params p{};
  p.learning_rate = lr;
  p.update_offset = offset;
  p.update_count = count;
  c.step(CLTRAIN_OP_UPDATE_SGD, CLTRAIN_PHASE_UPDATE, {grad}, {w}, p);
  c.stateful = true;
  c.iterations = 2;
  c.lr_override = lr_override;
  c.fresh = {grad};
  c.state = {w};
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-6;
  const double rate = lr_override > 0.0f ? lr_override : lr;
  c.reference_step = [=](Values& v, int64_t) {
    const size_t first = count > 0 ? static_cast<size_t>(offset) : 0;
    const size_t end = count > 0 ? first + static_cast<size_t>(count) : v[w].size();
    for (size_t i = first; i < end; ++i) v[w][i] -= rate * v[grad][i];
  };
  return c;
}

// gsq: the step also reads a gsq input (GATHER's sum of squared rows), which v takes in place
// of g * g.
OpCase adam_case(const std::string& tag, std::vector<int32_t> dims, float lr, float beta1, float beta2, float eps,
                 float lr_override, int32_t offset = 0, int32_t count = 0, bool gsq = false) {
  OpCase c;
  c.name = (gsq ? "AdamSquares_" : "Adam_") + tag;
  c.op = gsq ? CLTRAIN_OP_UPDATE_ADAM_SQUARES : CLTRAIN_OP_UPDATE_ADAM;
  const int32_t grad = c.input("grad", dims);
  c.tensors[grad].role = CLTRAIN_ROLE_GRADIENT;
  const int32_t w = c.weight("W", dims);
  TensorSpec var;
  var.dims = count > 0 ? std::vector<int32_t>{count} : dims;
  var.role = CLTRAIN_ROLE_OPTIMIZER;
  var.persistent = true;
  var.fill = Fill::None;  // the backend starts optimizer variables at zero
  var.name = "m";
  const int32_t m = c.add(var);
  var.name = "v";
  const int32_t v = c.add(var);
  cltrain_op_params p{};
  p.learning_rate = lr;
  p.beta1 = beta1;
  p.beta2 = beta2;
  p.epsilon = eps;
  p.update_offset = offset;
  p.update_count = count;
  int32_t sq = -1;
  if (gsq) {
    sq = c.input("gsq", dims);
    c.tensors[sq].role = CLTRAIN_ROLE_GRADIENT;
    c.tensors[sq].fill = Fill::Magnitudes;
  }
  c.step(gsq ? CLTRAIN_OP_UPDATE_ADAM_SQUARES : CLTRAIN_OP_UPDATE_ADAM, CLTRAIN_PHASE_UPDATE,
         gsq ? std::vector<int32_t>{grad, sq} : std::vector<int32_t>{grad}, {w, m, v}, p);
  c.stateful = true;
  c.iterations = 3;
  c.lr_override = lr_override;
  c.fresh = {grad};
  if (gsq) c.fresh.push_back(sq);
  c.state = {w, m, v};
  c.tol.vs_cpu = 1e-5;
  c.tol.vs_reference = 1e-5;
  const double rate = lr_override > 0.0f ? lr_override : lr;
  const double b1 = beta1, b2 = beta2, e = eps;
  c.reference_step = [=](Values& x, int64_t t) {
    const double step =
        rate * std::sqrt(1.0 - std::pow(b2, static_cast<double>(t))) / (1.0 - std::pow(b1, static_cast<double>(t)));
    const size_t first = count > 0 ? static_cast<size_t>(offset) : 0;
    for (size_t j = 0; j < x[m].size(); ++j) {
      const size_t i = first + j;  // m[j], v[j] belong to W[first + j]
      const double g = x[grad][i];
      x[m][j] = b1 * x[m][j] + (1.0 - b1) * g;
      x[v][j] = b2 * x[v][j] + (1.0 - b2) * (sq >= 0 ? x[sq][i] : g * g);
      x[w][i] -= step * x[m][j] / (std::sqrt(x[v][j]) + e);
    }
  };
  return c;
}

// Halves of a [6, 4] weight: rows 0-2 (offset 0, count 12) and rows 3-5 (offset 12, count 12).
std::vector<OpCase> partial_cases() {
  return {
      sgd_case("part_rows0to2_w6x4", {6, 4}, 0.1f, 0.0f, 0, 12),
      sgd_case("part_rows3to5_w6x4", {6, 4}, 0.1f, 0.05f, 12, 12),
      adam_case("part_rows0to2_w6x4", {6, 4}, 0.01f, 0.9f, 0.999f, 1e-7f, 0.0f, 0, 12),
      adam_case("part_rows3to5_w6x4", {6, 4}, 0.01f, 0.8f, 0.99f, 1e-5f, 0.003f, 12, 12),
  };
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> cases = {
      sgd_case("w7x10", {7, 10}, 0.1f, 0.0f),
      sgd_case("lr_override_b64", {64}, 0.1f, 0.05f),
      adam_case("w7x10", {7, 10}, 0.01f, 0.9f, 0.999f, 1e-7f, 0.0f),
      adam_case("lr_override_w4x32", {4, 32}, 0.01f, 0.8f, 0.99f, 1e-5f, 0.003f),
      // An embedding table's update, v from GATHER's sum of squared rows.
      adam_case("gsq_w20x8", {20, 8}, 0.01f, 0.9f, 0.999f, 1e-7f, 0.0f, 0, 0, true),
      // The mlp's first weight: more elements than any work-group.
      sgd_case("w128x784", {128, 784}, 0.01f, 0.0f),
      adam_case("w128x784", {128, 784}, 0.001f, 0.9f, 0.999f, 1e-7f, 0.0f),
  };
  for (OpCase& c : partial_cases()) cases.push_back(std::move(c));
  return cases;
}

const RegisterCases kCases(make_cases);

// Outside [update_offset, update_offset + update_count) W keeps its initial bits after every
// iteration, on every backend (the suite checks the range against the reference and the CPU).
void expect_outside_unchanged(const std::string& backend_name) {
  for (const OpCase& c : partial_cases()) {
    SCOPED_TRACE(c.name + " on " + backend_name);
    std::string skip, error;
    std::unique_ptr<Backend> backend = open_test_backend(backend_name, &skip, &error);
    if (!backend) {
      ASSERT_TRUE(error.empty()) << error;
      GTEST_SKIP() << skip;
    }
    const AbiGraph g = abi_graph(c);
    if (!backend->supports(g.tensors, g.steps, 0, true)) {
      const char* why = backend->iface()->last_error(backend->object());
      FAIL() << backend_name << " does not support " << c.name << ": " << (why ? why : "");
    }
    const cltrain_op_params& p = c.steps[0].params;
    const int32_t w = c.steps[0].outputs[0];
    const CaseInputs in = make_inputs(c);
    const std::vector<float>& initial = in.initial.at(w);
    RunOptions options;
    options.is_cpu = backend_name == "cpu";
    Outputs out;
    try {
      out = run_case(c, *backend, in, options);
    } catch (const std::exception& e) {
      FAIL() << e.what();
    }
    ASSERT_EQ(out.size(), static_cast<size_t>(c.iterations));
    for (size_t it = 0; it < out.size(); ++it) {
      const std::vector<float>& got = out[it].at(w);
      ASSERT_EQ(got.size(), initial.size());
      size_t changed_inside = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const bool inside = static_cast<int64_t>(i) >= p.update_offset &&
                            static_cast<int64_t>(i) < static_cast<int64_t>(p.update_offset) + p.update_count;
        const bool same = std::memcmp(&got[i], &initial[i], sizeof(float)) == 0;
        if (inside)
          changed_inside += !same;
        else
          EXPECT_TRUE(same) << "W[" << i << "] outside the range changed in iteration " << it + 1 << ": " << initial[i]
                            << " -> " << got[i];
      }
      EXPECT_GT(changed_inside, 0u) << "nothing in the range changed in iteration " << it + 1;
    }
  }
}

TEST(PartialUpdate, SGD_Adam_OutsideRangeUnchanged_cpu) { expect_outside_unchanged("cpu"); }
TEST(PartialUpdate, SGD_Adam_OutsideRangeUnchanged_opencl) { expect_outside_unchanged("opencl"); }

// The checks refuse ranges outside W and m, v of the wrong size.
TEST(PartialUpdate, SGD_Adam_BadRangesRefused) {
  for (const std::string name : {"cpu", "opencl"}) {
    std::string skip, error;
    std::unique_ptr<Backend> backend = open_test_backend(name, &skip, &error);
    if (!backend) {
      EXPECT_TRUE(error.empty()) << error;
      continue;
    }
    struct Bad {
      bool adam;
      int32_t offset, count, mv;
    };
    const Bad bad[] = {{false, -1, 12, 0}, {false, 13, 12, 0}, {false, 0, -1, 0},
                       {true, 12, 13, 13}, {true, 12, 12, 24}, {true, -4, 4, 4}};
    for (const Bad& b : bad) {
      OpCase c = b.adam ? adam_case("bad", {6, 4}, 0.01f, 0.9f, 0.999f, 1e-7f, 0.0f, 0, 12)
                        : sgd_case("bad", {6, 4}, 0.1f, 0.0f, 0, 12);
      c.steps[0].params.update_offset = b.offset;
      c.steps[0].params.update_count = b.count;
      if (b.adam)
        for (int k = 1; k < 3; ++k) c.tensors[c.steps[0].outputs[k]].dims = {b.mv};
      const AbiGraph g = abi_graph(c);
      EXPECT_FALSE(backend->supports(g.tensors, g.steps, 0, true))
          << name << (b.adam ? " Adam" : " SGD") << " offset " << b.offset << " count " << b.count << " m, v " << b.mv;
    }
  }
}

}  // namespace
}  // namespace optest
}  // namespace cltrain
