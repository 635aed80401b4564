#include "bench_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>

#include "atomic_file.h"
#include "flops.h"
#include "plan_command.h"
#include "session_setup.h"

namespace cltrain {
namespace {

// The backends (indices into the session's) that run steps.
std::vector<size_t> backends_used(const Session& session) {
  std::vector<size_t> used;
  for (int32_t b : session.step_backend())
    if (std::find(used.begin(), used.end(), static_cast<size_t>(b)) == used.end())
      used.push_back(static_cast<size_t>(b));
  std::sort(used.begin(), used.end());
  return used;
}

// What the backends counted over the measured steps, summed; nullopt where one does not say.
std::optional<cltrain_run_stats> total_stats(Session& session, const std::vector<size_t>& used) {
  cltrain_run_stats sum{};
  for (size_t b : used) {
    const std::optional<cltrain_run_stats> s = session.backend(b).stats();
    if (!s) return std::nullopt;
    sum.launches += s->launches;
    sum.bytes_to_device += s->bytes_to_device;
    sum.bytes_from_device += s->bytes_from_device;
    sum.blocking_waits += s->blocking_waits;
    sum.buffer_allocations += s->buffer_allocations;
    sum.program_builds += s->program_builds;
    sum.steps_run += s->steps_run;
  }
  return sum;
}

const char* phase_word(int32_t phase) {
  switch (phase) {
    case CLTRAIN_PHASE_FORWARD: return "forward";
    case CLTRAIN_PHASE_BACKWARD: return "backward";
    case CLTRAIN_PHASE_UPDATE: return "update";
    default: return "?";
  }
}

// One row of --profile: an (op, phase) over all its steps, per training step.
struct ProfileRow {
  std::string op, phase;
  double calls = 0, ms = 0, share = 0;
  double flops = 0;  // per training step
  double gflops() const { return ms > 0 ? flops / (ms * 1e6) : 0.0; }
};

// The backends' device time per step, folded into (op, phase) rows per training step, slowest
// first; the host's transfers are the row ("transfers", "host"). nullopt if a backend cannot time.
std::optional<std::vector<ProfileRow>> profile_rows(Session& session, const std::vector<size_t>& used, int32_t steps) {
  const TrainingGraph& g = session.graph();
  std::map<std::pair<std::string, std::string>, ProfileRow> rows;
  for (size_t b : used) {
    const std::optional<std::vector<cltrain_kernel_profile>> profile = session.backend(b).profile();
    if (!profile) return std::nullopt;
    for (const cltrain_kernel_profile& p : *profile) {
      const bool host = p.step < 0 || static_cast<size_t>(p.step) >= g.steps.size();
      const cltrain_step_desc* st = host ? nullptr : &g.steps[static_cast<size_t>(p.step)];
      const std::string op = host ? "transfers" : cltrain_op_name(st->op);
      const std::string phase = host ? "host" : phase_word(st->phase);
      ProfileRow& r = rows[{op, phase}];
      r.op = op;
      r.phase = phase;
      r.calls += static_cast<double>(p.calls) / steps;
      r.ms += p.ms / steps;
      if (st) r.flops += static_cast<double>(flops_of_step(*st, g.tensors));
    }
  }
  std::vector<ProfileRow> out;
  double total = 0;
  for (auto& [key, r] : rows) {
    total += r.ms;
    out.push_back(r);
  }
  for (ProfileRow& r : out) r.share = total > 0 ? r.ms / total : 0.0;
  std::sort(out.begin(), out.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.ms > b.ms; });
  return out;
}

// ms_per_step: the mean wall time of the measured steps (the rows are means too).
void print_profile(const std::vector<ProfileRow>& rows, double ms_per_step) {
  double calls = 0, ms = 0, flops = 0;
  std::printf("profile (device time per step, by op and phase):\n");
  std::printf("  %-34s %10s %10s %7s %9s\n", "op phase", "calls", "ms", "share", "GFLOP/s");
  for (const ProfileRow& r : rows) {
    std::printf("  %-34s %10.1f %10.3f %6.1f%% %9.2f\n", (r.op + " " + r.phase).c_str(), r.calls, r.ms, 100.0 * r.share,
                r.gflops());
    calls += r.calls;
    ms += r.ms;
    flops += r.flops;
  }
  std::printf("  %-34s %10.1f %10.3f %6.1f%% %9.2f\n", "total", calls, ms, ms > 0 ? 100.0 : 0.0,
              ms > 0 ? flops / (ms * 1e6) : 0.0);
  std::printf("device busy %.3f ms of the mean %.3f ms step (%.1f%%)\n", ms, ms_per_step,
              ms_per_step > 0 ? 100.0 * ms / ms_per_step : 0.0);
}

}  // namespace

