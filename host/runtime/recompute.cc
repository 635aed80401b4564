#include "recompute.h"

#include <algorithm>
#include <map>
#include <set>

#include "flops.h"
#include "memory_plan.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

template <typename F>
void for_each_io(const cltrain_step_desc& s, F f) {  // f(tensor, is_output)
  for (int32_t i = 0; i < s.num_inputs; ++i)
    if (s.inputs[i] >= 0) f(s.inputs[i], false);
  for (int32_t i = 0; i < s.num_outputs; ++i)
    if (s.outputs[i] >= 0) f(s.outputs[i], true);
}

}  // namespace

std::vector<int32_t> recompute_candidates(const TrainingGraph& g, bool read_after_loss_only) {
  const size_t nt = g.tensors.size();
  std::vector<int32_t> writers(nt, 0);
  std::vector<bool> read_by_loss(nt, false), read_after_loss(nt, false);
  for (size_t s = 0; s < g.steps.size(); ++s)
    for_each_io(g.steps[s], [&](int32_t t, bool out) {
      if (out) ++writers[static_cast<size_t>(t)];
      if (!out && static_cast<int32_t>(s) >= g.num_forward && static_cast<int32_t>(s) <= g.loss_step)
        read_by_loss[static_cast<size_t>(t)] = true;
      if (!out && static_cast<int32_t>(s) > g.loss_step) read_after_loss[static_cast<size_t>(t)] = true;
    });
  std::vector<int32_t> out;
  for (int32_t s = 0; s < g.num_forward; ++s) {
    const cltrain_step_desc& st = g.steps[static_cast<size_t>(s)];
    const OpDescriptor* d = find_op(st.op);
    if (!d || d->kind != CLTRAIN_KIND_MODEL || st.phase != CLTRAIN_PHASE_FORWARD || st.model_op < 0) continue;
    bool ok = st.num_outputs > 0, needed = false;
    for (int32_t i = 0; i < st.num_outputs && ok; ++i) {
      const int32_t t = st.outputs[i];
      if (t < 0) continue;
      const cltrain_tensor_desc& d = g.tensors[static_cast<size_t>(t)];
      ok = !d.persistent && !d.data && t != g.input && t != g.prediction && t != g.loss && t != g.expected &&
           writers[static_cast<size_t>(t)] == 1 && !read_by_loss[static_cast<size_t>(t)];
      needed = needed || read_after_loss[static_cast<size_t>(t)];
    }
    if (ok && (needed || !read_after_loss_only)) out.push_back(s);
  }
  return out;
}

