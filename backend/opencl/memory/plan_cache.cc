#include "memory/plan_cache.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>

#include "device/device.h"
#include "program/disk_cache.h"

namespace cltrain::ocl {
namespace {

// Bump when the payload below or the meaning of the key changes.
constexpr const char* kPlanFormat = "cltrain-ocl-plan-1";
constexpr const char* kPlanMagic = "CLTPLAN1";

KeyHash plan_key(const PlanCache& cache, uint64_t alignment, const HostGraph& g, const std::vector<PlanItem>& items) {
  KeyHash h;
  h.str(kPlanFormat).str(plugin_build_id()).str(cache.device_key).value(alignment);
  h.value(static_cast<uint64_t>(sizeof(cltrain_tensor_desc))).value(static_cast<uint64_t>(sizeof(cltrain_step_desc)));
  h.value(g.num_tensors()).value(g.num_steps());
  // Members appended to cltrain_tensor_desc after data_bytes are hashed as bytes, so that a new
  // member (zero unless set: the host value-initializes its descs) changes the key too.
  constexpr size_t kTail = offsetof(cltrain_tensor_desc, data_bytes) + sizeof(uint64_t);
  for (int32_t i = 0; i < g.num_tensors(); ++i) {
    const cltrain_tensor_desc& t = g.tensors[i];
    h.value(t.rank);
    for (int32_t d = 0; d < std::clamp<int32_t>(t.rank, 0, CLTRAIN_MAX_RANK); ++d) h.value(t.dims[d]);
    h.value(t.dtype).value(t.role).value(t.first_step).value(t.last_step).value(t.persistent);
    h.value(static_cast<uint8_t>(t.data != nullptr)).value(t.data_bytes);
    h.bytes(reinterpret_cast<const uint8_t*>(&t) + kTail, sizeof(cltrain_tensor_desc) - kTail);
  }
  // A step desc is int32 and float members only (no padding): its bytes are its contents.
  if (g.num_steps() > 0) {
    h.bytes(g.steps.data(), sizeof(cltrain_step_desc) * g.steps.size());
    h.bytes(g.assigned.data(), g.assigned.size());
  }
  h.value(static_cast<uint64_t>(items.size()));
  for (const PlanItem& it : items) h.value(it.id).value(it.bytes).value(it.first).value(it.last).value(it.role);
  return h;
}

std::vector<uint8_t> encode(const MemoryPlan& plan, const std::vector<PlanItem>& items, uint64_t alignment) {
  std::vector<uint8_t> out;
  append_value(out, alignment);
  append_value(out, plan.pool_bytes);
  append_value(out, plan.lower_bound);
  append_value(out, static_cast<uint32_t>(CLTRAIN_ROLE_COUNT));
  for (uint64_t peak : plan.role_peak) append_value(out, peak);
  append_value(out, static_cast<uint32_t>(plan.algorithm.size()));
  out.insert(out.end(), plan.algorithm.begin(), plan.algorithm.end());
  append_value(out, static_cast<uint64_t>(items.size()));
  for (size_t i = 0; i < items.size(); ++i) {
    append_value(out, items[i].id);
    append_value(out, items[i].bytes);
    append_value(out, plan.offsets[i]);
  }
  return out;
}

// The plan the payload holds, if it is one for exactly these items; else why not.
std::string decode(const std::vector<uint8_t>& payload, const std::vector<PlanItem>& items, uint64_t alignment,
                   MemoryPlan* plan) {
  ByteReader r{payload.data(), payload.size()};
  if (r.get<uint64_t>() != alignment) return "has another alignment";
  plan->pool_bytes = r.get<uint64_t>();
  plan->lower_bound = r.get<uint64_t>();
  if (r.get<uint32_t>() != CLTRAIN_ROLE_COUNT) return "has another number of roles";
  for (uint64_t& peak : plan->role_peak) peak = r.get<uint64_t>();
  const uint32_t name_len = r.get<uint32_t>();
  if (name_len > payload.size() - r.at) return "is truncated";
  plan->algorithm.assign(payload.begin() + static_cast<std::ptrdiff_t>(r.at),
                         payload.begin() + static_cast<std::ptrdiff_t>(r.at + name_len));
  r.at += name_len;
  if (r.get<uint64_t>() != items.size()) return "has another number of tensors";
  plan->offsets.assign(items.size(), 0);
  uint64_t stacked = 0;  // the pool that stacking every tensor would take: no plan needs more
  for (size_t i = 0; i < items.size(); ++i) {
    const int32_t id = r.get<int32_t>();
    const uint64_t bytes = r.get<uint64_t>();
    plan->offsets[i] = r.get<uint64_t>();
    if (r.short_read) break;
    if (id != items[i].id || bytes != items[i].bytes) return "lists other tensors";
    stacked += (std::max<uint64_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  }
  if (r.short_read || r.at != payload.size()) return "is truncated or has extra bytes";
  if (plan->pool_bytes > stacked) return "has a pool larger than all its tensors together";
  if (const std::string conflict = check_plan(items, *plan, alignment); !conflict.empty())
    return "has a wrong plan (" + conflict + ")";
  return {};
}

}  // namespace

MemoryPlan load_or_plan(PlanCache& cache, uint64_t alignment, const HostGraph& graph,
                        const std::vector<PlanItem>& items) {
  if (cache.dir.empty()) {
    MemoryPlan plan = plan_memory(items, alignment);
    cache.source = "computed (" + plan.algorithm + "), no cache directory";
    return plan;
  }
  const KeyHash key = plan_key(cache, alignment, graph, items);
  const std::string path = cache.dir + "/cltrain-ocl-plan-" + key.hex() + ".bin";
  std::vector<uint8_t> payload;
  std::string why;
  EntryRead read = read_entry(path, kPlanMagic, key, &payload, &why);
  if (read == EntryRead::kLoaded) {
    MemoryPlan plan;
    why = decode(payload, items, alignment, &plan);
    if (why.empty()) {
      cache.source = "loaded from " + path;
      return plan;
    }
    read = EntryRead::kInvalid;
  }
  if (read == EntryRead::kInvalid) {
    ++cache.rejected;
    if (cache.trace)
      std::fprintf(stderr, "cltrain opencl: cache entry %s %s; planning again\n", path.c_str(), why.c_str());
  }

  MemoryPlan plan = plan_memory(items, alignment);
  cache.source = "computed (" + plan.algorithm + ")";
  if (!check_plan(items, plan, alignment).empty()) return plan;  // never saved; the caller reports it
  try {
    write_entry(path, kPlanMagic, key, encode(plan, items, alignment));
    cache.source += ", saved to " + path;
  } catch (const std::exception& e) {
    cache.source += std::string(", not saved: ") + e.what();
  }
  return plan;
}

}  // namespace cltrain::ocl
