// The planner (planner.h): placement, lifetimes, storage, aliases, the memory budget and the
// schedules, decided once before training.
#include "planner.h"

#include <algorithm>
#include <sstream>
#include <string>

#include "flops.h"
#include "graph/activations.h"
#include "memory_plan.h"
#include "ops/op_descriptor.h"
#include "recompute.h"

namespace cltrain {
namespace {

// Steps that read their outputs as well as write them.
bool reads_outputs(const cltrain_step_desc& s) {
  return s.op == CLTRAIN_OP_ACCUMULATE || s.op == CLTRAIN_OP_ACCUMULATE_BOX || s.op == CLTRAIN_OP_CHECK_FINITE ||
         s.phase == CLTRAIN_PHASE_UPDATE;
}

}  // namespace

void Planner::place() {
  const auto& steps = graph_.steps;
  const cltrain_graph_desc whole = graph_desc(graph_.tensors, steps, nullptr);
  plan_.step_backend.assign(steps.size(), -1);
  for (size_t s = 0; s < steps.size(); ++s) {
    const cltrain_step_desc& step = steps[s];
    const int32_t owner = graph_.owner_step[s];
    const int kind = find_op(step.op)->kind;
    if (kind == CLTRAIN_KIND_MODEL && step.phase == CLTRAIN_PHASE_BACKWARD) {
      // A model op's backward runs where its forward runs.
      for (size_t f = 0; f < static_cast<size_t>(graph_.num_forward); ++f)
        if (steps[f].model_op == step.model_op) plan_.step_backend[s] = plan_.step_backend[f];
      continue;
    }
    // An accumulation runs where the step it follows runs, the loss's backward where its forward does.
    if (owner >= 0 && (kind == CLTRAIN_KIND_GRAPH || kind == CLTRAIN_KIND_LOSS)) {
      plan_.step_backend[s] = plan_.step_backend[static_cast<size_t>(owner)];
      continue;
    }
    // Forward steps and the loss go to the first backend that takes them for training; an
    // update prefers the backend of the op that owns the weight.
    if (step.phase == CLTRAIN_PHASE_UPDATE && owner >= 0) {
      const int32_t b = plan_.step_backend[static_cast<size_t>(owner)];
      if (backends_[static_cast<size_t>(b)]->supports(whole, static_cast<int32_t>(s), true)) {
        plan_.step_backend[s] = b;
        continue;
      }
    }
    for (size_t b = 0; b < backends_.size(); ++b) {
      if (backends_[b]->supports(whole, static_cast<int32_t>(s), true)) {
        plan_.step_backend[s] = static_cast<int32_t>(b);
        break;
      }
    }
    if (plan_.step_backend[s] < 0) {
      std::ostringstream m;
      m << "no backend can train " << find_op(step.op)->name;
      if (step.model_op >= 0) m << " (operator " << step.model_op << ")";
      throw BackendError(m.str());
    }
  }
}

void Planner::compute_lifetimes() {
  const size_t nb = backends_.size();
  const int32_t nsteps = static_cast<int32_t>(graph_.steps.size());
  const size_t nt = graph_.tensors.size();
  std::vector<std::vector<int32_t>> first(nb, std::vector<int32_t>(nt, -1)), last = first;
  auto access = [&](int32_t b, int32_t t, int32_t s) {
    auto& f = first[static_cast<size_t>(b)][static_cast<size_t>(t)];
    auto& l = last[static_cast<size_t>(b)][static_cast<size_t>(t)];
    f = f < 0 ? s : std::min(f, s);
    l = std::max(l, s);
  };
  // Direct accesses by steps, which also give the holders of persistent tensors.
  for (int32_t s = 0; s < nsteps; ++s) {
    const auto& st = graph_.steps[static_cast<size_t>(s)];
    for (int32_t i = 0; i < st.num_inputs; ++i)
      if (st.inputs[i] >= 0) access(plan_.step_backend[static_cast<size_t>(s)], st.inputs[i], s);
    for (int32_t i = 0; i < st.num_outputs; ++i)
      if (st.outputs[i] >= 0) access(plan_.step_backend[static_cast<size_t>(s)], st.outputs[i], s);
  }
  plan_.holders.assign(nt, 0);
  for (size_t t = 0; t < nt; ++t)
    if (graph_.tensors[t].persistent)
      for (size_t b = 0; b < nb; ++b)
        if (first[b][t] >= 0) plan_.holders[t] |= 1u << b;

  // The schedules of the ways the session runs steps: training, evaluation and prediction. Their
  // copies and the host's transfers are accesses too (the host reads the loss and the prediction
  // after the range: they live to the end), so that the lifetimes and the runs cannot disagree.
  plan_.schedules[static_cast<int>(RunMode::kTrain)] = schedule(nsteps, true, true);
  plan_.schedules[static_cast<int>(RunMode::kEvaluate)] = schedule(graph_.loss_step + 1, true, true);
  plan_.schedules[static_cast<int>(RunMode::kPredict)] = schedule(graph_.num_forward, false, false);
  for (const Schedule& sch : plan_.schedules)
    for (const ScheduleAction& a : sch.actions) {
      if (a.kind == ScheduleAction::kWrite) access(a.to, a.tensor, 0);
      if (a.kind == ScheduleAction::kCopy) access(a.from, a.tensor, a.step), access(a.to, a.tensor, a.step);
      if (a.kind == ScheduleAction::kRead) access(a.from, a.tensor, nsteps - 1);
      if (a.kind == ScheduleAction::kGate) access(a.from, a.tensor, a.step);
    }

  plan_.tensors.assign(nb, graph_.tensors);
  for (size_t b = 0; b < nb; ++b)
    for (size_t t = 0; t < nt; ++t) {
      auto& d = plan_.tensors[b][t];
      if (first[b][t] < 0) {
        d.first_step = d.last_step = -1;
      } else if (d.persistent) {
        d.first_step = 0;
        d.last_step = nsteps - 1;
      } else {
        d.first_step = first[b][t];
        d.last_step = last[b][t];
      }
    }
}

Schedule Planner::schedule(int32_t end, bool with_expected, bool read_loss) const {
  Schedule out;
  std::vector<ScheduleAction>& acts = out.actions;
  const std::vector<int32_t>& where = plan_.step_backend;
  // Per tensor, the backends holding its current value (a bit each).
  std::vector<uint32_t> valid(graph_.tensors.size(), 0);
  for (size_t t = 0; t < valid.size(); ++t)
    if (graph_.tensors[t].persistent) valid[t] = plan_.holders[t];
  // The host writes its tensors into the backend of their first reader, before any step.
  auto host_write = [&](int32_t t) {
    for (int32_t s = 0; s < end; ++s) {
      const auto& st = graph_.steps[static_cast<size_t>(s)];
      for (int32_t i = 0; i < st.num_inputs; ++i)
        if (st.inputs[i] == t) {
          ScheduleAction a;
          a.kind = ScheduleAction::kWrite, a.tensor = t, a.to = where[static_cast<size_t>(s)];
          acts.push_back(a);
          valid[static_cast<size_t>(t)] = 1u << a.to;
          return;
        }
    }
  };
  host_write(graph_.input);
  if (with_expected) host_write(graph_.expected);
  auto copy = [&](int32_t t, int32_t from, int32_t to, int32_t s) {
    ScheduleAction a;
    a.kind = ScheduleAction::kCopy, a.tensor = t, a.from = from, a.to = to, a.step = s;
    acts.push_back(a);
  };
  // The host reads the loss and the prediction after the last step, or where a gate comes: before
  // it (they are complete by then), so that the updates after the gate need no wait of the host.
  auto host_reads = [&] {
    for (int32_t t : {read_loss ? graph_.loss : -1, graph_.prediction}) {
      if (t < 0) continue;
      const int32_t from = lowest_bit(valid[static_cast<size_t>(t)]);
      if (from < 0)
        throw BackendError(std::string("internal: ") + graph_.name_of(t) + " is not computed by these steps");
      ScheduleAction a;
      a.kind = ScheduleAction::kRead, a.tensor = t, a.from = from;
      acts.push_back(a);
    }
  };
  bool gated = false;
  for (int32_t s = 0; s < end; ++s) {
    const auto& st = graph_.steps[static_cast<size_t>(s)];
    const int32_t b = where[static_cast<size_t>(s)];
    if (st.phase == CLTRAIN_PHASE_UPDATE && !gated && graph_.finite_flag >= 0) {
      gated = true;
      host_reads();
      ScheduleAction a;
      a.kind = ScheduleAction::kGate, a.tensor = graph_.finite_flag, a.step = s;
      a.from = lowest_bit(valid[static_cast<size_t>(a.tensor)]);
      if (a.from < 0) throw BackendError("internal: the finite flag is not computed before the updates");
      acts.push_back(a);
    }
    auto need = [&](int32_t t) {
      if (t < 0 || (valid[static_cast<size_t>(t)] & (1u << b))) return;
      const int32_t from = lowest_bit(valid[static_cast<size_t>(t)]);
      if (from < 0)
        throw BackendError(std::string("internal: tensor ") + graph_.name_of(t) + " is read before it is written");
      copy(t, from, b, s);
      valid[static_cast<size_t>(t)] |= 1u << b;
    };
    for (int32_t i = 0; i < st.num_inputs; ++i) need(st.inputs[i]);
    if (reads_outputs(st))
      for (int32_t i = 0; i < st.num_outputs; ++i) need(st.outputs[i]);
    // Consecutive steps on one backend, with no copy between them, are one run.
    if (acts.empty() || acts.back().kind != ScheduleAction::kRun || acts.back().to != b) {
      ScheduleAction a;
      a.kind = ScheduleAction::kRun, a.to = b;
      acts.push_back(a);
    }
    acts.back().steps.push_back(s);
    for (int32_t i = 0; i < st.num_outputs; ++i)
      if (st.outputs[i] >= 0) valid[static_cast<size_t>(st.outputs[i])] = 1u << b;
  }
  if (!gated) host_reads();
  // What the updates wrote goes to the other holders: the next run starts as this one did.
  for (size_t t = 0; t < valid.size(); ++t) {
    if (!graph_.tensors[t].persistent || valid[t] == plan_.holders[t]) continue;
    const int32_t from = lowest_bit(valid[t]);
    for (int32_t b = 0; b < 32; ++b)
      if ((plan_.holders[t] & ~valid[t]) & (1u << b)) copy(static_cast<int32_t>(t), from, b, end - 1);
  }
  return out;
}

Plan Planner::make(uint64_t memory_budget) {
  if (memory_budget > 0) fit_budget(memory_budget);
  place();
  compute_lifetimes();
  choose_storage();
  choose_aliases();
  plan_.pool_limits.assign(backends_.size(), 0);
  for (size_t b = 0; b < backends_.size(); ++b) plan_.pool_limits[b] = pool_limit(b);
  return std::move(plan_);
}

void Planner::choose_storage() {
  if (!half_storage_) return;
  // Per tensor: whether every step that touches it allows float16 storage.
  std::vector<uint8_t> ok(graph_.tensors.size(), 1);
  for (const cltrain_step_desc& st : graph_.steps) {
    const OpDescriptor* d = find_op(st.op);
    const Activation* act = find_activation(st.params.activation);
    const Activation* dx_act = find_activation(st.params.dx_activation);
    const bool allows = d && d->half_storage && (!act || act->half_storage) && (!dx_act || dx_act->half_storage);
    for (int32_t i = 0; i < st.num_inputs + st.num_outputs; ++i) {
      const int32_t t = i < st.num_inputs ? st.inputs[i] : st.outputs[i - st.num_inputs];
      if (t >= 0 && !allows) ok[static_cast<size_t>(t)] = 0;
    }
  }
  for (int32_t t : {graph_.input, graph_.expected, graph_.prediction, graph_.loss})  // the host's
    if (t >= 0) ok[static_cast<size_t>(t)] = 0;
  std::vector<int32_t> user(graph_.tensors.size(), -1);  // the one backend that has it, -1: not half
  for (size_t t = 0; t < graph_.tensors.size(); ++t) {
    const cltrain_tensor_desc& g = graph_.tensors[t];
    const bool role =
        g.role == CLTRAIN_ROLE_NON_CONST || g.role == CLTRAIN_ROLE_BACK_PROP || g.role == CLTRAIN_ROLE_DISPOSABLE;
    size_t users = 0, last = 0;
    for (size_t b = 0; b < plan_.tensors.size(); ++b)
      if (plan_.tensors[b][t].first_step >= 0) ++users, last = b;
    // One backend alone: a copy between backends moves the bytes as they are.
    if (ok[t] && role && !g.persistent && !g.data && g.dtype == CLTRAIN_FLOAT32 && users == 1)
      user[t] = static_cast<int32_t>(last);
  }
  // A RESHAPE copies bytes as they are: its input and output are both float16 or neither (a
  // float32 neighbour, such as the output of an op without float16 kernels, keeps both float32).
  for (bool changed = true; changed;) {
    changed = false;
    for (const cltrain_step_desc& st : graph_.steps) {
      if (st.op != CLTRAIN_OP_RESHAPE || st.num_inputs < 1 || st.num_outputs < 1) continue;
      const int32_t a = st.inputs[0], b = st.outputs[0];
      if (a < 0 || b < 0 || (user[static_cast<size_t>(a)] >= 0) == (user[static_cast<size_t>(b)] >= 0)) continue;
      user[static_cast<size_t>(a)] = user[static_cast<size_t>(b)] = -1;
      changed = true;
    }
  }
  for (size_t t = 0; t < graph_.tensors.size(); ++t)
    if (user[t] >= 0) plan_.tensors[static_cast<size_t>(user[t])][t].dtype = CLTRAIN_FLOAT16;
}

namespace {

// The output of a step that may share the bytes of an input, as its descriptor says.
InPlacePair in_place_pair(const cltrain_step_desc& s) {
  const OpDescriptor* d = find_op(s.op);
  return d && d->in_place ? d->in_place(s) : InPlacePair{};
}

}  // namespace

void Planner::choose_aliases() {
  for (size_t b = 0; b < plan_.tensors.size(); ++b) {
    auto& t = plan_.tensors[b];
    // Alias groups on this backend: each tensor's root, and each root's last step over its group.
    std::vector<int32_t> root(t.size());
    std::vector<int32_t> group_last(t.size());
    for (size_t i = 0; i < t.size(); ++i) root[i] = static_cast<int32_t>(i), group_last[i] = t[i].last_step;
    for (size_t s = 0; s < graph_.steps.size(); ++s) {
      if (plan_.step_backend[s] != static_cast<int32_t>(b)) continue;
      const cltrain_step_desc& st = graph_.steps[s];
      const InPlacePair p = in_place_pair(st);
      if (p.out < 0 || p.out >= st.num_outputs || p.in >= st.num_inputs) continue;
      const int32_t o = st.outputs[p.out], in = st.inputs[p.in];
      if (o < 0 || in < 0 || o == in) continue;
      const cltrain_tensor_desc &od = t[static_cast<size_t>(o)], &id = t[static_cast<size_t>(in)];
      const int32_t r = root[static_cast<size_t>(in)];
      const bool usable = od.first_step == static_cast<int32_t>(s) && id.first_step >= 0 && !od.persistent &&
                          !id.persistent && !od.data && !id.data && od.alias == 0 &&
                          tensor_bytes(od) == tensor_bytes(id) && od.dtype == id.dtype &&
                          (!p.dead || group_last[static_cast<size_t>(r)] == static_cast<int32_t>(s));
      if (!usable) continue;
      t[static_cast<size_t>(o)].alias = in + 1;
      root[static_cast<size_t>(o)] = r;
      group_last[static_cast<size_t>(r)] = std::max(group_last[static_cast<size_t>(r)], od.last_step);
    }
  }
}

uint64_t Planner::pool_limit(size_t b) const {
  if (plan_.budget.budget == 0) return 0;
  uint64_t others = 0;  // what the other backends' last plans take of the budget
  for (size_t o = 0; o < planned_pools_.size(); ++o) others += o == b ? 0 : planned_pools_[o];
  return plan_.budget.budget - std::min(plan_.budget.budget, others);
}

uint64_t Planner::dry_plan(std::vector<uint64_t>* scratch) {
  place();
  compute_lifetimes();
  choose_storage();
  choose_aliases();
  uint64_t total = 0;
  if (scratch) scratch->assign(graph_.steps.size(), 0);
  planned_pools_.resize(backends_.size(), 0);
  for (size_t b = 0; b < backends_.size(); ++b) {
    std::vector<uint8_t> assigned(graph_.steps.size(), 0);
    bool any = false;
    for (size_t s = 0; s < graph_.steps.size(); ++s)
      if (plan_.step_backend[s] == static_cast<int32_t>(b)) assigned[s] = 1, any = true;
    if (!any) {
      planned_pools_[b] = 0;
      continue;
    }
    cltrain_graph_desc g = graph_desc(plan_.tensors[b], graph_.steps, assigned.data());
    g.pool_limit = pool_limit(b);
    const std::optional<cltrain_memory_report> r = backends_[b]->plan(g);
    if (!r)
      throw MemoryBudgetError("memory budget: the " + backends_[b]->name() +
                              " backend cannot plan without preparing, so no budget can be kept on it");
    total += r->pool_bytes;
    planned_pools_[b] = r->pool_bytes;
    for (const cltrain_private_tensor& p :
         scratch ? backends_[b]->plan_private() : std::vector<cltrain_private_tensor>{})
      if (p.step >= 0 && static_cast<size_t>(p.step) < scratch->size())
        (*scratch)[static_cast<size_t>(p.step)] += p.bytes;
  }
  return total;
}

void Planner::fit_budget(uint64_t budget) {
  plan_.budget = BudgetOutcome{};
  plan_.budget.budget = budget;
  std::vector<uint64_t> scratch;
  plan_.budget.unbudgeted_pool = dry_plan(&scratch);
  if (plan_.budget.unbudgeted_pool <= budget) return;
  TrainingGraph base = std::move(graph_);
  std::vector<int32_t> chosen;
  uint64_t target = budget, pool = plan_.budget.unbudgeted_pool;
  // The host's estimate (live bytes per step with each step's least scratch) leaves out what the
  // plans add (alignment, packing, tensors copied between backends): each round lowers the target
  // by what the last plan was over, until the plans fit or everything that can be is recomputed.
  const size_t candidates = recompute_candidates(base).size();
  for (int round = 0; round < 24; ++round) {
    choose_recomputation(base, scratch, target, &chosen);
    graph_ = with_recomputation(base, chosen);
    pool = dry_plan(nullptr);
    if (pool <= budget || chosen.size() == candidates || target == 0) break;
    target -= std::min(target, std::max<uint64_t>(pool - budget, 4096));
  }
  if (pool > budget) {
    // The descent from the budget can end in a choice that recomputes more than it saves at the
    // peak; the least the choice finds comes from aiming at zero live bytes from the start. Use it
    // where it fits, and name it where nothing does (so that the least named is one that fits).
    std::vector<int32_t> least;
    choose_recomputation(base, scratch, 0, &least);
    graph_ = with_recomputation(base, least);
    const uint64_t least_pool = dry_plan(nullptr);
    if (least_pool < pool)
      pool = least_pool, chosen = std::move(least);
    else
      graph_ = with_recomputation(base, chosen);
  }
  if (pool > budget) {
    std::ostringstream m;
    m << "memory budget: " << budget << " bytes is below the least this model trains in here, " << pool
      << " bytes (recomputing " << chosen.size() << " forward step" << (chosen.size() == 1 ? "" : "s")
      << "; without recomputation " << plan_.budget.unbudgeted_pool << ")";
    throw MemoryBudgetError(m.str());
  }
  plan_.budget.recomputed = chosen;
  for (int32_t f : chosen) plan_.budget.extra_flops += flops_of_step(base.steps[static_cast<size_t>(f)], base.tensors);
}

}  // namespace cltrain
