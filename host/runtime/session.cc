#include "session.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "flops.h"
#include "memory_plan.h"
#include "ops/op_descriptor.h"
#include "recompute.h"

namespace cltrain {
namespace {

// Steps that read their outputs as well as write them.
bool reads_outputs(const cltrain_step_desc& s) {
  return s.op == CLTRAIN_OP_ACCUMULATE || s.phase == CLTRAIN_PHASE_UPDATE;
}

int32_t lowest_bit(uint32_t mask) {
  for (int32_t i = 0; i < 32; ++i)
    if (mask & (1u << i)) return i;
  return -1;
}

}  // namespace

Session::Session(TrainingGraph graph, std::vector<std::unique_ptr<Backend>> backends)
    : graph_(std::move(graph)), backends_(std::move(backends)) {
  if (backends_.empty()) throw BackendError("no backend to run on");
  if (backends_.size() > 32) throw BackendError("too many backends");
}

int32_t Session::batch() const { return graph_.tensors[static_cast<size_t>(graph_.input)].dims[0]; }

uint64_t Session::input_elements() const { return tensor_elements(graph_.tensors[static_cast<size_t>(graph_.input)]); }

uint64_t Session::prediction_elements() const {
  return tensor_elements(graph_.tensors[static_cast<size_t>(graph_.prediction)]);
}

void Session::place() {
  const auto& steps = graph_.steps;
  const cltrain_graph_desc whole = graph_desc(graph_.tensors, steps, nullptr);
  step_backend_.assign(steps.size(), -1);
  for (size_t s = 0; s < steps.size(); ++s) {
    const cltrain_step_desc& step = steps[s];
    const int32_t owner = graph_.owner_step[s];
    const int kind = find_op(step.op)->kind;
    if (kind == CLTRAIN_KIND_MODEL && step.phase == CLTRAIN_PHASE_BACKWARD) {
      // A model op's backward runs where its forward runs.
      for (size_t f = 0; f < static_cast<size_t>(graph_.num_forward); ++f)
        if (steps[f].model_op == step.model_op) step_backend_[s] = step_backend_[f];
      continue;
    }
    // An accumulation runs where the step it follows runs, the loss's backward where its forward does.
    if (owner >= 0 && (kind == CLTRAIN_KIND_GRAPH || kind == CLTRAIN_KIND_LOSS)) {
      step_backend_[s] = step_backend_[static_cast<size_t>(owner)];
      continue;
    }
    // Forward steps and the loss go to the first backend that takes them for training; an
    // update prefers the backend of the op that owns the weight.
    if (step.phase == CLTRAIN_PHASE_UPDATE && owner >= 0) {
      const int32_t b = step_backend_[static_cast<size_t>(owner)];
      if (backends_[static_cast<size_t>(b)]->supports(whole, static_cast<int32_t>(s), true)) {
        step_backend_[s] = b;
        continue;
      }
    }
    for (size_t b = 0; b < backends_.size(); ++b) {
      if (backends_[b]->supports(whole, static_cast<int32_t>(s), true)) {
        step_backend_[s] = static_cast<int32_t>(b);
        break;
      }
    }
    if (step_backend_[s] < 0) {
      std::ostringstream m;
      m << "no backend can train " << find_op(step.op)->name;
      if (step.model_op >= 0) m << " (operator " << step.model_op << ")";
      throw BackendError(m.str());
    }
  }
}

void Session::compute_lifetimes() {
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
  // Direct accesses by steps, which also give the initial holders of persistent tensors.
  valid_.assign(nt, 0);
  for (int32_t s = 0; s < nsteps; ++s) {
    const auto& st = graph_.steps[static_cast<size_t>(s)];
    for (int32_t i = 0; i < st.num_inputs; ++i)
      if (st.inputs[i] >= 0) access(step_backend_[static_cast<size_t>(s)], st.inputs[i], s);
    for (int32_t i = 0; i < st.num_outputs; ++i)
      if (st.outputs[i] >= 0) access(step_backend_[static_cast<size_t>(s)], st.outputs[i], s);
  }
  for (size_t t = 0; t < nt; ++t)
    if (graph_.tensors[t].persistent)
      for (size_t b = 0; b < nb; ++b)
        if (first[b][t] >= 0) valid_[t] |= 1u << b;
  const std::vector<uint32_t> initial = valid_;

  // Copies and host transfers, simulated over the ways the session runs steps: two training
  // iterations (the first from the initial holders, the second from the steady state), then
  // evaluation and prediction.
  const int32_t loss_end = graph_.loss_step + 1;
  struct Range {
    int32_t end;
    bool loss;
  };
  const Range ranges[] = {{nsteps, true}, {nsteps, true}, {loss_end, true}, {graph_.num_forward, false}};
  WalkHooks hooks;
  hooks.write = [&](int32_t t, int32_t b) { access(b, t, 0); };
  hooks.copy = [&](int32_t t, int32_t from, int32_t to, int32_t s) {
    access(from, t, s);
    access(to, t, s);
  };
  hooks.step = [](int32_t, int32_t) {};
  // The host reads the loss and the prediction after the range: they live to the end.
  hooks.read = [&](int32_t t, int32_t from) { access(from, t, nsteps - 1); };
  for (const Range& r : ranges) walk(r.end, r.loss, r.loss, true, hooks);
  valid_ = initial;

  tensors_.assign(nb, graph_.tensors);
  for (size_t b = 0; b < nb; ++b)
    for (size_t t = 0; t < nt; ++t) {
      auto& d = tensors_[b][t];
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

void Session::choose_storage() {
  if (!half_storage_) return;
  // Per tensor: whether every step that touches it allows float16 storage.
  std::vector<uint8_t> ok(graph_.tensors.size(), 1);
  for (const cltrain_step_desc& st : graph_.steps) {
    const OpDescriptor* d = find_op(st.op);
    const bool allows =
        d && d->half_storage && st.params.activation != CLTRAIN_ACT_TANH && st.params.dx_activation != CLTRAIN_ACT_TANH;
    for (int32_t i = 0; i < st.num_inputs + st.num_outputs; ++i) {
      const int32_t t = i < st.num_inputs ? st.inputs[i] : st.outputs[i - st.num_inputs];
      if (t >= 0 && !allows) ok[static_cast<size_t>(t)] = 0;
    }
  }
  for (int32_t t : {graph_.input, graph_.expected, graph_.prediction, graph_.loss})  // the host's
    if (t >= 0) ok[static_cast<size_t>(t)] = 0;
  for (size_t t = 0; t < graph_.tensors.size(); ++t) {
    const cltrain_tensor_desc& g = graph_.tensors[t];
    const bool role =
        g.role == CLTRAIN_ROLE_NON_CONST || g.role == CLTRAIN_ROLE_BACK_PROP || g.role == CLTRAIN_ROLE_DISPOSABLE;
    size_t users = 0, user = 0;
    for (size_t b = 0; b < tensors_.size(); ++b)
      if (tensors_[b][t].first_step >= 0) ++users, user = b;
    // One backend alone: a copy between backends moves the bytes as they are.
    if (ok[t] && role && !g.persistent && !g.data && g.dtype == CLTRAIN_FLOAT32 && users == 1)
      tensors_[user][t].dtype = CLTRAIN_FLOAT16;
  }
}

namespace {

// The output of a step that may share the bytes of an input, as its descriptor says.
InPlacePair in_place_pair(const cltrain_step_desc& s) {
  const OpDescriptor* d = find_op(s.op);
  return d && d->in_place ? d->in_place(s) : InPlacePair{};
}

}  // namespace

void Session::choose_aliases() {
  for (size_t b = 0; b < tensors_.size(); ++b) {
    auto& t = tensors_[b];
    // Alias groups on this backend: each tensor's root, and each root's last step over its group.
    std::vector<int32_t> root(t.size());
    std::vector<int32_t> group_last(t.size());
    for (size_t i = 0; i < t.size(); ++i) root[i] = static_cast<int32_t>(i), group_last[i] = t[i].last_step;
    for (size_t s = 0; s < graph_.steps.size(); ++s) {
      if (step_backend_[s] != static_cast<int32_t>(b)) continue;
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

uint64_t Session::pool_limit(size_t b) const {
  if (budget_.budget == 0) return 0;
  uint64_t others = 0;  // what the other backends' last plans take of the budget
  for (size_t o = 0; o < planned_pools_.size(); ++o) others += o == b ? 0 : planned_pools_[o];
  return budget_.budget - std::min(budget_.budget, others);
}

uint64_t Session::dry_plan(std::vector<uint64_t>* scratch) {
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
      if (step_backend_[s] == static_cast<int32_t>(b)) assigned[s] = 1, any = true;
    if (!any) {
      planned_pools_[b] = 0;
      continue;
    }
    cltrain_graph_desc g = graph_desc(tensors_[b], graph_.steps, assigned.data());
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

void Session::fit_budget(uint64_t budget) {
  budget_ = BudgetOutcome{};
  budget_.budget = budget;
  std::vector<uint64_t> scratch;
  budget_.unbudgeted_pool = dry_plan(&scratch);
  if (budget_.unbudgeted_pool <= budget) return;
  TrainingGraph base = std::move(graph_);
  std::vector<int32_t> chosen;
  uint64_t target = budget, pool = budget_.unbudgeted_pool;
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
      << "; without recomputation " << budget_.unbudgeted_pool << ")";
    throw MemoryBudgetError(m.str());
  }
  budget_.recomputed = chosen;
  for (int32_t f : chosen) budget_.extra_flops += flops_of_step(base.steps[static_cast<size_t>(f)], base.tensors);
}

void Session::prepare(uint64_t memory_budget) {
  if (memory_budget > 0) fit_budget(memory_budget);
  place();
  compute_lifetimes();
  choose_storage();
  choose_aliases();
  memory_.clear();
  for (size_t b = 0; b < backends_.size(); ++b) {
    std::vector<uint8_t> assigned(graph_.steps.size(), 0);
    bool any = false;
    for (size_t s = 0; s < graph_.steps.size(); ++s)
      if (step_backend_[s] == static_cast<int32_t>(b)) assigned[s] = 1, any = true;
    if (!any) continue;
    cltrain_graph_desc g = graph_desc(tensors_[b], graph_.steps, assigned.data());
    g.pool_limit = pool_limit(b);
    memory_.push_back({backends_[b]->name(), backends_[b]->device_name(), backends_[b]->prepare(g)});
  }
  if (memory_budget > 0) {  // what the dry plans promised, kept: never silently over the budget
    uint64_t total = 0;
    for (const BackendMemory& m : memory_) total += m.report.pool_bytes;
    if (total > memory_budget)
      throw MemoryBudgetError("memory budget: the backends' pools take " + std::to_string(total) + " bytes, over the " +
                              std::to_string(memory_budget) + " their plans fitted in");
  }
}

void Session::walk(int32_t end, bool with_expected, bool read_loss, bool read_prediction, const WalkHooks& hooks) {
  for (size_t t = 0; t < graph_.tensors.size(); ++t)
    if (!graph_.tensors[t].persistent) valid_[t] = 0;
  // The host writes its tensors into the backend of their first reader, before any step.
  auto host_write = [&](int32_t t) {
    for (int32_t s = 0; s < end; ++s) {
      const auto& st = graph_.steps[static_cast<size_t>(s)];
      for (int32_t i = 0; i < st.num_inputs; ++i)
        if (st.inputs[i] == t) {
          const int32_t b = step_backend_[static_cast<size_t>(s)];
          hooks.write(t, b);
          valid_[static_cast<size_t>(t)] = 1u << b;
          return;
        }
    }
  };
  host_write(graph_.input);
  if (with_expected) host_write(graph_.expected);
  for (int32_t s = 0; s < end; ++s) {
    const auto& st = graph_.steps[static_cast<size_t>(s)];
    const int32_t b = step_backend_[static_cast<size_t>(s)];
    auto need = [&](int32_t t) {
      if (t < 0 || (valid_[static_cast<size_t>(t)] & (1u << b))) return;
      const int32_t from = lowest_bit(valid_[static_cast<size_t>(t)]);
      if (from < 0)
        throw BackendError(std::string("internal: tensor ") + graph_.name_of(t) + " is read before it is written");
      hooks.copy(t, from, b, s);
      valid_[static_cast<size_t>(t)] |= 1u << b;
    };
    for (int32_t i = 0; i < st.num_inputs; ++i) need(st.inputs[i]);
    if (reads_outputs(st))
      for (int32_t i = 0; i < st.num_outputs; ++i) need(st.outputs[i]);
    hooks.step(s, b);
    for (int32_t i = 0; i < st.num_outputs; ++i)
      if (st.outputs[i] >= 0) valid_[static_cast<size_t>(st.outputs[i])] = 1u << b;
  }
  for (int32_t t : {read_loss ? graph_.loss : -1, read_prediction ? graph_.prediction : -1}) {
    if (t < 0) continue;
    const int32_t from = lowest_bit(valid_[static_cast<size_t>(t)]);
    if (from < 0) throw BackendError(std::string("internal: ") + graph_.name_of(t) + " is not computed by these steps");
    hooks.read(t, from);
  }
}

float Session::run_range(int32_t end, const float* input, const float* expected, const cltrain_run_args& args,
                         float* prediction, bool want_loss) {
  std::vector<int32_t>& pending = pending_;
  pending.clear();
  int32_t pending_backend = -1;
  auto flush = [&]() {
    if (!pending.empty()) backends_[static_cast<size_t>(pending_backend)]->run(pending, args);
    pending.clear();
  };
  auto bytes_of = [&](int32_t t) { return tensor_bytes(graph_.tensors[static_cast<size_t>(t)]); };
  float loss = 0.0f;
  WalkHooks hooks;
  hooks.write = [&](int32_t t, int32_t b) {
    backends_[static_cast<size_t>(b)]->write(t, t == graph_.input ? input : expected, bytes_of(t));
  };
  hooks.copy = [&](int32_t t, int32_t from, int32_t to, int32_t) {
    flush();
    const uint64_t bytes = bytes_of(t);
    staging_.resize((bytes + 3) / 4);  // a UINT8 tensor need not be whole floats
    backends_[static_cast<size_t>(from)]->read(t, staging_.data(), bytes);
    backends_[static_cast<size_t>(to)]->write(t, staging_.data(), bytes);
  };
  hooks.step = [&](int32_t s, int32_t b) {
    if (b != pending_backend) {
      flush();
      pending_backend = b;
    }
    pending.push_back(s);
  };
  hooks.read = [&](int32_t t, int32_t from) {
    flush();
    if (t == graph_.loss)
      backends_[static_cast<size_t>(from)]->read(t, &loss, sizeof(float));
    else
      backends_[static_cast<size_t>(from)]->read(t, prediction, bytes_of(t));
  };
  walk(end, want_loss, want_loss, prediction != nullptr, hooks);
  flush();
  return loss;
}

float Session::train_step(const float* input, const float* expected, int64_t iteration, float* prediction) {
  cltrain_run_args args{};
  args.struct_size = sizeof(args);
  args.iteration = iteration;
  args.learning_rate = 0.0f;
  return run_range(static_cast<int32_t>(graph_.steps.size()), input, expected, args, prediction, true);
}

float Session::evaluate(const float* input, const float* expected, float* prediction) {
  cltrain_run_args args{};
  args.struct_size = sizeof(args);
  args.iteration = 1;
  return run_range(graph_.loss_step + 1, input, expected, args, prediction, true);
}

void Session::predict(const float* input, float* prediction) {
  cltrain_run_args args{};
  args.struct_size = sizeof(args);
  args.iteration = 1;
  run_range(graph_.num_forward, input, nullptr, args, prediction, false);
}

std::vector<float> Session::read_persistent(int32_t t) {
  const auto& d = graph_.tensors.at(static_cast<size_t>(t));
  if (!d.persistent) throw BackendError(std::string("internal: ") + d.name + " is not persistent");
  const int32_t from = lowest_bit(valid_[static_cast<size_t>(t)]);
  if (from < 0) throw BackendError(std::string("internal: no backend holds ") + d.name);
  std::vector<float> out(tensor_elements(d));
  backends_[static_cast<size_t>(from)]->read(t, out.data(), out.size() * sizeof(float));
  return out;
}

void Session::write_persistent(int32_t t, const std::vector<float>& values) {
  const auto& d = graph_.tensors.at(static_cast<size_t>(t));
  if (!d.persistent || values.size() != tensor_elements(d))
    throw BackendError(std::string("internal: cannot write ") + d.name);
  uint32_t holders = 0;
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (tensors_[b][static_cast<size_t>(t)].first_step < 0) continue;
    backends_[b]->write(t, values.data(), values.size() * sizeof(float));
    holders |= 1u << b;
  }
  valid_[static_cast<size_t>(t)] = holders;
}

std::vector<std::string> Session::model_op_placement() const {
  std::vector<std::string> out;
  for (int32_t s = 0; s < graph_.num_forward; ++s) {
    const auto& st = graph_.steps[static_cast<size_t>(s)];
    if (st.model_op >= static_cast<int32_t>(out.size())) out.resize(static_cast<size_t>(st.model_op) + 1);
    out[static_cast<size_t>(st.model_op)] =
        backends_[static_cast<size_t>(step_backend_[static_cast<size_t>(s)])]->name();
  }
  for (const auto& [op, into] : graph_.folded_into)  // a folded op runs inside the one it is folded into
    if (static_cast<size_t>(op) < out.size() && static_cast<size_t>(into) < out.size())
      out[static_cast<size_t>(op)] = out[static_cast<size_t>(into)];
  return out;
}

std::string Session::backend_names() const {
  std::string out;
  for (const auto& m : memory_) out += (out.empty() ? "" : ",") + m.backend;
  return out;
}

std::string Session::device_names() const {
  std::string out;
  for (const auto& m : memory_) out += (out.empty() ? "" : "; ") + m.device;
  return out;
}

}  // namespace cltrain
