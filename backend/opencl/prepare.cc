// prepare(): checks every assigned step, gives each the scratch it can take without raising the
// pool's peak, plans the pool and has each op family prepare its step.
#include "prepare.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "memory_plan.h"
#include "program/disk_cache.h"

namespace cltrain::ocl {

// Empty if the backend can run the step, else why not.
std::string why_unsupported(const Backend* b, const StepView& s) {
  const OpFamily* family = find_op_family(s.step.op);
  if (!family || !family->check || !family->prepare)
    return std::string("op ") + cltrain_op_name(s.step.op) + " is not implemented on OpenCL";
  if (b && b->filter.blocks(s.step.op)) return "filtered out by CLTRAIN_OPENCL_OP_FILTER";
  if (s.step.num_inputs < 0 || s.step.num_inputs > CLTRAIN_MAX_STEP_IO || s.step.num_outputs < 0 ||
      s.step.num_outputs > CLTRAIN_MAX_STEP_IO)
    return "has a bad number of inputs or outputs";
  for (int i = 0; i < s.step.num_inputs + s.step.num_outputs; ++i) {
    const int32_t id = i < s.step.num_inputs ? s.step.inputs[i] : s.step.outputs[i - s.step.num_inputs];
    if (id < -1) return "refers to tensor " + std::to_string(id);
    const bool output = i >= s.step.num_inputs;
    if (id < 0) continue;
    const int32_t want = cltrain_slot_dtype(&s.step, output, output ? i - s.step.num_inputs : i);
    const int32_t dtype = s.tensor(id).dtype;
    if (dtype == CLTRAIN_FLOAT16 && want == CLTRAIN_FLOAT32 && !family->half_storage)
      return "tensor " + std::to_string(id) + " is float16, which the op's kernels do not store";
    if (dtype != want && !(dtype == CLTRAIN_FLOAT16 && want == CLTRAIN_FLOAT32))
      return "tensor " + std::to_string(id) + " is not " + dtype_name(want);
  }
  return family->check(s);
}

namespace {

// Every tensor a step touches must be planned here and live at the step.
void check_step_tensors(const Pool& pool, const StepView& s) {
  for (int i = 0; i < s.step.num_inputs + s.step.num_outputs; ++i) {
    const int32_t id = i < s.step.num_inputs ? s.step.inputs[i] : s.step.outputs[i - s.step.num_inputs];
    if (id < 0) continue;
    if (id >= pool.num_host_tensors)
      fail(CLTRAIN_INVALID, s.what() + " refers to tensor " + std::to_string(id) + " outside the table");
    const cltrain_tensor_desc& t = pool.tensors[id];
    if (pool.offsets[id] < 0 || (!t.persistent && (s.index < t.first_step || s.index > t.last_step)))
      fail(CLTRAIN_INVALID, s.what() + " uses " + pool.label(id) + " outside its lifetime [" +
                                std::to_string(t.first_step) + ", " + std::to_string(t.last_step) + "]");
  }
}

// What prepare took from the cache directory: one line with CLTRAIN_OPENCL_TRACE; without it,
// one note when corrupt or stale entries had to be rebuilt (nothing when all is well).
void report_caches(const Backend& b, size_t plan_pairs) {
  const int rejected = b.plans.rejected + b.programs->entries_rejected();
  if (b.trace)
    std::fprintf(stderr,
                 "cltrain opencl: prepare: plan %s; programs: %d built, %d loaded from the cache, %d built from "
                 "source by choice, %d builds retried; op plans: %d asked for %zu (step, budget) pairs\n",
                 b.plans.source.c_str(), b.programs->programs_built(), b.programs->programs_loaded(),
                 b.programs->programs_from_source(), b.programs->builds_retried(), b.plan_asks, plan_pairs);
  else if (rejected > 0)
    std::fprintf(stderr, "cltrain: note: %d corrupt or stale %s in the OpenCL cache %s; rebuilt\n", rejected,
                 rejected == 1 ? "entry" : "entries", b.cache_dir.c_str());
}

// The cache directory stays within cache_max_bytes(): the least recently used entries of other
// graphs go first, this prepare's never.
void trim_cache_dir(const Backend& b, std::filesystem::file_time_type prepare_started) {
  if (b.cache_dir.empty()) return;
  std::string error;
  const uint64_t max_bytes = cache_max_bytes(&error);
  if (!error.empty())
    std::fprintf(stderr, "cltrain: warning: %s; keeping the cache under %llu bytes\n", error.c_str(),
                 static_cast<unsigned long long>(max_bytes));
  const int deleted = trim_cache(b.cache_dir, max_bytes, prepare_started);
  if (b.trace && deleted > 0)
    std::fprintf(stderr, "cltrain opencl: cache: deleted the %d least recently used entries (bound %llu bytes)\n",
                 deleted, static_cast<unsigned long long>(max_bytes));
}

// The op families' plans of one prepare: each family is asked once per step and budget it is
// tried at (and per lean choice), and its answer serves every later ask and the step's prepare().
class StepPlans {
 public:
  StepPlans(Backend& b, const HostGraph& g) : b_(b), g_(g) {}
  const StepPlan& at(int32_t step, uint64_t budget) {
    const auto key = std::make_tuple(step, budget, b_.lean);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      const StepView s{b_.steps[static_cast<size_t>(step)], g_.tensors.data(), step};
      it = plans_.emplace(key, find_op_family(s.step.op)->plan(OpContext(b_, s, budget))).first;
      ++b_.plan_asks;
    }
    return it->second;
  }
  size_t size() const { return plans_.size(); }

