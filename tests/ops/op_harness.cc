#include "op_harness.h"

#include "case_run.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

namespace cltrain {
namespace optest {
namespace {

constexpr int kMaxReported = 6;  // mismatching elements listed per tensor

uint32_t fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char ch : s) h = (h ^ ch) * 16777619u;
  return h;
}

// Which side of an activation's kinks y lies on.
int kink_region(int32_t activation, float y) {
  switch (activation) {
    case CLTRAIN_ACT_RELU: return y > 0.0f;
    case CLTRAIN_ACT_RELU6: return y <= 0.0f ? 0 : (y >= 6.0f ? 2 : 1);
    case CLTRAIN_ACT_RELU_N1_TO_1: return y <= -1.0f ? 0 : (y >= 1.0f ? 2 : 1);
    default: return 0;
  }
}

void expect_finite(const std::string& backend, const OpCase& c, const Outputs& out) {
  for (size_t k = 0; k < out.size(); ++k)
    for (const auto& [t, v] : out[k]) {
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]) && bad++ == 0) first = i;
      if (bad)
        ADD_FAILURE() << backend << ": " << bad << " of " << v.size() << " elements of " << c.tensors[t].name
                      << " are NaN or Inf (checkpoint " << k << ", first [" << first << "] = " << v[first] << ")"
                      << (c.tensors[t].fill == Fill::Output ? "; NaN may mean the element was never written" : "");
    }
}

// |got - want| <= tol * max(|want_i|, max |want|) (+ slack) for every element.
void expect_close_tensor(const std::string& what, const std::vector<float>& got, const std::vector<double>& want,
                         double tol, double slack = 0.0) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  size_t bad = 0;
  std::ostringstream m;
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = tol * std::max(std::fabs(want[i]), scale) + slack;
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(diff <= bound)) {
      if (bad < kMaxReported)
        m << "\n  [" << i << "] got " << got[i] << ", expected " << want[i] << " (|diff| " << diff << " > " << bound
          << ")";
      ++bad;
    }
  }
  if (bad) ADD_FAILURE() << what << ": " << bad << " of " << got.size() << " elements differ" << m.str();
}

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

std::vector<size_t> sample_indices(size_t n, int samples, uint32_t seed) {
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  if (n <= static_cast<size_t>(samples)) return idx;
  std::mt19937 rng(seed);
  for (int i = 0; i < samples; ++i) std::swap(idx[i], idx[std::uniform_int_distribution<size_t>(i, n - 1)(rng)]);
  idx.resize(static_cast<size_t>(samples));
  std::sort(idx.begin(), idx.end());
  return idx;
}