int run_bench(const Options& o) {
  check_output_paths(o);
  const PreparedSession p = load_and_prepare(o);
  Session& session = p.session();
  // One fixed batch: inputs uniform in [0, 1) (token ids uniform over the table's rows), one-hot
  // expected outputs of random classes.
  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  const uint64_t b = static_cast<uint64_t>(p.batch);
  std::vector<float> input(b * p.input_size), expected(b * p.output_size, 0.0f);
  for (float& v : input) {
    if (!p.int32_input) {
      v = uniform(rng);
      continue;
    }
    const int32_t id = static_cast<int32_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(p.id_rows, 1)));
    std::memcpy(&v, &id, 4);  // the ids' bits, as --load_input:raw reads them
  }
  for (uint64_t i = 0; i < b; ++i) expected[i * p.output_size + rng() % p.output_size] = 1.0f;

  std::printf("bench %s: batch %d, %s, %s, backends %s\n", o.model.c_str(), p.batch,
              p.settings.optimizer == CLTRAIN_OPTIMIZER_SGD ? "sgd" : "adam",
              p.settings.loss == CLTRAIN_LOSS_MEAN_SQUARED_ERROR ? "mean squared error" : "categorical crossentropy",
              p.backend_names.c_str());
  std::printf("device: %s\n", p.device_names.c_str());
  std::printf("MODEL_LOAD takes %.4f ms, PREPARE takes %.4f ms\n", p.ms_load, p.ms_prepare);
  if (const std::string line = memory_budget_line(session); !line.empty()) std::printf("%s\n", line.c_str());
  const std::vector<size_t> used = backends_used(session);
  bool profiling = o.profile;
  for (size_t i = 0; profiling && i < used.size(); ++i)
    if (!session.backend(used[i]).set_profiling(true)) {
      std::printf("profile: n/a (backend %s cannot time its steps)\n", session.backend_name(used[i]).c_str());
      profiling = false;
    }
  nlohmann::json steps = nlohmann::json::array();
  std::vector<double> times;
  std::optional<cltrain_run_stats> before;  // prepare and the warm-up steps: the programs a model needs
  for (int32_t s = 0; s < o.warmup + o.steps; ++s) {
    if (s == o.warmup) {  // count the measured steps only
      before = total_stats(session, used);
      for (size_t u : used) session.backend(u).reset_stats();
    }
    const auto t0 = std::chrono::steady_clock::now();
    const float loss = session.train_step(input.data(), expected.data(), nullptr);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const bool warm = s >= o.warmup;
    std::printf("%s %d - loss: %.6f - %.3f ms\n", warm ? "step" : "warm-up step", warm ? s - o.warmup + 1 : s + 1, loss,
                ms);
    std::fflush(stdout);
    steps.push_back({{"step", s + 1}, {"warmup", !warm}, {"loss", loss}, {"ms", ms}});
    if (warm) times.push_back(ms);
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median =
      sorted.size() % 2 ? sorted[sorted.size() / 2] : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  double mean = 0;
  for (double t : times) mean += t / static_cast<double>(times.size());
  std::printf("median: %.3f ms/step over %zu steps (mean %.3f)\n", median, times.size(), mean);

  // Per measured step: FLOPs of the whole training step (forward, loss, backward, updates) by
  // the convention of flops.h, and what the backends counted.
  const TrainingGraph& g = session.graph();
  const double flops = static_cast<double>(flops_of_steps(g.steps, g.tensors, 0, g.steps.size()));
  const double gflops = median > 0 ? flops / (median * 1e6) : 0.0;
  const double n = static_cast<double>(o.steps);
  const std::optional<cltrain_run_stats> st = total_stats(session, used);
  std::printf("per step: %.4f GFLOP, %.2f GFLOP/s", flops * 1e-9, gflops);
  if (st)
    std::printf(", %.1f launches, %.0f bytes host<->device (%.0f to, %.0f from), %.2f blocking waits\n",
                static_cast<double>(st->launches) / n,
                static_cast<double>(st->bytes_to_device + st->bytes_from_device) / n,
                static_cast<double>(st->bytes_to_device) / n, static_cast<double>(st->bytes_from_device) / n,
                static_cast<double>(st->blocking_waits) / n);
  else
    std::printf(", launches n/a, bytes host<->device n/a, blocking waits n/a\n");
  if (before)
    std::printf("programs: %llu built or loaded from the cache by prepare and the warm-up steps\n",
                static_cast<unsigned long long>(before->program_builds));
  if (st && (st->buffer_allocations || st->program_builds))
    std::printf("note: %llu device buffers created and %llu programs built during the measured steps\n",
                static_cast<unsigned long long>(st->buffer_allocations),
                static_cast<unsigned long long>(st->program_builds));
  std::optional<std::vector<ProfileRow>> rows;
  if (profiling) {
    rows = profile_rows(session, used, o.steps);
    if (rows)
      print_profile(*rows, mean);
    else
      std::printf("profile: n/a\n");
  }

  if (!o.report.empty()) {
    nlohmann::json j;
    j["model"] = o.model;
    j["batch_size"] = p.batch;
    j["backends"] = p.backend_names;
    j["device"] = p.device_names;
    j["ms_per_step"] = median;
    j["flops_per_step"] = flops;
    j["gflops"] = gflops;
    const auto per_step = [&](uint64_t v) {
      return st ? nlohmann::json(static_cast<double>(v) / n) : nlohmann::json();
    };
    j["launches_per_step"] = per_step(st ? st->launches : 0);
    j["transfer_bytes_per_step"] = per_step(st ? st->bytes_to_device + st->bytes_from_device : 0);
    j["bytes_to_device_per_step"] = per_step(st ? st->bytes_to_device : 0);
    j["bytes_from_device_per_step"] = per_step(st ? st->bytes_from_device : 0);
    j["waits_per_step"] = per_step(st ? st->blocking_waits : 0);
    j["buffer_allocations"] = st ? nlohmann::json(st->buffer_allocations) : nlohmann::json();  // measured steps
    j["program_builds"] = st ? nlohmann::json(st->program_builds) : nlohmann::json();
    // Before the measured steps (prepare, warm-up): the distinct programs the model needs.
    j["programs_before_measured"] = before ? nlohmann::json(before->program_builds) : nlohmann::json();
    j["ms_per_step_mean"] = mean;
    nlohmann::json kernels = nlohmann::json::array();
    double device_ms = 0;
    if (rows)
      for (const ProfileRow& r : *rows) {
        device_ms += r.ms;
        kernels.push_back({{"op", r.op},
                           {"phase", r.phase},
                           {"calls", r.calls},
                           {"ms", r.ms},
                           {"share", r.share},
                           {"gflops", r.gflops()}});
      }
    j["kernels"] = kernels;
    j["device_ms_per_step"] = rows ? nlohmann::json(device_ms) : nlohmann::json();  // sum of the kernels' ms
    j["steps"] = steps;
    j["timings_ms"] = {{"model_load", p.ms_load}, {"prepare", p.ms_prepare}};
    j["memory"] = memory_json(*p.api);
    j["rewrites"] = rewrite_lines(*p.api);
    if (const BudgetOutcome& bo = session.budget(); bo.budget > 0)
      j["memory_budget"] = {{"bytes", bo.budget},
                            {"unbudgeted_pool", bo.unbudgeted_pool},
                            {"recomputed_steps", bo.recomputed},
                            {"extra_flops", bo.extra_flops}};
    j["placement"] = placement_json(*p.api);
    save_text_atomic(o.report, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace cltrain
