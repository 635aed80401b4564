// The op suite: every case of every op on every backend (TEST_P over case x backend), plus a
// check that every op of the op list has a case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>

#include "case_run.h"
#include "op_harness.h"

namespace cltrain {
namespace optest {
namespace {

const char* const kBackends[] = {"cpu", "opencl"};

// Sets a case's backend environment for its lifetime, then puts back what was there.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name.c_str());
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) {
      if (old)
        setenv(name.c_str(), old->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

class OpTest : public ::testing::TestWithParam<std::tuple<size_t, std::string>> {};

TEST_P(OpTest, Matches) {
  const OpCase& c = all_cases()[std::get<0>(GetParam())];
  const std::string& name = std::get<1>(GetParam());
  const ScopedEnv env(c.backend_env);
  std::string skip, error;
  std::unique_ptr<Backend> backend = open_test_backend(name, &skip, &error);
  if (!backend) {
    if (!error.empty()) FAIL() << error;
    GTEST_SKIP() << skip;
  }
  const CaseInputs in = make_inputs(c);
  try {
    const AbiGraph g = abi_graph(c);
    if (!backend->supports(g.tensors, g.steps, 0, true)) {
      const char* why = backend->iface()->last_error(backend->object());
      if (name == "cpu") FAIL() << "the cpu backend must support every case: " << (why ? why : "");
      GTEST_SKIP() << name << " does not support " << cltrain_op_name(c.op) << " here" << (why && *why ? ": " : "")
                   << (why ? why : "");
    }
    RunOptions options;
    options.is_cpu = name == "cpu";
    // CLTRAIN_OPTEST_NO_FD=1: no finite-difference runs on this backend (.ci/rusticl: a second
    // OpenCL implementation, slow per launch, checked against the CPU and the double reference;
    // the gradients' maths is checked by finite differences where launches are cheap).
    if (const char* no_fd = std::getenv("CLTRAIN_OPTEST_NO_FD"); no_fd && std::string(no_fd) == "1")
      options.fd_runs = false;
    const Outputs got = run_case(c, *backend, in, options);

    // The reference: the CPU backend on the same inputs (for the CPU itself, a second run must
    // give the same bits).
    std::unique_ptr<Backend> cpu = open_test_backend("cpu", &skip, &error);
    ASSERT_TRUE(cpu) << error;
    RunOptions cpu_options;
    cpu_options.finite_differences = false;
    cpu_options.is_cpu = true;
    const Outputs want = run_case(c, *cpu, in, cpu_options);
    expect_outputs_close(c, got, want, name == "cpu" ? 0.0 : c.tol.vs_cpu, name + " vs cpu");
    // Where the device rounds as the CPU does, the Numerics of cltrain_backend.h make the two
    // backends agree bit for bit.
    const std::string device = backend->device_name();
    const bool exact = name == "cpu" || rounds_like_the_cpu(device);
    if (name != "cpu" && exact) expect_outputs_bitwise(c, got, want, name + " (" + device + ") vs cpu, bitwise");
    // And both are the numerics' float definition, where the case states it.
    if (c.exact && exact) {
      ASSERT_EQ(got.size(), 1u) << "exact outputs are for differentiable cases";
      expect_outputs_bitwise(c, got, Outputs{c.exact(in.initial)}, name + " vs the numerics, bitwise");
    }
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
}

std::string param_name(const ::testing::TestParamInfo<OpTest::ParamType>& info) {
  return all_cases()[std::get<0>(info.param)].name + "_" + std::get<1>(info.param);
}

INSTANTIATE_TEST_SUITE_P(Ops, OpTest,
                         ::testing::Combine(::testing::Range<size_t>(0, all_cases().size()),
                                            ::testing::ValuesIn(std::vector<std::string>(std::begin(kBackends),
                                                                                         std::end(kBackends)))),
                         param_name);

// The chunked convolution cases give the OpenCL backend a scratch bound of a few KiB: its panels
// are private layer-scope tensors of the plan, within that bound (and CLBlast's own scratch).
TEST(OpenCLScratch, ChunkedConvolutionScratchIsLayerScopeWithinItsBound) {
  int seen = 0;
  for (const OpCase& c : all_cases()) {
    if (c.backend_env.empty() || c.backend_env[0].first != "CLTRAIN_OPENCL_SCRATCH_BYTES") continue;
    SCOPED_TRACE(c.name);
    const ScopedEnv env(c.backend_env);
    std::string skip, error;
    std::unique_ptr<Backend> backend = open_test_backend("opencl", &skip, &error);
    if (!backend) {
      ASSERT_TRUE(error.empty()) << error;
      GTEST_SKIP() << skip;
    }
    const CaseInputs in = make_inputs(c);
    const CaseGraph g(c, &in);
    const cltrain_memory_report r = backend->prepare(g.desc());
    const uint64_t bound = std::stoull(c.backend_env[0].second);
    EXPECT_GT(r.role_peak[CLTRAIN_ROLE_LAYER_SCOPE], 0u);
    EXPECT_LE(r.role_peak[CLTRAIN_ROLE_LAYER_SCOPE], bound + (64u << 10));  // panels + CLBlast's scratch
    ++seen;
  }
  EXPECT_GE(seen, 2);
}

// An op added to CLTRAIN_OP_LIST without a case here fails this test.
TEST(OpCoverage, EveryOpHasACase) {
  std::string missing;
#define CLTRAIN_X_COVERED(e, name, code, kind)                                                                      \
  if (std::none_of(all_cases().begin(), all_cases().end(), [](const OpCase& c) { return c.op == CLTRAIN_OP_##e; })) \
    missing += std::string(missing.empty() ? "" : ", ") + name;
  CLTRAIN_OP_LIST(CLTRAIN_X_COVERED)
#undef CLTRAIN_X_COVERED
  EXPECT_EQ(missing, "") << "ops without a case in tests/ops";
}

// FILL (its operands are constants) and the comparisons (no gradient flows through a 0/1 mask)
// have no backward step.
bool forward_only(int32_t op) {
  return op == CLTRAIN_OP_FILL || op == CLTRAIN_OP_GREATER || op == CLTRAIN_OP_GREATER_EQUAL || op == CLTRAIN_OP_LESS ||
         op == CLTRAIN_OP_LESS_EQUAL || op == CLTRAIN_OP_EQUAL || op == CLTRAIN_OP_NOT_EQUAL;
}

// Model ops and losses need forward and backward steps, graph and update ops their own step.
TEST(OpCoverage, CasesHaveTheStepsOfTheirKind) {
  static const int kinds[] = {
#define CLTRAIN_X_KIND(e, name, code, kind) kind,
      CLTRAIN_OP_LIST(CLTRAIN_X_KIND)
#undef CLTRAIN_X_KIND
  };
  for (const OpCase& c : all_cases()) {
    ASSERT_GE(c.op, 0);
    ASSERT_LT(c.op, CLTRAIN_OP_COUNT);
    ASSERT_FALSE(c.steps.empty()) << c.name;
    const int kind = kinds[c.op];
    if (forward_only(c.op)) {
      ASSERT_EQ(c.steps.size(), 1u) << c.name;
      EXPECT_EQ(c.steps[0].phase, CLTRAIN_PHASE_FORWARD) << c.name;
      EXPECT_TRUE(c.grads.empty()) << c.name;
    } else if (kind == CLTRAIN_KIND_MODEL || kind == CLTRAIN_KIND_LOSS) {
      EXPECT_FALSE(c.stateful) << c.name;
      ASSERT_EQ(c.steps.size(), 2u) << c.name;
      EXPECT_EQ(c.steps[0].phase, CLTRAIN_PHASE_FORWARD) << c.name;
      EXPECT_EQ(c.steps[1].phase, CLTRAIN_PHASE_BACKWARD) << c.name;
      EXPECT_FALSE(c.grads.empty()) << c.name;
    } else {
      EXPECT_TRUE(c.stateful) << c.name;
      EXPECT_EQ(c.steps[0].phase, kind == CLTRAIN_KIND_GRAPH ? CLTRAIN_PHASE_BACKWARD : CLTRAIN_PHASE_UPDATE) << c.name;
      EXPECT_TRUE(c.reference_step) << c.name;
    }
    for (const cltrain_step_desc& s : c.steps) EXPECT_EQ(s.op, c.op) << c.name;
  }
}

}  // namespace
}  // namespace optest
}  // namespace cltrain