// The gradients of the backward step against central differences of the forward step's scalar
// on the same backend.
void check_finite_differences(const OpCase& c, CaseRun& run, const CaseInputs& in, const Checkpoint& out,
                              const std::string& backend) {
  const std::vector<float>& y0 = out.at(c.y);
  const std::vector<float>* r = c.dy >= 0 ? &in.initial.at(c.dy) : nullptr;
  const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};
  const double eps = c.tol.fd_eps;
  // An input given to the step twice (x + x) has a gradient output per use; the scalar moves
  // with their sum.
  std::map<int32_t, std::vector<int32_t>> grads_of;
  for (const auto& [x, grad] : c.grads) grads_of[x].push_back(grad);
  for (const auto& [x, grads] : grads_of) {
    const std::vector<float> base = in.initial.at(x);
    std::vector<double> analytic(base.size(), 0.0);
    std::string grad_names;
    for (int32_t g : grads) {
      const std::vector<float>& v = out.at(g);
      for (size_t i = 0; i < v.size() && i < analytic.size(); ++i) analytic[i] += v[i];
      grad_names += (grad_names.empty() ? "" : " + ") + c.tensors[g].name;
    }
    double scale = 0.0;
    for (double g : analytic) scale = std::max(scale, std::fabs(g));
    const std::vector<size_t> idx = sample_indices(base.size(), c.fd_samples, fnv1a(c.name + c.tensors[x].name));
    size_t skipped = 0, bad = 0;
    std::ostringstream m;
    std::vector<float> v = base;
    // Where a dx_activation masks dx, only the elements it lets through are x's gradient.
    const bool masked = c.dx_activation != CLTRAIN_ACT_NONE && x == c.steps[1].inputs[0];
    size_t masked_out = 0;
    for (size_t i : idx) {
      if (masked && !(base[i] > 0.0f && (c.dx_activation != CLTRAIN_ACT_RELU6 || base[i] < 6.0f))) {
        ++masked_out;
        continue;
      }
      v[i] = static_cast<float>(base[i] + eps);
      const double hi = v[i];
      run.write(x, v);
      run.run(0, args);
      const std::vector<float> yp = run.read(c.y);
      v[i] = static_cast<float>(base[i] - eps);
      const double lo = v[i];
      run.write(x, v);
      run.run(0, args);
      const std::vector<float> ym = run.read(c.y);
      v[i] = base[i];
      bool kink = false;
      for (size_t j = 0; j < y0.size() && !kink; ++j)
        kink = kink_region(c.activation, yp[j]) != kink_region(c.activation, y0[j]) ||
               kink_region(c.activation, ym[j]) != kink_region(c.activation, y0[j]);
      if (kink) {
        ++skipped;
        continue;
      }
      // The scalar, and how much float rounding of the elements that moved can blur it.
      double lp = 0.0, lm = 0.0, moved = 0.0;
      if (r) {
        for (size_t j = 0; j < yp.size(); ++j) {
          lp += static_cast<double>(yp[j]) * (*r)[j];
          lm += static_cast<double>(ym[j]) * (*r)[j];
          if (yp[j] != ym[j]) moved += std::max(std::fabs(yp[j]), std::fabs(ym[j])) * std::fabs((*r)[j]);
        }
      } else {
        lp = yp[0];
        lm = ym[0];
        moved = 2.0 * (std::fabs(lp) + std::fabs(lm));
      }
      const double numeric = (lp - lm) / (hi - lo);
      const double bound =
          c.tol.fd_tol * std::max(std::fabs(analytic[i]), scale) + 8.0 * FLT_EPSILON * moved / (hi - lo);
      const double diff = std::fabs(numeric - analytic[i]);
      if (!(diff <= bound)) {
        if (bad < kMaxReported)
          m << "\n  [" << i << "] backward " << analytic[i] << ", finite differences " << numeric << " (|diff| " << diff
            << " > " << bound << ")";
        ++bad;
      }
    }
    run.write(x, base);
    if (bad)
      ADD_FAILURE() << backend << ": d/d" << c.tensors[x].name << " (" << grad_names << "): " << bad << " of "
                    << idx.size() - skipped << " sampled elements disagree with finite differences (eps " << eps << ")"
                    << m.str();
    EXPECT_LT(masked_out, idx.size()) << backend << ": dx_activation masks every sample of " << c.tensors[x].name;
    EXPECT_LE(skipped * 2, idx.size() - masked_out)
        << backend << ": " << skipped << " of " << idx.size() << " samples of " << c.tensors[x].name
        << " cross a kink of the activation; pick other inputs";
  }
}

Values to_values(const std::map<int32_t, std::vector<float>>& m) {
  Values v;
  for (const auto& [t, x] : m) v[t] = to_double(x);
  return v;
}

Outputs run_differentiable(const OpCase& c, Backend& b, const CaseInputs& in, const RunOptions& options) {
  CaseRun run(c, b, in, options.is_cpu);
  const cltrain_run_args args{sizeof(cltrain_run_args), 1, 0.0f};
  const Checkpoint start = run.read_all();
  for (const auto& [t, v] : in.initial)
    EXPECT_TRUE(same_bits(v, start.at(t)))
        << b.name() << ": " << c.tensors[t].name << " does not hold its initial values";

  run.run(0, args);
  const Checkpoint forward = run.read_all();
  run.expect_unchanged(start, forward, step_outputs(c, {0}), "in the forward step");
  if (c.steps.size() == 1) {  // a forward-only op (FILL: its operands are constants)
    Outputs out(1);
    out[0][c.y] = forward.at(c.y);
    expect_finite(b.name(), c, out);
    run.expect_guards_intact("by the forward step");
    if (options.finite_differences && c.reference)
      for (const auto& [t, v] : c.reference(to_values(in.initial)))
        expect_close_tensor(b.name() + ": " + c.tensors[t].name + " vs the reference in double", out[0].at(t), v,
                            c.tol.vs_reference);
    return out;
  }
  std::set<int32_t> backward_writes = step_outputs(c, {1});
  if (c.dy >= 0) backward_writes.insert(c.dy);  // a backward step may overwrite its dy
  run.run(1, args);
  const Checkpoint backward = run.read_all();
  run.expect_unchanged(forward, backward, backward_writes, "in the backward step");
  if (c.dy >= 0) run.write(c.dy, in.initial.at(c.dy));

  Outputs out(1);
  out[0][c.y] = forward.at(c.y);
  for (const auto& [x, g] : c.grads) out[0][g] = backward.at(g);
  for (int32_t t : step_outputs(c, {1})) out[0][t] = backward.at(t);  // and what else it writes (GATHER's dsq)
  expect_finite(b.name(), c, out);
  run.expect_guards_intact("by the forward and backward steps");

  if (options.finite_differences) {
    if (c.reference) {
      const Values want = c.reference(to_values(in.initial));
      for (const auto& [t, v] : want)
        expect_close_tensor(b.name() + ": " + c.tensors[t].name + " vs the reference in double", out[0].at(t), v,
                            c.tol.vs_reference);
    }
    if (c.fd_samples > 0 && options.fd_runs) {
      check_finite_differences(c, run, in, out[0], b.name());
      run.expect_guards_intact("by the finite-difference runs");
    }
  }
  return out;
}