RecomputedSteps recompute_steps(const TrainingGraph& g, std::vector<int32_t> forward_steps) {
  std::sort(forward_steps.begin(), forward_steps.end());
  forward_steps.erase(std::unique(forward_steps.begin(), forward_steps.end()), forward_steps.end());
  RecomputedSteps r;
  const int32_t base = static_cast<int32_t>(g.tensors.size());
  std::vector<int32_t> copy(g.tensors.size(), -1);  // original tensor -> its recomputed copy
  for (int32_t f : forward_steps) {
    const cltrain_step_desc& st = g.steps[static_cast<size_t>(f)];
    for (int32_t i = 0; i < st.num_outputs; ++i)
      if (st.outputs[i] >= 0) {
        copy[static_cast<size_t>(st.outputs[i])] = base + static_cast<int32_t>(r.copies_of.size());
        r.copies_of.push_back(st.outputs[i]);
      }
  }
  auto copied = [&](int32_t t) { return t >= 0 && copy[static_cast<size_t>(t)] >= 0; };
  // Where each repeat goes: before the first step after the loss reading one of its outputs, or
  // before a later repeat that reads one (those come later in forward order: placed first).
  const int32_t n = static_cast<int32_t>(g.steps.size());
  std::vector<int32_t> first_reader(g.tensors.size(), n);  // first step after the loss reading it
  for (int32_t s = n - 1; s > g.loss_step; --s)
    for_each_io(g.steps[static_cast<size_t>(s)], [&](int32_t t, bool out) {
      if (!out && copied(t)) first_reader[static_cast<size_t>(t)] = s;
    });
  std::vector<int32_t> pos(g.steps.size(), n);  // forward step -> the step its repeat goes before
  for (auto it = forward_steps.rbegin(); it != forward_steps.rend(); ++it) {
    const cltrain_step_desc& st = g.steps[static_cast<size_t>(*it)];
    int32_t& p = pos[static_cast<size_t>(*it)];
    for (int32_t i = 0; i < st.num_outputs; ++i)
      if (st.outputs[i] >= 0) p = std::min(p, first_reader[static_cast<size_t>(st.outputs[i])]);
    // A recomputed consumer's repeat needs this one's first: its place, already known, bounds ours.
    for (int32_t k = 0; k < st.num_inputs; ++k)
      if (copied(st.inputs[k])) {
        int32_t& q = first_reader[static_cast<size_t>(st.inputs[k])];
        q = std::min(q, p);
      }
  }
  auto rewired = [&](cltrain_step_desc s, bool outputs_too) {
    for (int32_t i = 0; i < s.num_inputs; ++i)
      if (copied(s.inputs[i])) s.inputs[i] = copy[static_cast<size_t>(s.inputs[i])];
    for (int32_t i = 0; outputs_too && i < s.num_outputs; ++i)
      if (copied(s.outputs[i])) s.outputs[i] = copy[static_cast<size_t>(s.outputs[i])];
    return s;
  };
  std::vector<std::vector<int32_t>> before(static_cast<size_t>(n) + 1);  // step -> repeats placed before it
  for (int32_t f : forward_steps) before[static_cast<size_t>(pos[static_cast<size_t>(f)])].push_back(f);
  std::vector<int32_t> new_index(static_cast<size_t>(n), -1);
  for (int32_t s = 0; s <= n; ++s) {
    for (int32_t f : before[static_cast<size_t>(s)]) {  // in forward order: producers before their consumers
      r.steps.push_back(rewired(g.steps[static_cast<size_t>(f)], true));
      r.owner_step.push_back(-1);
      r.recomputes.push_back(f);
      r.origin.push_back(f);
    }
    if (s == n) break;
    new_index[static_cast<size_t>(s)] = static_cast<int32_t>(r.steps.size());
    r.steps.push_back(s > g.loss_step ? rewired(g.steps[static_cast<size_t>(s)], false)
                                      : g.steps[static_cast<size_t>(s)]);
    r.owner_step.push_back(g.owner_step[static_cast<size_t>(s)]);
    r.recomputes.push_back(-1);
    r.origin.push_back(s);
  }
  for (int32_t& o : r.owner_step)
    if (o >= 0) o = new_index[static_cast<size_t>(o)];
  return r;
}

TrainingGraph with_recomputation(const TrainingGraph& base, const std::vector<int32_t>& forward_steps) {
  TrainingGraph g;
  g.names = base.names;
  g.initial_data = base.initial_data;
  g.tensors = base.tensors;
  // The descriptors point into the copies: names by position (tensor i's name is names[i] where
  // it came from there), initial data by the entry it pointed to.
  std::map<const void*, size_t> data_index;
  for (size_t i = 0; i < base.initial_data.size(); ++i) data_index[base.initial_data[i].data()] = i;
  std::map<const char*, size_t> name_index;
  for (size_t i = 0; i < base.names.size(); ++i) name_index[base.names[i].c_str()] = i;
  for (cltrain_tensor_desc& t : g.tensors) {
    if (auto it = name_index.find(t.name); it != name_index.end()) t.name = g.names[it->second].c_str();
    if (auto it = data_index.find(t.data); t.data && it != data_index.end()) t.data = g.initial_data[it->second].data();
  }
  g.num_forward = base.num_forward;
  g.loss_step = base.loss_step;
  g.input = base.input, g.expected = base.expected, g.loss = base.loss, g.prediction = base.prediction;
  g.weights = base.weights;
  g.adam_state = base.adam_state;
  g.op_ranks = base.op_ranks;
  g.folded_into = base.folded_into;
  RecomputedSteps r = recompute_steps(base, forward_steps);
  for (int32_t orig : r.copies_of) {
    cltrain_tensor_desc d = base.tensors[static_cast<size_t>(orig)];
    g.names.push_back(std::string("recompute/") + base.name_of(orig));
    d.name = g.names.back().c_str();
    g.tensors.push_back(d);
  }
  g.steps = std::move(r.steps);
  g.owner_step = std::move(r.owner_step);
  g.recomputes = std::move(r.recomputes);
  return g;
}

