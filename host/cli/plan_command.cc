#include "plan_command.h"

#include "atomic_file.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "memory_plan.h"
#include "options.h"
#include "session_setup.h"

namespace cltrain {
namespace {

const char* kRoleNames[CLTRAIN_ROLE_COUNT] = {"non-const",           "trainable",  "back-prop",  "gradient",
                                              "optimizer variables", "disposable", "layer-scope"};
const char* kRoleColors[CLTRAIN_ROLE_COUNT] = {"#4e79a7", "#59a14f", "#e15759", "#f28e2b",
                                               "#b07aa1", "#edc948", "#9c755f"};

struct PlannedTensor {
  std::string backend, name;
  int32_t role;
  uint64_t bytes;
  int64_t offset;
  int32_t first, last;
  std::string shares;  // the tensor whose bytes it shares (in place), or empty
  bool half = false;   // stored as float16 (--storage fp16)
};

std::vector<PlannedTensor> planned_tensors(Session& s) {
  std::vector<PlannedTensor> out;
  const auto& per_backend = s.backend_tensors();
  for (size_t b = 0; b < per_backend.size(); ++b) {
    const auto& steps = s.step_backend();
    if (std::find(steps.begin(), steps.end(), static_cast<int32_t>(b)) == steps.end()) continue;  // unused
    const auto offsets = s.plan_offsets(b);
    for (size_t t = 0; t < per_backend[b].size(); ++t) {
      const auto& d = per_backend[b][t];
      if (d.first_step < 0) continue;
      out.push_back({s.backend_name(b), d.name, d.role, tensor_bytes(d), offsets.empty() ? -1 : offsets[t],
                     d.first_step, d.last_step,
                     d.alias > 0 ? per_backend[b][static_cast<size_t>(d.alias - 1)].name : "",
                     d.dtype == CLTRAIN_FLOAT16});
    }
    std::map<int32_t, int> per_step;  // the backend's kernel scratch, named by step
    for (const cltrain_private_tensor& p : s.plan_private(b))
      out.push_back({s.backend_name(b),
                     "scratch " + std::to_string(per_step[p.step]++) + " of step " + std::to_string(p.step), p.role,
                     p.bytes, static_cast<int64_t>(p.offset), p.step, p.step, ""});
  }
  return out;
}

std::string step_label(const Session& s, size_t i) {
  const auto& st = s.graph().steps[i];
  static const char* phases[] = {"forward", "backward", "update"};
  std::string l = std::string(cltrain_op_name(st.op)) + " " + phases[st.phase];
  if (st.model_op >= 0) l += " (op " + std::to_string(st.model_op) + ")";
  const auto& r = s.graph().recomputes;
  if (i < r.size() && r[i] >= 0) l += ", recomputed (step " + std::to_string(r[i]) + " again)";
  return l;
}

void write_json(const PreparedSession& p, const std::vector<PlannedTensor>& tensors, const std::string& path) {
  Session& s = p.session();
  nlohmann::json j;
  j["steps"] = nlohmann::json::array();
  for (size_t i = 0; i < s.graph().steps.size(); ++i) {
    j["steps"].push_back({{"index", i},
                          {"step", step_label(s, i)},
                          {"backend", s.backend_name(static_cast<size_t>(s.step_backend()[i]))}});
    const auto& r = s.graph().recomputes;
    if (i < r.size() && r[i] >= 0) j["steps"].back()["recomputes"] = r[i];
  }
  j["tensors"] = nlohmann::json::array();
  for (const auto& t : tensors) {
    j["tensors"].push_back({{"backend", t.backend},
                            {"name", t.name},
                            {"role", kRoleNames[t.role]},
                            {"bytes", t.bytes},
                            {"offset", t.offset},
                            {"first_step", t.first},
                            {"last_step", t.last}});
    if (!t.shares.empty()) j["tensors"].back()["shares"] = t.shares;
    if (t.half) j["tensors"].back()["storage"] = "float16";
  }
  j["rewrites"] = rewrite_lines(*p.api);
  j["memory"] = memory_json(*p.api);
  const BudgetOutcome& b = s.budget();
  if (b.budget > 0)
    j["budget"] = {{"bytes", b.budget},
                   {"unbudgeted_pool", b.unbudgeted_pool},
                   {"recomputed_steps", b.recomputed},
                   {"extra_flops", b.extra_flops}};
  save_text_atomic(path, j.dump(1) + "\n");
}

// One panel per backend: x = step, y = offset in the pool, a rectangle per tensor.
void write_svg(Session& s, const std::vector<PlannedTensor>& tensors, const std::string& path) {
  const double width = 1000, panel_h = 420, left = 70, top = 30;
  const int32_t steps = static_cast<int32_t>(s.graph().steps.size());
  std::ostringstream body;
  double y0 = top;
  for (const auto& m : s.memory()) {
    const double pool = std::max<double>(1, static_cast<double>(m.report.pool_bytes));
    body << "<text x='" << left << "' y='" << y0 - 8 << "' font-size='14'>" << m.backend << ": pool "
         << m.report.pool_bytes << " bytes, lower bound " << m.report.lower_bound << " bytes</text>\n";
    body << "<rect x='" << left << "' y='" << y0 << "' width='" << width << "' height='" << panel_h
         << "' fill='none' stroke='#888'/>\n";
    const auto& recomputes = s.graph().recomputes;  // recomputed steps: a grey column marked R
    for (size_t i = 0; i < recomputes.size(); ++i)
      if (recomputes[i] >= 0)
        body << "<rect x='" << left + width * static_cast<double>(i) / steps << "' y='" << y0 << "' width='"
             << width / steps << "' height='" << panel_h << "' fill='#000' fill-opacity='0.08'><title>step " << i
             << ": " << step_label(s, i) << "</title></rect><text x='" << left + width * (i + 0.5) / steps << "' y='"
             << y0 + 12 << "' font-size='10' text-anchor='middle'>R</text>\n";
    for (const auto& t : tensors) {
      if (t.backend != m.backend || t.offset < 0) continue;
      const double x = left + width * t.first / steps, w = width * (t.last - t.first + 1) / steps;
      const double y = y0 + panel_h * (1.0 - (static_cast<double>(t.offset) + static_cast<double>(t.bytes)) / pool);
      const double h = std::max(0.5, panel_h * static_cast<double>(t.bytes) / pool);
      body << "<rect x='" << x << "' y='" << y << "' width='" << w << "' height='" << h << "' fill='"
           << kRoleColors[t.role] << "' fill-opacity='0.8' stroke='#222' stroke-width='0.3'><title>" << t.name << " ("
           << kRoleNames[t.role] << ", " << t.bytes << " bytes, steps " << t.first << "-" << t.last
           << ")</title></rect>\n";
    }
    body << "<text x='" << left + width / 2 << "' y='" << y0 + panel_h + 18
         << "' font-size='12' text-anchor='middle'>step (" << steps
         << " steps: forward, loss, backward with updates)</text>\n";
    body << "<text x='20' y='" << y0 + panel_h / 2 << "' font-size='12' transform='rotate(-90 20 " << y0 + panel_h / 2
         << ")' text-anchor='middle'>offset in pool</text>\n";
    y0 += panel_h + 60;
  }
  for (int r = 0; r < CLTRAIN_ROLE_COUNT; ++r) {
    body << "<rect x='" << left + r * 140 << "' y='" << y0 << "' width='12' height='12' fill='" << kRoleColors[r]
         << "'/><text x='" << left + r * 140 + 16 << "' y='" << y0 + 11 << "' font-size='12'>" << kRoleNames[r]
         << "</text>\n";
  }
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << left + width + 20 << "' height='" << y0 + 30
      << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n"
      << body.str() << "</svg>\n";
  save_text_atomic(path, svg.str());
}

}  // namespace

std::string memory_budget_line(const Session& s) {
  const BudgetOutcome& b = s.budget();
  if (b.budget == 0) return {};
  char line[256];
  std::snprintf(line, sizeof line,
                "memory budget: %llu bytes; without it %llu; recomputed %zu forward step%s, %.4f GFLOP more per step",
                static_cast<unsigned long long>(b.budget), static_cast<unsigned long long>(b.unbudgeted_pool),
                b.recomputed.size(), b.recomputed.size() == 1 ? "" : "s", static_cast<double>(b.extra_flops) * 1e-9);
  return line;
}

int run_plan(const std::vector<std::string>& raw) {
  std::string json_path, svg_path;
  std::vector<std::string> args;
  for (size_t i = 0; i < raw.size(); ++i) {
    if ((raw[i] == "--plan-json" || raw[i] == "--plan-svg") && i + 1 < raw.size()) {
      (raw[i] == "--plan-json" ? json_path : svg_path) = raw[i + 1];
      ++i;
    } else {
      args.push_back(raw[i]);
    }
  }
  const Options o = parse_bench_options(args);
  check_output_paths(o);
  for (const std::string* out : {&json_path, &svg_path})
    if (!out->empty())
      if (const std::string why = why_not_writable(*out); !why.empty())
        throw UsageError(*out + " cannot be written: " + why);
  const PreparedSession p = load_and_prepare(o, true);  // no kernels built: seconds on a cold cache
  Session& s = p.session();
  const std::vector<std::string> rewrites = rewrite_lines(*p.api);
  for (const std::string& line : rewrites) std::printf("rewrite %s\n", line.c_str());
  if (rewrites.empty()) std::printf("rewrite: no pass changed the model\n");
  for (const auto& m : s.memory()) {
    std::printf("%s:\n", m.backend.c_str());
    for (int r = 0; r < CLTRAIN_ROLE_COUNT; ++r)
      std::printf("[      ALLOC     ] allocation capacity: %llu # %s\n",
                  static_cast<unsigned long long>(m.report.role_peak[r]), kRoleNames[r]);
    std::printf(
        "planned pool: %llu bytes; lower bound: %llu bytes (%.2f%% above)\n",
        static_cast<unsigned long long>(m.report.pool_bytes), static_cast<unsigned long long>(m.report.lower_bound),
        m.report.lower_bound
            ? 100.0 * (static_cast<double>(m.report.pool_bytes) / static_cast<double>(m.report.lower_bound) - 1.0)
            : 0.0);
  }
  if (const std::string line = memory_budget_line(s); !line.empty()) std::printf("%s\n", line.c_str());
  if (!json_path.empty() || !svg_path.empty()) {
    const auto tensors = planned_tensors(s);
    if (!json_path.empty()) write_json(p, tensors, json_path);
    if (!svg_path.empty()) write_svg(s, tensors, svg_path);
  }
  return 0;
}

}  // namespace cltrain