Outputs run_stateful(const OpCase& c, Backend& b, const CaseInputs& in, const RunOptions& options) {
  CaseRun run(c, b, in, options.is_cpu);
  Checkpoint before = run.read_all();
  Values ref = to_values(before);
  for (int32_t t = 0; t < static_cast<int32_t>(c.tensors.size()); ++t) {
    if (in.initial.count(t)) {
      EXPECT_TRUE(same_bits(in.initial.at(t), before.at(t)))
          << b.name() << ": " << c.tensors[t].name << " does not hold its initial values";
    }
    if (c.tensors[t].role == CLTRAIN_ROLE_OPTIMIZER) {
      ref[t].assign(ref[t].size(), 0.0);
      EXPECT_TRUE(std::all_of(before.at(t).begin(), before.at(t).end(), [](float f) { return f == 0.0f; }))
          << b.name() << ": optimizer variable " << c.tensors[t].name << " does not start at zero";
    }
  }
  const std::set<int32_t> writes = step_outputs(c, all_steps(c));
  Outputs out;
  for (int it = 1; it <= c.iterations; ++it) {
    for (const auto& [t, v] : in.fresh[it - 1]) {
      run.write(t, v);
      before[t] = v;
      ref[t] = to_double(v);
    }
    const cltrain_run_args args{sizeof(cltrain_run_args), it, c.lr_override};
    for (int s = 0; s < static_cast<int>(c.steps.size()); ++s) run.run(s, args);
    const Checkpoint after = run.read_all();
    run.expect_unchanged(before, after, writes, "in iteration " + std::to_string(it));
    before = after;
    Checkpoint k;
    for (int32_t t : c.state) k[t] = after.at(t);
    out.push_back(k);
    if (options.finite_differences && c.reference_step) {
      c.reference_step(ref, it);
      for (int32_t t : c.state)
        expect_close_tensor(b.name() + ": " + c.tensors[t].name + " after iteration " + std::to_string(it) +
                                " vs the reference in double",
                            k.at(t), ref.at(t), c.tol.vs_reference);
    }
  }
  expect_finite(b.name(), c, out);
  run.expect_guards_intact("by the steps");
  return out;
}

// Holds the plugin loaded for the whole test run, so that each test's open/close of the plugin
// does not unload and reload the OpenCL driver.
void keep_loaded(const std::string& path) {
  static void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  (void)handle;
}

}  // namespace

std::unique_ptr<Backend> open_test_backend(const std::string& name, std::string* skip, std::string* error) {
  cltrain_backend_config config = default_backend_config();
#ifdef CLTRAIN_TEST_CACHE_DIR
  std::error_code ec;
  std::filesystem::create_directories(CLTRAIN_TEST_CACHE_DIR, ec);
  if (!ec) config.cache_dir = CLTRAIN_TEST_CACHE_DIR;
#endif
  std::string why;
  if (name == "cpu") {
    auto b = open_backend("cpu", config, &why);
    if (!b) *error = why;
    return b;
  }
  if (name == "opencl") {
    std::string path;
    if (const char* env = std::getenv("CLTRAIN_TEST_OPENCL_PLUGIN")) path = env;
#ifdef CLTRAIN_OPENCL_PLUGIN_PATH
    if (path.empty()) path = CLTRAIN_OPENCL_PLUGIN_PATH;
#endif
    if (path.empty()) {
      *skip = "the OpenCL plugin is not part of this build";
      return nullptr;
    }
    if (access(path.c_str(), F_OK) != 0) {
      *error = "the OpenCL plugin " + path + " does not exist (build the target cltrain_opencl)";
      return nullptr;
    }
    keep_loaded(path);
    auto b = open_plugin_file(path, config, &why);
    if (!b) {
      const bool unavailable = why.find("not available") != std::string::npos;
      if (unavailable && !std::getenv("CLTRAIN_REQUIRE_OPENCL"))
        *skip = why;
      else
        *error = why;
    }
    return b;
  }
  *error = "unknown backend " + name;
  return nullptr;
}

