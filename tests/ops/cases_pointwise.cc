// LEAKY_RELU, ELU, ABS, SQUARE, EXP, SQRT, LOG: forward in [x] out [y], backward in [x, dy] out
// [dx]. Against the double reference (std::exp, std::expm1, std::log, std::sqrt), the numerics'
// float definition (bit for bit: clt_pointwise) and finite differences on inputs away from the
// kinks and inside the domain; edge cases without finite differences: values far out on both
// sides, zeros of both signs, ELU's tiny negatives (expm1's cancellation), LOG and SQRT of tiny
// and huge values (LOG of a subnormal: CpuNumerics.LogAnyCoversEveryFloat; its dx overflows).
#include <cmath>
#include <functional>
#include <type_traits>

#include "numerics.h"
#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

struct Pointwise {
  const char* name;
  int32_t op;
  int fn;                                 // CLT_PW_*
  float lo, hi;                           // the inputs' range for finite differences
  std::vector<float> edges;               // more inputs, checked without finite differences
  std::function<double(double)> f, grad;  // the true function and its derivative (alpha 0.2)
};

constexpr float kAlpha = 0.2f;

OpCase pointwise_case(const Pointwise& p, const std::string& tag, std::vector<int32_t> dims, bool edges) {
  OpCase c;
  c.name = std::string(p.name) + "_" + tag;
  c.op = p.op;
  const int32_t x = c.input("x", dims);
  TensorSpec& t = c.tensors[x];
  t.fill = Fill::Values;
  t.values.resize(element_count(dims));
  for (size_t i = 0; i < t.values.size(); ++i) {
    float v = p.lo + (p.hi - p.lo) * static_cast<float>((i * 7919) % 1000) / 1000.0f;
    if (p.lo < 0.0f && std::fabs(v) < 0.05f) v = v < 0.0f ? -0.05f : 0.05f;  // off the kink at 0
    t.values[i] = edges && i < p.edges.size() ? p.edges[i] : v;
  }
  const int32_t y = c.output("y", dims);
  const int32_t dy = c.input("dy", dims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", dims, CLTRAIN_ROLE_BACK_PROP);
  cltrain_op_params params{};
  params.alpha = kAlpha;
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {x}, {y}, params);
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {x, dy}, {dx}, params);
  c.y = y;
  c.dy = dy;
  c.grads = {{x, dx}};
  c.fd_samples = edges ? 0 : 48;
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 2e-6;
  c.tol.fd_eps = 1e-3;
  c.tol.fd_tol = 1e-2;
  const int fn = p.fn;
  const auto f = p.f, grad = p.grad;
  c.reference = [=](const Values& in) {
    std::vector<double> yv(in.at(x).size()), dxv(yv.size());
    for (size_t i = 0; i < yv.size(); ++i) yv[i] = f(in.at(x)[i]), dxv[i] = in.at(dy)[i] * grad(in.at(x)[i]);
    return Values{{y, yv}, {dx, dxv}};
  };
  c.exact = [=](const Floats& in) {
    std::vector<float> yv(in.at(x).size()), dxv(yv.size());
    for (size_t i = 0; i < yv.size(); ++i) {
      yv[i] = clt_pointwise(fn, in.at(x)[i], kAlpha);
      dxv[i] = clt_pointwise_grad(fn, in.at(x)[i], in.at(dy)[i], kAlpha);
    }
    return Floats{{y, yv}, {dx, dxv}};
  };
  return c;
}

std::vector<OpCase> make_cases() {
  const double a = kAlpha;
  const std::vector<Pointwise> ops = {
      {"LeakyRelu",
       CLTRAIN_OP_LEAKY_RELU,
       CLT_PW_LEAKY_RELU,
       -3.0f,
       3.0f,
       {0.0f, -0.0f, -1e30f, 1e30f, -1e-30f},
       [=](double v) { return v > 0 ? v : a * v; },
       [=](double v) { return v > 0 ? 1.0 : a; }},
      {"Elu",
       CLTRAIN_OP_ELU,
       CLT_PW_ELU,
       -4.0f,
       2.0f,
       {0.0f, -0.0f, -1e-7f, -1e-4f, -0.3f, -30.0f, -100.0f, 50.0f},
       [](double v) { return v > 0 ? v : std::expm1(v); },
       [](double v) { return v > 0 ? 1.0 : std::exp(v); }},
      {"Abs",
       CLTRAIN_OP_ABS,
       CLT_PW_ABS,
       -3.0f,
       3.0f,
       {0.0f, -0.0f, -1e30f, 1e30f},
       [](double v) { return std::fabs(v); },
       [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }},
      {"Square",
       CLTRAIN_OP_SQUARE,
       CLT_PW_SQUARE,
       -3.0f,
       3.0f,
       {0.0f, -0.0f, -1e15f, 1e-20f},
       [](double v) { return v * v; },
       [](double v) { return 2 * v; }},
      {"Exp",
       CLTRAIN_OP_EXP,
       CLT_PW_EXP,
       -4.0f,
       4.0f,
       {0.0f, -0.0f, -100.0f, -87.0f, 80.0f, 1e-8f},
       [](double v) { return std::exp(v); },
       [](double v) { return std::exp(v); }},
      {"Sqrt",
       CLTRAIN_OP_SQRT,
       CLT_PW_SQRT,
       0.25f,
       4.0f,
       {1e-30f, 1e30f, 1e-40f, 2.0f},
       [](double v) { return std::sqrt(v); },
       [](double v) { return 0.5 / std::sqrt(v); }},
      {"Log",
       CLTRAIN_OP_LOG,
       CLT_PW_LOG,
       0.25f,
       4.0f,
       {1e-30f, 1e30f, 1.0f, 3e38f, 1.5f},
       [](double v) { return std::log(v); },
       [](double v) { return 1.0 / v; }},
  };
  std::vector<OpCase> out;
  for (const Pointwise& p : ops) {
    out.push_back(pointwise_case(p, "x4x9", {4, 9}, false));
    out.push_back(pointwise_case(p, "n2_s8_c16", {2, 8, 16}, false));
    out.push_back(pointwise_case(p, "edges_x3x37", {3, 37}, true));
  }
  return out;
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
