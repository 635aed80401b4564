#include "memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

namespace cltrain {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool overlaps(const PlanItem& a, const PlanItem& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Places items one by one in the given order; each goes to the lowest-waste gap (best fit)
// among the items already placed whose lifetimes overlap it.
uint64_t place_in_order(const std::vector<PlanItem>& items, const std::vector<size_t>& order,
                        uint64_t alignment, std::vector<uint64_t>& offsets) {
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
        if (gap >= size && gap - size < best_waste) {
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

uint64_t tensor_bytes(const cltrain_tensor_desc& t) { return tensor_elements(t) * 4; }

MemoryPlan plan_memory(const std::vector<PlanItem>& items, uint64_t alignment) {
  MemoryPlan plan;
  if (alignment == 0) alignment = 1;
  const size_t n = items.size();

  // Live bytes per step: the lower bound and the per-role peaks.
  int32_t max_step = 0;
  for (const auto& it : items) max_step = std::max(max_step, it.last);
  std::vector<uint64_t> live(static_cast<size_t>(max_step) + 2, 0);
  std::vector<std::vector<uint64_t>> role_live(CLTRAIN_ROLE_COUNT,
                                               std::vector<uint64_t>(live.size(), 0));
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
  plan.pool_bytes = UINT64_MAX;
  std::vector<uint64_t> offsets;
  for (const auto& [name, order] : orders) {
    const uint64_t pool = place_in_order(items, order, alignment, offsets);
    if (pool < plan.pool_bytes) {
      plan.pool_bytes = pool;
      plan.offsets = offsets;
      plan.algorithm = name;
    }
  }
  return plan;
}

std::string check_plan(const std::vector<PlanItem>& items, const MemoryPlan& plan,
                       uint64_t alignment) {
  if (plan.offsets.size() != items.size()) return "plan has a different number of offsets";
  if (alignment == 0) alignment = 1;
  // Sort by offset, then compare each item with those that start before its end.
  std::vector<size_t> o(items.size());
  std::iota(o.begin(), o.end(), 0);
  std::sort(o.begin(), o.end(), [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
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
      if (overlaps(items[a], items[b])) {
        std::ostringstream m;
        m << "tensors " << items[a].id << " and " << items[b].id << " share bytes at offset "
          << plan.offsets[b] << " while both live";
        return m.str();
      }
    }
  }
  return {};
}

}  // namespace cltrain
