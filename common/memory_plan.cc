#include "memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

namespace cltrain {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool overlaps(const PlanItem& a, const PlanItem& b) { return a.first <= b.last && b.first <= a.last; }

// Places items one by one in the given order; each goes to the lowest-waste gap (best fit) or
// the lowest gap (first fit) among the items already placed whose lifetimes overlap it.
uint64_t place_in_order(const std::vector<PlanItem>& items, const std::vector<size_t>& order, uint64_t alignment,
                        bool first_fit, std::vector<uint64_t>& offsets) {
  offsets.assign(items.size(), 0);
  std::vector<size_t> placed;
  placed.reserve(items.size());
  uint64_t pool = 0;
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of conflicting placed items
  for (size_t idx : order) {
    const PlanItem& it = items[idx];
    const uint64_t size = align_up(std::max<uint64_t>(it.bytes, 1), alignment);
    busy.clear();
    for (size_t p : placed)
      if (overlaps(items[p], it))
        busy.emplace_back(offsets[p], offsets[p] + align_up(std::max<uint64_t>(items[p].bytes, 1), alignment));
    std::sort(busy.begin(), busy.end());
    uint64_t best = UINT64_MAX, best_waste = UINT64_MAX, cursor = 0;
    for (const auto& b : busy) {
      if (b.first > cursor) {
        const uint64_t gap = b.first - cursor;
        if (gap >= size && gap - size < best_waste && !(first_fit && best != UINT64_MAX)) {
          best_waste = gap - size;
          best = cursor;
        }
      }
      cursor = std::max(cursor, b.second);
    }
    if (best == UINT64_MAX) best = cursor;  // on top of everything it overlaps
    offsets[idx] = best;
    pool = std::max(pool, best + size);
    placed.push_back(idx);
  }
  return pool;
}

}  // namespace

uint64_t tensor_elements(const cltrain_tensor_desc& t) {
  uint64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= static_cast<uint64_t>(t.dims[i] > 0 ? t.dims[i] : 0);
  return n;
}

uint64_t tensor_bytes(const cltrain_tensor_desc& t) {
  return tensor_elements(t) * (t.dtype == CLTRAIN_UINT8 ? 1 : t.dtype == CLTRAIN_FLOAT16 ? 2 : 4);
}

std::string dtype_name(int32_t dtype) {
  switch (dtype) {
    case CLTRAIN_FLOAT32: return "float32";
    case CLTRAIN_INT32: return "int32";
    case CLTRAIN_UINT8: return "uint8";
    case CLTRAIN_FLOAT16: return "float16";
    default: return "dtype " + std::to_string(dtype);
  }
}

std::string link_aliases(std::vector<PlanItem>& items, const cltrain_tensor_desc* tensors, size_t num_tensors) {
  std::map<int32_t, size_t> index;
  for (size_t i = 0; i < items.size(); ++i) index[items[i].id] = i;
  for (PlanItem& it : items) {
    if (it.id < 0 || static_cast<size_t>(it.id) >= num_tensors) continue;  // private scratch
    const int32_t a = tensors[it.id].alias;
    if (a == 0) continue;
    const int32_t target = a - 1;
    const auto found = index.find(target);
    std::ostringstream m;
    m << "tensor " << it.id << " shares the bytes of tensor " << target;
    if (a < 0 || target == it.id || found == index.end()) return m.str() + ", which is not planned here";
    if (items[found->second].bytes != it.bytes) return m.str() + ", which has another size";
    it.alias = target;
  }
  return {};
}

namespace {

// Alias groups: the index of each item's group root (following alias links), -1 on a cycle.
std::vector<size_t> alias_roots(const std::vector<PlanItem>& items) {
  std::map<int32_t, size_t> index;
  for (size_t i = 0; i < items.size(); ++i) index[items[i].id] = i;
  std::vector<size_t> root(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    size_t r = i;
    for (size_t hops = 0; items[r].alias >= 0 && hops <= items.size(); ++hops) {
      const auto it = index.find(items[r].alias);
      if (it == index.end()) break;
      r = it->second;
    }
    root[i] = r;
  }
  return root;
}

MemoryPlan plan_groups(const std::vector<PlanItem>& items, uint64_t alignment);

}  // namespace

