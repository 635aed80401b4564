// UPDATE_SGD in [grad] out [W] and UPDATE_ADAM in [grad] out [W, m, v] (update phase), over
// several iterations with a new gradient each, against the update rule in double. The run's
// learning rate overrides the step's when > 0; Adam's bias correction uses t = the iteration.
#include <cmath>

#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

OpCase sgd_case(const std::string& tag, std::vector<int32_t> dims, float lr, float lr_override) {
  OpCase c;
  c.name = "SGD_" + tag;
  c.op = CLTRAIN_OP_UPDATE_SGD;
  const int32_t grad = c.input("grad", dims);
  c.tensors[grad].role = CLTRAIN_ROLE_GRADIENT;
  const int32_t w = c.weight("W", dims);
  cltrain_op_params p{};
  p.learning_rate = lr;
  c.step(CLTRAIN_OP_UPDATE_SGD, CLTRAIN_PHASE_UPDATE, {grad}, {w}, p);
  c.stateful = true;
  c.iterations = 2;
  c.lr_override = lr_override;
  c.fresh = {grad};
  c.state = {w};
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-6;
  const double rate = lr_override > 0.0f ? lr_override : lr;
  c.reference_step = [=](Values& v, int64_t) {
    for (size_t i = 0; i < v[w].size(); ++i) v[w][i] -= rate * v[grad][i];
  };
  return c;
}

OpCase adam_case(const std::string& tag, std::vector<int32_t> dims, float lr, float beta1, float beta2, float eps,
                 float lr_override) {
  OpCase c;
  c.name = "Adam_" + tag;
  c.op = CLTRAIN_OP_UPDATE_ADAM;
  const int32_t grad = c.input("grad", dims);
  c.tensors[grad].role = CLTRAIN_ROLE_GRADIENT;
  const int32_t w = c.weight("W", dims);
  TensorSpec var;
  var.dims = dims;
  var.role = CLTRAIN_ROLE_OPTIMIZER;
  var.persistent = true;
  var.fill = Fill::None;  // the backend starts optimizer variables at zero
  var.name = "m";
  const int32_t m = c.add(var);
  var.name = "v";
  const int32_t v = c.add(var);
  cltrain_op_params p{};
  p.learning_rate = lr;
  p.beta1 = beta1;
  p.beta2 = beta2;
  p.epsilon = eps;
  c.step(CLTRAIN_OP_UPDATE_ADAM, CLTRAIN_PHASE_UPDATE, {grad}, {w, m, v}, p);
  c.stateful = true;
  c.iterations = 3;
  c.lr_override = lr_override;
  c.fresh = {grad};
  c.state = {w, m, v};
  c.tol.vs_cpu = 1e-5;
  c.tol.vs_reference = 1e-5;
  const double rate = lr_override > 0.0f ? lr_override : lr;
  const double b1 = beta1, b2 = beta2, e = eps;
  c.reference_step = [=](Values& x, int64_t t) {
    const double step = rate * std::sqrt(1.0 - std::pow(b2, static_cast<double>(t))) /
                        (1.0 - std::pow(b1, static_cast<double>(t)));
    for (size_t i = 0; i < x[w].size(); ++i) {
      const double g = x[grad][i];
      x[m][i] = b1 * x[m][i] + (1.0 - b1) * g;
      x[v][i] = b2 * x[v][i] + (1.0 - b2) * g * g;
      x[w][i] -= step * x[m][i] / (std::sqrt(x[v][i]) + e);
    }
  };
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      sgd_case("w7x10", {7, 10}, 0.1f, 0.0f),
      sgd_case("lr_override_b64", {64}, 0.1f, 0.05f),
      adam_case("w7x10", {7, 10}, 0.01f, 0.9f, 0.999f, 1e-7f, 0.0f),
      adam_case("lr_override_w4x32", {4, 32}, 0.01f, 0.8f, 0.99f, 1e-5f, 0.003f),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