CaseInputs make_inputs(const OpCase& c) {
  std::mt19937 rng(fnv1a(c.name));
  CaseInputs in;
  auto uniform = [&](size_t n, float scale) {
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  auto magnitudes = [&](size_t n, float scale) {
    std::vector<float> v = uniform(n, scale);
    for (float& x : v) x = std::fabs(x);
    return v;
  };
  for (int32_t t = 0; t < static_cast<int32_t>(c.tensors.size()); ++t) {
    const TensorSpec& s = c.tensors[t];
    const size_t n = element_count(s.dims);
    const size_t row = s.dims.empty() ? 1 : static_cast<size_t>(s.dims.back());
    switch (s.fill) {
      case Fill::Uniform: in.initial[t] = uniform(n, s.scale); break;
      case Fill::Magnitudes: in.initial[t] = magnitudes(n, s.scale); break;
      case Fill::Integers: {
        std::uniform_int_distribution<int> d(0, static_cast<int>(s.scale));
        std::vector<float> v(n);
        for (float& x : v) x = static_cast<float>(d(rng));
        in.initial[t] = v;
        break;
      }
      case Fill::SoftmaxRows: {
        std::vector<float> v = uniform(n, s.scale);
        for (size_t r0 = 0; r0 < n; r0 += row) {
          double sum = 0.0;
          for (size_t i = r0; i < r0 + row; ++i) sum += std::exp(static_cast<double>(v[i]));
          for (size_t i = r0; i < r0 + row; ++i) v[i] = static_cast<float>(std::exp(static_cast<double>(v[i])) / sum);
        }
        in.initial[t] = v;
        break;
      }
      case Fill::OneHotRows: {
        std::vector<float> v(n, 0.0f);
        for (size_t r0 = 0; r0 < n; r0 += row) v[r0 + std::uniform_int_distribution<size_t>(0, row - 1)(rng)] = 1.0f;
        in.initial[t] = v;
        break;
      }
      case Fill::Values:
        if (s.values.size() != n) throw std::logic_error(c.name + ": " + s.name + " has the wrong number of values");
        in.initial[t] = s.values;
        break;
      case Fill::Output:
      case Fill::None: break;
    }
  }
  in.fresh.resize(static_cast<size_t>(c.iterations));
  for (auto& f : in.fresh)
    for (int32_t t : c.fresh)
      f[t] = c.tensors[t].fill == Fill::Magnitudes ? magnitudes(element_count(c.tensors[t].dims), c.tensors[t].scale)
                                                   : uniform(element_count(c.tensors[t].dims), c.tensors[t].scale);
  return in;
}

AbiGraph abi_graph(const OpCase& c) {
  CaseGraph g(c, nullptr);
  AbiGraph a;
  a.steps = g.steps;
  a.tensors = g.tensors;
  for (auto& t : a.tensors) t.name = nullptr;  // the names die with g
  return a;
}

Outputs run_case(const OpCase& c, Backend& backend, const CaseInputs& in, const RunOptions& options) {
  return c.stateful ? run_stateful(c, backend, in, options) : run_differentiable(c, backend, in, options);
}

void expect_outputs_close(const OpCase& c, const Outputs& got, const Outputs& want, double tol,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k)
    for (const auto& [t, v] : want[k])
      expect_close_tensor(
          what + ": " + c.tensors[t].name + (got.size() > 1 ? " after iteration " + std::to_string(k + 1) : ""),
          got[k].at(t), to_double(v), tol);
}

bool rounds_like_the_cpu(const std::string& device) {
  std::string d = device;
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return d.find("pthread") != std::string::npos || d.find("portable computing language") != std::string::npos ||
         d.find("pocl") != std::string::npos;
}

int64_t ulp_distance(float a, float b) {
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof(i));
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);  // monotonic in f
  };
  return std::llabs(key(a) - key(b));
}

void expect_outputs_bitwise(const OpCase& c, const Outputs& got, const Outputs& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k)
    for (const auto& [t, w] : want[k]) {
      const std::vector<float>& g = got[k].at(t);
      ASSERT_EQ(g.size(), w.size()) << what;
      size_t bad = 0, first = 0;
      int64_t largest = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        uint32_t gb, wb;
        std::memcpy(&gb, &g[i], sizeof(gb));
        std::memcpy(&wb, &w[i], sizeof(wb));
        if (gb == wb) continue;
        if (bad++ == 0) first = i;
        largest = std::max(largest, ulp_distance(g[i], w[i]));
      }
      if (!bad) continue;
      uint32_t gb, wb;
      std::memcpy(&gb, &g[first], sizeof(gb));
      std::memcpy(&wb, &w[first], sizeof(wb));
      std::ostringstream m;
      m << std::hexfloat << g[first] << " (0x" << std::hex << gb << ") vs " << std::hexfloat << w[first] << " (0x"
        << std::hex << wb << ")" << std::dec << std::defaultfloat;
      ADD_FAILURE() << what << ": " << c.tensors[t].name
                    << (got.size() > 1 ? " after iteration " + std::to_string(k + 1) : "") << ": " << bad << " of "
                    << g.size() << " elements differ; first [" << first << "] " << m.str() << ", "
                    << ulp_distance(g[first], w[first]) << " ulp apart; largest distance " << largest << " ulp";
    }
}

}  // namespace optest
}  // namespace cltrain