MemoryPlan plan_memory(const std::vector<PlanItem>& items, uint64_t alignment) {
  bool any_alias = false;
  for (const auto& it : items) any_alias = any_alias || it.alias >= 0;
  if (!any_alias) return plan_groups(items, alignment);
  // One block per alias group, planned like any item; then every member takes its block's
  // offset. The per-role peaks count each member's bytes where it lives.
  const std::vector<size_t> root = alias_roots(items);
  std::vector<PlanItem> blocks;
  std::map<size_t, size_t> block_of;  // root index -> block index
  for (size_t i = 0; i < items.size(); ++i) {
    auto [pos, fresh] = block_of.emplace(root[i], blocks.size());
    if (fresh) {
      blocks.push_back(items[i]);
      blocks.back().alias = -1;
      continue;
    }
    PlanItem& b = blocks[pos->second];
    b.bytes = std::max(b.bytes, items[i].bytes);
    b.first = std::min(b.first, items[i].first);
    b.last = std::max(b.last, items[i].last);
  }
  MemoryPlan grouped = plan_groups(blocks, alignment);
  MemoryPlan plan;
  plan.pool_bytes = grouped.pool_bytes;
  plan.lower_bound = grouped.lower_bound;
  plan.algorithm = grouped.algorithm;
  plan.offsets.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) plan.offsets[i] = grouped.offsets[block_of[root[i]]];
  measure_plan(items, alignment, &plan);
  return plan;
}

namespace {

MemoryPlan plan_groups(const std::vector<PlanItem>& items, uint64_t alignment) {
  MemoryPlan plan;
  if (alignment == 0) alignment = 1;
  const size_t n = items.size();

  // Live bytes per step: the lower bound and the per-role peaks.
  int32_t max_step = 0;
  for (const auto& it : items) max_step = std::max(max_step, it.last);
  std::vector<uint64_t> live(static_cast<size_t>(max_step) + 2, 0);
  std::vector<std::vector<uint64_t>> role_live(CLTRAIN_ROLE_COUNT, std::vector<uint64_t>(live.size(), 0));
  for (const auto& it : items) {
    const uint64_t size = align_up(std::max<uint64_t>(it.bytes, 1), alignment);
    for (int32_t s = it.first; s <= it.last; ++s) {
      live[s] += size;
      if (it.role >= 0 && it.role < CLTRAIN_ROLE_COUNT) role_live[it.role][s] += it.bytes;
    }
  }
  plan.lower_bound = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  for (int r = 0; r < CLTRAIN_ROLE_COUNT; ++r)
    plan.role_peak[r] = *std::max_element(role_live[r].begin(), role_live[r].end());
  if (n == 0) return plan;

  // Candidate orders: greedy by size (largest first), greedy by breadth (items live at the
  // busiest steps first), and by first use.
  std::vector<std::pair<std::string, std::vector<size_t>>> orders;
  std::vector<size_t> base(n);
  std::iota(base.begin(), base.end(), 0);
  {
    auto o = base;
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) {
      if (items[a].bytes != items[b].bytes) return items[a].bytes > items[b].bytes;
      return (items[a].last - items[a].first) > (items[b].last - items[b].first);
    });
    orders.emplace_back("greedy-by-size", std::move(o));
  }
  {
    std::vector<uint64_t> breadth(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (int32_t s = items[i].first; s <= items[i].last; ++s) breadth[i] = std::max(breadth[i], live[s]);
    auto o = base;
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) {
      if (breadth[a] != breadth[b]) return breadth[a] > breadth[b];
      return items[a].bytes > items[b].bytes;
    });
    orders.emplace_back("greedy-by-breadth", std::move(o));
  }
  {
    auto o = base;
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) {
      if (items[a].first != items[b].first) return items[a].first < items[b].first;
      return items[a].bytes > items[b].bytes;
    });
    orders.emplace_back("first-use", std::move(o));
  }
  {
    auto o = base;  // longest lifetime first (persistent tensors at the bottom), then size
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) {
      const int32_t la = items[a].last - items[a].first, lb = items[b].last - items[b].first;
      if (la != lb) return la > lb;
      return items[a].bytes > items[b].bytes;
    });
    orders.emplace_back("longest-first", std::move(o));
  }
  {
    auto o = base;  // largest bytes x steps first
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) {
      return items[a].bytes * static_cast<uint64_t>(items[a].last - items[a].first + 1) >
             items[b].bytes * static_cast<uint64_t>(items[b].last - items[b].first + 1);
    });
    orders.emplace_back("largest-area", std::move(o));
  }
  plan.pool_bytes = UINT64_MAX;
  std::vector<uint64_t> offsets;
  auto consider = [&](const std::string& name, const std::vector<size_t>& order) {
    for (bool first_fit : {false, true}) {
      const uint64_t pool = place_in_order(items, order, alignment, first_fit, offsets);
      if (pool < plan.pool_bytes) {
        plan.pool_bytes = pool;
        plan.offsets = offsets;
        plan.algorithm = name + (first_fit ? ", first fit" : ", best fit");
      }
    }
  };
  for (const auto& [name, order] : orders) consider(name, order);
  // Then perturbations of the best order so far while the pool stays above the lower bound:
  // neighbours in the size order swapped at random (a fixed seed: plans are reproducible).
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state]() {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  const size_t tries = n <= 2 ? 0 : std::min<size_t>(64, 200000 / n + 8);
  for (size_t t = 0; t < tries && plan.pool_bytes > plan.lower_bound; ++t) {
    auto o = orders[t % orders.size()].second;
    for (size_t k = 0; k < n / 4 + 1; ++k) {
      const size_t i = next() % (n - 1);
      std::swap(o[i], o[i + 1]);
    }
    consider("perturbed " + orders[t % orders.size()].first, o);
  }
  return plan;
}

}  // namespace

