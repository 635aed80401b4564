#include "case_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <numeric>

namespace cltrain {
namespace optest {
namespace {

constexpr uint32_t kGuardBits = 0xA5A55A5Au;

uint64_t bytes_of(const cltrain_tensor_desc& t) {
  uint64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= static_cast<uint64_t>(t.dims[i]);
  return n * (t.dtype == CLTRAIN_UINT8 ? 1 : sizeof(float));
}

// A guard's bytes: kGuardBits repeated, little-endian (a float guard holds those bits in every element).
std::vector<uint8_t> guard_bytes(uint64_t n) {
  std::vector<uint8_t> b(n);
  for (uint64_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(kGuardBits >> (8 * (i % 4)));
  return b;
}

}  // namespace

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::set<int32_t> step_outputs(const OpCase& c, const std::vector<int>& steps) {
  std::set<int32_t> out;
  for (int s : steps)
    for (int i = 0; i < c.steps[s].num_outputs; ++i)
      if (c.steps[s].outputs[i] >= 0) out.insert(c.steps[s].outputs[i]);
  return out;
}

std::vector<int> all_steps(const OpCase& c) {
  std::vector<int> s(c.steps.size());
  std::iota(s.begin(), s.end(), 0);
  return s;
}

CaseGraph::CaseGraph(const OpCase& c, const CaseInputs* in) {
  const std::set<int32_t> outputs = step_outputs(c, all_steps(c));
  const int32_t last = std::max<int32_t>(static_cast<int32_t>(c.steps.size()), 1) - 1;
  struct Entry {
    std::string name;
    const TensorSpec* spec;
    int32_t case_id;  // -1 for a guard
  };
  std::vector<Entry> entries;
  for (int32_t t = 0; t < static_cast<int32_t>(c.tensors.size()); ++t) {
    const TensorSpec& s = c.tensors[t];
    const bool guard = outputs.count(t) > 0;
    if (guard) entries.push_back({"guard_before/" + s.name, &s, -1});
    entries.push_back({s.name, &s, t});
    if (guard) entries.push_back({"guard_after/" + s.name, &s, -1});
  }
  names.reserve(entries.size());
  for (const Entry& e : entries) names.push_back(e.name);
  id.assign(c.tensors.size(), -1);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    cltrain_tensor_desc d{};
    d.name = names[i].c_str();
    d.rank = static_cast<int32_t>(e.spec->dims.size());
    std::copy(e.spec->dims.begin(), e.spec->dims.end(), d.dims);
    d.dtype = e.spec->dtype;
    d.role = e.case_id < 0 ? CLTRAIN_ROLE_NON_CONST : e.spec->role;
    d.first_step = 0;
    d.last_step = last;
    d.persistent = e.case_id >= 0 && e.spec->persistent;
    if (e.case_id >= 0) {
      id[e.case_id] = static_cast<int32_t>(i);
      // Trainable initial values go in through prepare, as the host does it.
      if (in && e.spec->role == CLTRAIN_ROLE_TRAINABLE && in->initial.count(e.case_id)) {
        const std::vector<float>& v = in->initial.at(e.case_id);
        d.data = v.data();
        d.data_bytes = v.size() * sizeof(float);
      }
    }
    tensors.push_back(d);
  }
  for (size_t i = 1; i + 1 < entries.size(); ++i)
    if (entries[i].case_id >= 0 && outputs.count(entries[i].case_id))
      guarded.push_back({static_cast<int32_t>(i), static_cast<int32_t>(i - 1), static_cast<int32_t>(i + 1)});
  for (cltrain_step_desc s : c.steps) {
    for (int i = 0; i < s.num_inputs; ++i) s.inputs[i] = s.inputs[i] < 0 ? -1 : id[s.inputs[i]];
    for (int i = 0; i < s.num_outputs; ++i) s.outputs[i] = s.outputs[i] < 0 ? -1 : id[s.outputs[i]];
    steps.push_back(s);
  }
  assigned.assign(steps.size(), 1);
}

cltrain_graph_desc CaseGraph::desc() const {
  return cltrain_graph(tensors.data(), static_cast<int32_t>(tensors.size()), steps.data(),
                       static_cast<int32_t>(steps.size()), assigned.data());
}

CaseRun::CaseRun(const OpCase& c, Backend& b, const CaseInputs& in, bool is_cpu) : c_(c), b_(b), g_(c, &in) {
  const cltrain_memory_report report = b_.prepare(g_.desc());
  check_report(report, is_cpu);
  check_layout(is_cpu);
  for (const auto& [id, v] : in.initial)
    if (!g_.tensors[g_.id[id]].data) write(id, v);
  for (int32_t t = 0; t < static_cast<int32_t>(c.tensors.size()); ++t)
    if (c.tensors[t].fill == Fill::Output)
      write(t, std::vector<float>(element_count(c.tensors[t].dims), std::numeric_limits<float>::quiet_NaN()));
  for (const auto& gd : g_.guarded)
    for (int32_t guard : {gd.before, gd.after}) {
      const std::vector<uint8_t> bytes = guard_bytes(bytes_of(g_.tensors[guard]));
      b_.write(guard, bytes.data(), bytes.size());
    }
}

std::vector<float> CaseRun::read(int32_t t) {
  std::vector<float> v(element_count(c_.tensors[t].dims));
  if (c_.tensors[t].dtype == CLTRAIN_UINT8) {
    std::vector<uint8_t> bytes(v.size());
    b_.read(g_.id[t], bytes.data(), bytes.size());
    std::copy(bytes.begin(), bytes.end(), v.begin());
    return v;
  }
  if (c_.tensors[t].dtype == CLTRAIN_INT32) {
    std::vector<int32_t> ints(v.size());
    b_.read(g_.id[t], ints.data(), ints.size() * sizeof(int32_t));
    std::copy(ints.begin(), ints.end(), v.begin());
    return v;
  }
  b_.read(g_.id[t], v.data(), v.size() * sizeof(float));
  return v;
}
void CaseRun::write(int32_t t, const std::vector<float>& v) { write_graph(g_.id[t], v); }

void CaseRun::run(int step, const cltrain_run_args& args) { b_.run({step}, args); }

Checkpoint CaseRun::read_all() {
  Checkpoint all;
  for (int32_t t = 0; t < static_cast<int32_t>(c_.tensors.size()); ++t) all[t] = read(t);
  return all;
}

void CaseRun::expect_unchanged(const Checkpoint& before, const Checkpoint& after, const std::set<int32_t>& may_change,
                               const std::string& when) {
  for (const auto& [t, v] : before)
    if (!may_change.count(t) && !same_bits(v, after.at(t)))
      ADD_FAILURE() << b_.name() << ": " << c_.tensors[t].name << " changed " << when
                    << ", though no step of it writes that tensor";
}

void CaseRun::expect_guards_intact(const std::string& when) {
  for (const auto& gd : g_.guarded)
    for (int32_t guard : {gd.before, gd.after}) {
      const std::vector<uint8_t> want = guard_bytes(bytes_of(g_.tensors[guard]));
      std::vector<uint8_t> got(want.size());
      b_.read(guard, got.data(), got.size());
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i] && bad++ == 0) first = i;
      if (bad)
        ADD_FAILURE() << b_.name() << ": " << bad << " of " << got.size() << " bytes of " << g_.names[guard]
                      << " were overwritten " << when << " (first at byte " << first << " = "
                      << static_cast<int>(got[first]) << "): an out-of-bounds write next to " << g_.names[gd.output];
    }
}