std::vector<uint64_t> live_bytes_per_step(const TrainingGraph& g, const RecomputedSteps& r,
                                          const std::vector<uint64_t>& extra) {
  const size_t nt = g.tensors.size() + r.copies_of.size(), ns = r.steps.size();
  auto desc = [&](size_t t) -> const cltrain_tensor_desc& {
    return g.tensors[t < g.tensors.size() ? t : static_cast<size_t>(r.copies_of[t - g.tensors.size()])];
  };
  std::vector<int32_t> first(nt, -1), last(nt, -1);
  for (size_t s = 0; s < ns; ++s)
    for_each_io(r.steps[s], [&](int32_t t, bool) {
      if (first[static_cast<size_t>(t)] < 0) first[static_cast<size_t>(t)] = static_cast<int32_t>(s);
      last[static_cast<size_t>(t)] = static_cast<int32_t>(s);
    });
  std::vector<int64_t> delta(ns + 1, 0);
  for (size_t t = 0; t < nt; ++t) {
    if (first[t] < 0) continue;
    const cltrain_tensor_desc& d = desc(t);
    const bool whole = d.persistent != 0 || d.data != nullptr;
    const size_t a = whole ? 0 : static_cast<size_t>(first[t]), b = whole ? ns - 1 : static_cast<size_t>(last[t]);
    delta[a] += static_cast<int64_t>(tensor_bytes(d));
    delta[b + 1] -= static_cast<int64_t>(tensor_bytes(d));
  }
  std::vector<uint64_t> live(ns, 0);
  int64_t run = 0;
  for (size_t s = 0; s < ns; ++s) {
    run += delta[s];
    const size_t o = static_cast<size_t>(r.origin[s]);
    live[s] = static_cast<uint64_t>(run) + (o < extra.size() ? extra[o] : 0);
  }
  return live;
}

uint64_t choose_recomputation(const TrainingGraph& g, const std::vector<uint64_t>& extra, uint64_t target,
                              std::vector<int32_t>* chosen) {
  const std::vector<int32_t> candidates = recompute_candidates(g);
  std::map<int32_t, int32_t> writer;  // tensor -> the repeatable step writing it
  for (int32_t c : recompute_candidates(g, false)) {
    const cltrain_step_desc& st = g.steps[static_cast<size_t>(c)];
    for (int32_t i = 0; i < st.num_outputs; ++i)
      if (st.outputs[i] >= 0) writer[st.outputs[i]] = c;
  }
  auto excess = [&](const std::vector<uint64_t>& live) {
    uint64_t e = 0;
    for (uint64_t v : live) e += v > target ? v - target : 0;
    return e;
  };
  std::vector<uint64_t> live = live_bytes_per_step(g, recompute_steps(g, *chosen), extra);
  uint64_t current = excess(live);
  // A move is a candidate with the candidates that write its inputs, up to kDepth producers back:
  // repeating a step alone keeps its inputs alive until its repeat, so a step whose inputs are as
  // large as its outputs takes bytes off only with its producers (a chain ending at tensors that
  // are kept anyway, as checkpointing keeps a layer's input and repeats the layer).
  constexpr int kDepth = 12;
  while (current > 0) {
    std::vector<int32_t> best;
    double best_gain = 0;
    std::vector<uint64_t> best_live;
    const std::set<int32_t> have(chosen->begin(), chosen->end());
    for (int32_t c : candidates) {
      if (have.count(c)) continue;
      std::vector<int32_t> move = {c}, frontier = {c};
      std::set<int32_t> in_move = {c};
      uint64_t flops = 0;
      for (int depth = 0; depth <= kDepth && !frontier.empty(); ++depth) {
        if (depth > 0) {  // the producers of the last level
          std::vector<int32_t> next;
          for (int32_t f : frontier) {
            const cltrain_step_desc& st = g.steps[static_cast<size_t>(f)];
            for (int32_t i = 0; i < st.num_inputs; ++i) {
              const auto w = writer.find(st.inputs[i]);
              if (w == writer.end() || have.count(w->second) || !in_move.insert(w->second).second) continue;
              next.push_back(w->second);
              move.push_back(w->second);
            }
          }
          frontier = std::move(next);
          if (frontier.empty()) break;
        }
        for (int32_t f : frontier) flops += flops_of_step(g.steps[static_cast<size_t>(f)], g.tensors);
        std::vector<int32_t> trial = *chosen;
        trial.insert(trial.end(), move.begin(), move.end());
        std::vector<uint64_t> l = live_bytes_per_step(g, recompute_steps(g, trial), extra);
        const uint64_t e = excess(l);
        if (e >= current) continue;
        const double gain = static_cast<double>(current - e) / (1.0 + static_cast<double>(flops));
        if (gain > best_gain) best = move, best_gain = gain, best_live = std::move(l);
      }
    }
    if (best.empty()) break;
    chosen->insert(chosen->end(), best.begin(), best.end());
    live = std::move(best_live);
    current = excess(live);
  }
  std::sort(chosen->begin(), chosen->end());
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

}  // namespace cltrain
