// RELU, RELU6, TANH, LOGISTIC: forward in [x] out [y], backward in [y, dy] out [dx]; exact, bit for
// bit, against the numerics' float definitions (clt_exp), including zeros of both signs, the
// clamps' edges and saturating inputs.
#include <cmath>
#include <type_traits>

#include "op_case.h"
#include "reference.h"

namespace cltrain {
namespace optest {
namespace {

// The forward and backward of op as cltrain_ops.h defines them, in double and in float.
void set_references(OpCase& c, int32_t op, int32_t x, int32_t y, int32_t dy, int32_t dx) {
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    const auto& xv = in.at(x);
    std::vector<T> yv(xv.size()), dxv(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) {
      const T d = in.at(dy)[i];
      if (op == CLTRAIN_OP_TANH) {
        yv[i] = ref_tanh(xv[i]);
        dxv[i] = d * (T(1) - yv[i] * yv[i]);
      } else if (op == CLTRAIN_OP_LOGISTIC) {
        yv[i] = ref_logistic(xv[i]);
        dxv[i] = d * (yv[i] * (T(1) - yv[i]));
      } else {
        const int32_t act = op == CLTRAIN_OP_RELU ? CLTRAIN_ACT_RELU : CLTRAIN_ACT_RELU6;
        yv[i] = ref_act(act, xv[i]);
        dxv[i] = ref_act_grad(act, yv[i], d);
      }
    }
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
}

OpCase relu_case(const std::string& tag, std::vector<int32_t> dims) {
  OpCase c;
  c.name = "ReLU_" + tag;
  c.op = CLTRAIN_OP_RELU;
  const int32_t x = c.input("x", dims);
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  c.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_FORWARD, {x}, {y});
  c.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_BACKWARD, {y, dy}, {dx});
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.activation = CLTRAIN_ACT_RELU;
  c.tol.vs_cpu = 0.0;  // no arithmetic: exact
  set_references(c, CLTRAIN_OP_RELU, x, y, dy, dx);
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-3;
  return c;
}

// TANH and LOGISTIC go through clt_exp: within a few ulp of the double reference, and bit for
// bit the same on a device that rounds like the CPU.
OpCase smooth_case(int32_t op, const std::string& tag, std::vector<int32_t> dims, float scale) {
  OpCase c;
  c.op = op;
  const bool tanh = op == CLTRAIN_OP_TANH;
  c.name = std::string(tanh ? "Tanh_" : "Logistic_") + tag;
  const int32_t x = c.input("x", dims, scale);
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  c.step(op, CLTRAIN_PHASE_FORWARD, {x}, {y});
  c.step(op, CLTRAIN_PHASE_BACKWARD, {y, dy}, {dx});
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.tol.vs_cpu = 1e-5;
  c.tol.vs_reference = 1e-5;
  c.tol.fd_eps = 1e-3;
  c.tol.fd_tol = 1e-2;
  set_references(c, op, x, y, dy, dx);
  return c;
}

OpCase relu6_case(const std::string& tag, std::vector<int32_t> dims) {
  OpCase c = relu_case(tag, dims);
  c.name = "ReLU6_" + tag;
  c.op = CLTRAIN_OP_RELU6;
  for (auto& s : c.steps) s.op = CLTRAIN_OP_RELU6;
  c.activation = CLTRAIN_ACT_RELU6;
  c.tensors[0].scale = 8.0f;  // both clamps
  set_references(c, CLTRAIN_OP_RELU6, 0, 1, 2, 3);
  return c;
}

// Rows wider than a work-group, x uniform in [-10, 10] with the edges first: 0, 6, -0, 100, -100,
// 1e-8 (the clamps' ends, a signed zero, saturation and a tiny value).
OpCase wide_case(OpCase c, const std::string& tag) {
  c.name = c.name.substr(0, c.name.find('_') + 1) + tag;
  TensorSpec& x = c.tensors[0];
  x.fill = Fill::Values;
  x.values.resize(element_count(x.dims));
  uint32_t state = static_cast<uint32_t>(c.op) * 2654435761u + 1;
  for (float& v : x.values) {
    state = state * 1664525u + 1013904223u;
    v = -10.0f + 20.0f * static_cast<float>(state >> 8) / 16777216.0f;
  }
  const float edges[] = {0.0f, 6.0f, -0.0f, 100.0f, -100.0f, 1e-8f};
  std::copy(std::begin(edges), std::end(edges), x.values.begin());
  c.fd_samples = 0;  // the edges are kinks; the small cases take the finite differences
  return c;
}

std::vector<OpCase> make_cases() {
  return {relu_case("x4x9", {4, 9}),
          relu_case("x2x4x4x4", {2, 4, 4, 4}),
          relu_case("x32x128", {32, 128}),
          relu6_case("x4x9", {4, 9}),
          smooth_case(CLTRAIN_OP_TANH, "x3x7", {3, 7}, 3.0f),
          smooth_case(CLTRAIN_OP_LOGISTIC, "x3x7", {3, 7}, 6.0f),
          wide_case(relu_case("x3x1001", {3, 1001}), "wide_x3x1001"),
          wide_case(relu6_case("x3x1001", {3, 1001}), "wide_x3x1001"),
          wide_case(smooth_case(CLTRAIN_OP_TANH, "x3x1001", {3, 1001}, 10.0f), "wide_x3x1001"),
          wide_case(smooth_case(CLTRAIN_OP_LOGISTIC, "x3x1001", {3, 1001}, 10.0f), "wide_x3x1001")};
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