void CaseRun::write_graph(int32_t gid, const std::vector<float>& v) {
  if (g_.tensors[gid].dtype == CLTRAIN_UINT8) {  // NaN (an output's fill) and anything out of range: 255
    std::vector<uint8_t> bytes(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      bytes[i] = v[i] >= 0.0f && v[i] <= 255.0f ? static_cast<uint8_t>(v[i]) : uint8_t{255};
    b_.write(gid, bytes.data(), bytes.size());
    return;
  }
  if (g_.tensors[gid].dtype == CLTRAIN_INT32) {  // whole numbers (ids); NaN (an output's fill): INT32_MIN
    std::vector<int32_t> ints(v.size());
    for (size_t i = 0; i < v.size(); ++i) ints[i] = std::isnan(v[i]) ? INT32_MIN : static_cast<int32_t>(v[i]);
    b_.write(gid, ints.data(), ints.size() * sizeof(int32_t));
    return;
  }
  b_.write(gid, v.data(), v.size() * sizeof(float));
}

void CaseRun::check_report(const cltrain_memory_report& r, bool exact) {
  uint64_t role_bytes[CLTRAIN_ROLE_COUNT] = {};
  for (const auto& t : g_.tensors) role_bytes[t.role] += bytes_of(t);
  EXPECT_GE(r.pool_bytes, r.lower_bound) << b_.name() << ": memory report";
  EXPECT_GE(r.num_tensors, g_.tensors.size()) << b_.name() << ": memory report";
  for (int role = 0; role < CLTRAIN_ROLE_COUNT; ++role) {
    // Every tensor lives at every step, so each role peaks at the sum of its tensors.
    if (exact)
      EXPECT_EQ(r.role_peak[role], role_bytes[role]) << b_.name() << ": role " << role << " peak";
    else
      EXPECT_GE(r.role_peak[role], role_bytes[role]) << b_.name() << ": role " << role << " peak";
  }
}

// The guards only catch what lands next to an output: check that they do lie there.
void CaseRun::check_layout(bool exact) {
  const std::vector<int64_t> off = b_.plan_offsets(static_cast<int32_t>(g_.tensors.size()));
  if (off.empty()) return;
  for (const auto& gd : g_.guarded) {
    const int64_t o = off[gd.output];
    int64_t below = -1, above = -1;  // the nearest planned tensors before and after the output
    for (size_t t = 0; t < off.size(); ++t) {
      if (static_cast<int32_t>(t) == gd.output || off[t] < 0) continue;
      if (off[t] < o && (below < 0 || off[t] > off[below])) below = static_cast<int64_t>(t);
      if (off[t] > o && (above < 0 || off[t] < off[above])) above = static_cast<int64_t>(t);
    }
    const bool ok = below == gd.before && above == gd.after;
    if (exact)
      EXPECT_TRUE(ok) << b_.name() << ": " << g_.names[gd.output] << " is not planned between its guards";
    else if (!ok)
      std::cerr << "note: " << b_.name() << " does not plan " << g_.names[gd.output]
                << " between its guards; the guard check is weaker there\n";
  }
}

}  // namespace optest
}  // namespace cltrain