void measure_plan(const std::vector<PlanItem>& items, uint64_t alignment, MemoryPlan* plan) {
  if (alignment == 0) alignment = 1;
  const std::vector<size_t> root = alias_roots(items);
  int32_t max_step = 0;
  for (const auto& it : items) max_step = std::max(max_step, it.last);
  std::map<size_t, std::vector<size_t>> members;
  for (size_t i = 0; i < items.size(); ++i) members[root[i]].push_back(i);
  std::vector<uint64_t> live(static_cast<size_t>(max_step) + 1, 0);
  std::vector<std::vector<uint64_t>> role_live(CLTRAIN_ROLE_COUNT, live);
  for (const auto& [r, m] : members) {
    // The group's block: its largest member over the span of all of them.
    uint64_t bytes = 0;
    int32_t first = INT32_MAX, last = -1;
    for (size_t i : m) {
      bytes = std::max(bytes, align_up(std::max<uint64_t>(items[i].bytes, 1), alignment));
      first = std::min(first, items[i].first), last = std::max(last, items[i].last);
    }
    for (int32_t s = std::max(first, 0); s <= last; ++s) {
      live[static_cast<size_t>(s)] += bytes;
      // Role peaks: the group's bytes under the role of its member written last before or at s.
      const PlanItem* holder = nullptr;
      for (size_t i : m)
        if (items[i].first <= s && s <= items[i].last && (!holder || items[i].first > holder->first))
          holder = &items[i];
      if (holder && holder->role >= 0 && holder->role < CLTRAIN_ROLE_COUNT)
        role_live[static_cast<size_t>(holder->role)][static_cast<size_t>(s)] += holder->bytes;
    }
  }
  plan->lower_bound = *std::max_element(live.begin(), live.end());
  for (int r = 0; r < CLTRAIN_ROLE_COUNT; ++r)
    plan->role_peak[r] = *std::max_element(role_live[r].begin(), role_live[r].end());
}

std::pair<uint64_t, uint64_t> largest_free_range(const std::vector<PlanItem>& items, const MemoryPlan& plan,
                                                 uint64_t alignment, int32_t step, const std::vector<bool>& ignore,
                                                 uint64_t top) {
  if (alignment == 0) alignment = 1;
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of the items live at step
  for (size_t i = 0; i < items.size(); ++i)
    if ((i >= ignore.size() || !ignore[i]) && items[i].first <= step && step <= items[i].last)
      busy.emplace_back(plan.offsets[i], plan.offsets[i] + std::max<uint64_t>(items[i].bytes, 1));
  busy.emplace_back(top, top);
  std::sort(busy.begin(), busy.end());
  std::pair<uint64_t, uint64_t> best{0, 0};
  uint64_t cursor = 0;
  for (const auto& [begin, end] : busy) {
    if (begin > cursor && begin - cursor > best.second) best = {cursor, begin - cursor};
    cursor = std::max(cursor, align_up(end, alignment));
  }
  return best;
}

std::string check_plan(const std::vector<PlanItem>& items, const MemoryPlan& plan, uint64_t alignment) {
  if (plan.offsets.size() != items.size()) return "plan has a different number of offsets";
  if (alignment == 0) alignment = 1;
  // Sort by offset, then compare each item with those that start before its end.
  std::vector<size_t> o(items.size());
  std::iota(o.begin(), o.end(), 0);
  std::sort(o.begin(), o.end(), [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
  const std::vector<size_t> root = alias_roots(items);
  for (size_t i = 0; i < o.size(); ++i) {
    const size_t a = o[i];
    const uint64_t a_end = plan.offsets[a] + std::max<uint64_t>(items[a].bytes, 1);
    if (plan.offsets[a] % alignment != 0) {
      std::ostringstream m;
      m << "tensor " << items[a].id << " offset " << plan.offsets[a] << " is not aligned to " << alignment;
      return m.str();
    }
    if (a_end > plan.pool_bytes) {
      std::ostringstream m;
      m << "tensor " << items[a].id << " ends at " << a_end << " past the pool (" << plan.pool_bytes << ")";
      return m.str();
    }
    for (size_t j = i + 1; j < o.size() && plan.offsets[o[j]] < a_end; ++j) {
      const size_t b = o[j];
      const bool shared = root[a] == root[b] && plan.offsets[a] == plan.offsets[b];
      if (!shared && overlaps(items[a], items[b])) {
        std::ostringstream m;
        m << "tensors " << items[a].id << " and " << items[b].id << " share bytes at offset " << plan.offsets[b]
          << " while both live";
        return m.str();
      }
    }
  }
  return {};
}

}  // namespace cltrain
