#include "op_case.h"

#include <algorithm>
#include <stdexcept>

namespace cltrain {
namespace optest {

int32_t OpCase::add(TensorSpec t) {
  tensors.push_back(std::move(t));
  return static_cast<int32_t>(tensors.size() - 1);
}

int32_t OpCase::input(const std::string& n, std::vector<int32_t> dims, float scale) {
  TensorSpec t;
  t.name = n;
  t.dims = std::move(dims);
  t.scale = scale;
  return add(std::move(t));
}

int32_t OpCase::output(const std::string& n, std::vector<int32_t> dims, int32_t role) {
  TensorSpec t;
  t.name = n;
  t.dims = std::move(dims);
  t.role = role;
  t.fill = Fill::Output;
  return add(std::move(t));
}

int32_t OpCase::weight(const std::string& n, std::vector<int32_t> dims, float scale) {
  TensorSpec t;
  t.name = n;
  t.dims = std::move(dims);
  t.role = CLTRAIN_ROLE_TRAINABLE;
  t.persistent = true;
  t.scale = scale;
  return add(std::move(t));
}

void OpCase::step(int32_t op_, int32_t phase, std::vector<int32_t> in, std::vector<int32_t> out,
                  const cltrain_op_params& params) {
  cltrain_step_desc s{};
  s.op = op_;
  s.phase = phase;
  s.model_op = 0;
  s.num_inputs = static_cast<int32_t>(in.size());
  s.num_outputs = static_cast<int32_t>(out.size());
  std::copy(in.begin(), in.end(), s.inputs);
  std::copy(out.begin(), out.end(), s.outputs);
  s.params = params;
  steps.push_back(s);
}

uint64_t element_count(const std::vector<int32_t>& dims) {
  uint64_t n = 1;
  for (int32_t d : dims) n *= static_cast<uint64_t>(d);
  return n;
}

namespace {

std::vector<std::vector<OpCase> (*)()>& factories() {
  static std::vector<std::vector<OpCase> (*)()> f;
  return f;
}

}  // namespace

RegisterCases::RegisterCases(std::vector<OpCase> (*make)()) { factories().push_back(make); }

const std::vector<OpCase>& all_cases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> all;
    for (auto make : factories())
      for (OpCase& c : make()) all.push_back(std::move(c));
    std::sort(all.begin(), all.end(), [](const OpCase& a, const OpCase& b) { return a.name < b.name; });
    for (size_t i = 1; i < all.size(); ++i)
      if (all[i].name == all[i - 1].name) throw std::logic_error("two op cases named " + all[i].name);
    return all;
  }();
  return cases;
}

}  // namespace optest
}  // namespace cltrain
