// CHECK_FINITE (backward phase): in [x0, x1, ...] out [flag] (read and written): flag = 1 where any
// element of any input is NaN or Inf, else unchanged. Inputs of several sizes (the kernel lays them
// end to end), with a NaN, an Inf or a -Inf at the first, a middle or the last element of one input,
// and a flag that is already set.
#include <cmath>
#include <limits>

#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

// sizes: the inputs' element counts; bad: (input, element, value) written into an input, or
// input -1 for none; flag0: the flag before the step.
OpCase check_case(const std::string& tag, const std::vector<int32_t>& sizes, int bad_input, int32_t bad_element,
                  float bad_value, float flag0) {
  OpCase c;
  c.name = "CheckFinite_" + tag;
  c.op = CLTRAIN_OP_CHECK_FINITE;
  std::vector<int32_t> in;
  for (size_t i = 0; i < sizes.size(); ++i) {
    TensorSpec t;
    t.name = "x" + std::to_string(i);
    t.dims = {sizes[i]};
    t.role = CLTRAIN_ROLE_GRADIENT;
    t.fill = Fill::Values;
    t.values.resize(static_cast<size_t>(sizes[i]));
    for (int32_t k = 0; k < sizes[i]; ++k) t.values[static_cast<size_t>(k)] = 1e30f * ((k % 7) - 3.0f) + 0.5f * k;
    if (static_cast<int>(i) == bad_input) t.values[static_cast<size_t>(bad_element)] = bad_value;
    in.push_back(c.add(t));
  }
  TensorSpec f;
  f.name = "flag";
  f.dims = {1};
  f.fill = Fill::Values;
  f.values = {flag0};
  const int32_t flag = c.add(f);
  c.step(CLTRAIN_OP_CHECK_FINITE, CLTRAIN_PHASE_BACKWARD, in, {flag});
  c.stateful = true;
  c.iterations = 1;
  c.state = {flag};
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 0.0;
  c.reference_step = [=](Values& v, int64_t) {
    for (int32_t t : in)
      for (double x : v[t])
        if (!std::isfinite(x)) v[flag][0] = 1.0;
  };
  return c;
}

std::vector<OpCase> make_cases() {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  return {
      check_case("finite_x1", {1}, -1, 0, 0.0f, 0.0f),  // the loss alone, finite
      check_case("finite_8_inputs", {5, 1, 300, 7, 64, 2, 1000, 3}, -1, 0, 0.0f, 0.0f),
      check_case("nan_first", {17, 40}, 0, 0, nan, 0.0f),
      check_case("inf_middle_of_8", {5, 1, 300, 7, 64, 2, 1000, 3}, 6, 500, inf, 0.0f),
      check_case("minus_inf_last", {33, 129, 4}, 2, 3, -inf, 0.0f),
      check_case("set_stays_set", {9, 70}, -1, 0, 0.0f, 1.0f),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