 private:
  Backend& b_;
  const HostGraph& g_;
  std::map<std::tuple<int32_t, uint64_t, bool>, StepPlan> plans_;
};

}  // namespace

void prepare_backend(Backend& b, const cltrain_graph_desc* host_graph, cltrain_memory_report* report, bool dry) {
  const auto prepare_started = CacheClock::now();
  if (b.prepared || !b.steps.empty()) fail(CLTRAIN_INVALID, "prepare: called more than once");
  struct Unplanned {  // a dry plan, done or failed, leaves the backend unprepared
    Backend& b;
    bool dry;
    ~Unplanned() {
      if (dry) b.steps.clear(), b.assigned.clear(), b.runs.clear();
    }
  } unplanned{b, dry};
  HostGraph g;
  if (const std::string e = read_graph(host_graph, &g); !e.empty()) fail(CLTRAIN_INVALID, "prepare: " + e);
  const HostGraph* graph = &g;
  b.steps = g.steps;
  b.assigned = g.assigned;
  b.runs.assign(g.steps.size(), StepRun{});

  // Check every assigned step and collect the scratch tensors it needs at the floor budget (its
  // least scratch), then plan them all: the pool's peak is the host's tensors' with the least
  // scratch, where few large scratch tensors leave the packing little to fit around. Then each
  // step's scratch grows into the largest range the plan leaves free at its step, up to the cap:
  // the pool does not grow, the kernels get bigger panels (fewer launches).
  // With a memory budget, the lean kernels (more launches for less scratch) only where the plan
  // without them is over the graph's pool_limit.
  std::vector<uint64_t> budgets(static_cast<size_t>(graph->num_steps()), b.scratch_floor);
  std::vector<ScratchRequest> scratch;
  b.lean = false;
  b.plan_asks = 0;
  StepPlans plans(b, *graph);
  b.plans.dir = b.cache_dir;
  b.plans.device_key = b.device_key;
  b.plans.trace = b.trace;
  const PoolDevice device{b.device, b.context, b.queue.handle()};
  for (int32_t i = 0; i < graph->num_steps(); ++i) {
    if (!b.assigned[i]) continue;
    const StepView s{b.steps[i], graph->tensors.data(), i};
    const cltrain_step_desc& st = s.step;
    const bool counts_ok = st.num_inputs >= 0 && st.num_inputs <= CLTRAIN_MAX_STEP_IO && st.num_outputs >= 0 &&
                           st.num_outputs <= CLTRAIN_MAX_STEP_IO;
    for (int k = 0; counts_ok && k < st.num_inputs + st.num_outputs; ++k) {
      const int32_t id = k < st.num_inputs ? st.inputs[k] : st.outputs[k - st.num_inputs];
      if (id >= graph->num_tensors())
        fail(CLTRAIN_INVALID, s.what() + " refers to tensor " + std::to_string(id) + " outside the table");
    }
    if (const std::string why = why_unsupported(&b, s); !why.empty())
      fail(CLTRAIN_INVALID, s.what() + " cannot run on OpenCL: " + why);
    const OpFamily* family = find_op_family(s.step.op);
    if (!family->plan) continue;
    const std::vector<uint64_t>& sizes = plans.at(i, b.scratch_floor).scratch;
    for (size_t k = 0; k < sizes.size(); ++k)
      scratch.push_back({i, sizes[k], s.what() + " scratch " + std::to_string(k)});
  }
  if (b.memory_budget > 0 && g.pool_limit > 0) {
    cltrain_memory_report plain{};
    plain.struct_size = sizeof plain;
    plan_pool(b.pool, device, b.plans, *graph, scratch, RegrowScratch{}, &plain, true);
    if (plain.pool_bytes > g.pool_limit) {
      b.lean = true;
      scratch.clear();
      for (int32_t i = 0; i < graph->num_steps(); ++i) {
        const OpFamily* family = b.assigned[i] ? find_op_family(b.steps[i].op) : nullptr;
        if (!family || !family->plan) continue;
        const StepView s{b.steps[i], graph->tensors.data(), i};
        const std::vector<uint64_t>& sizes = plans.at(i, b.scratch_floor).scratch;
        for (size_t k = 0; k < sizes.size(); ++k)
          scratch.push_back({i, sizes[k], s.what() + " scratch " + std::to_string(k)});
      }
    }
  }
  // The largest budget (from the cap down by quarters, not below the floor) whose scratch fits
  // the free range; {} keeps the least scratch as planned.
  const RegrowScratch regrow = [&](int32_t step, uint64_t free_bytes) -> std::vector<uint64_t> {
    for (uint64_t budget = std::min(b.scratch_cap, free_bytes); budget > b.scratch_floor; budget = budget * 3 / 4) {
      const std::vector<uint64_t>& sizes = plans.at(step, budget).scratch;
      uint64_t total = 0;
      for (uint64_t bytes : sizes)
        total += (std::max<uint64_t>(bytes, 1) + b.pool.alignment - 1) / b.pool.alignment * b.pool.alignment;
      if (total <= free_bytes && sizes.size() <= b.pool.step_scratch[static_cast<size_t>(step)].size()) {
        budgets[static_cast<size_t>(step)] = budget;
        return sizes;
      }
    }
    return {};
  };
  plan_pool(b.pool, device, b.plans, *graph, scratch,
            b.scratch_floor < b.scratch_cap && !dry ? regrow : RegrowScratch{}, report, dry);
  if (dry) return;

  for (int32_t i = 0; i < graph->num_steps(); ++i) {
    if (!b.assigned[i]) continue;
    const StepView s{b.steps[i], b.pool.tensors.data(), i};
    check_step_tensors(b.pool, s);
    const OpFamily* family = find_op_family(s.step.op);
    const uint64_t budget = budgets[static_cast<size_t>(i)];
    b.runs[i] = family->prepare(OpContext(b, s, budget, family->plan ? &plans.at(i, budget) : nullptr));
  }
  CLT_CALL(clFinish, (b.queue.handle()), "end of prepare");
  report_caches(b, plans.size());
  trim_cache_dir(b, prepare_started);
  b.prepared = true;
}

}  // namespace cltrain::ocl
