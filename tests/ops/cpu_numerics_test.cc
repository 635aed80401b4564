// The CPU backend computes exactly what cltrain_backend.h's Numerics define. For the ops whose
// CPU code tiles, vectorizes and threads its chains (FULLY_CONNECTED, CONV_2D,
// DEPTHWISE_CONV_2D), every op case is recomputed here by the plain scalar definition in float
// (one std::fma chain per output, in the stated order) and must match bit for bit; and the
// portable std::fma path must give the same bits as the AVX2 path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fma_chain.h"
#include "numerics.h"
#include "op_harness.h"
#include "reference.h"

namespace cltrain {
namespace optest {
namespace {

using Floats = std::vector<float>;

float act_of(int32_t act, float z) {
  switch (act) {
    case CLTRAIN_ACT_RELU: return z < 0.0f ? 0.0f : z;
    case CLTRAIN_ACT_RELU6: return z < 0.0f ? 0.0f : (z > 6.0f ? 6.0f : z);
    case CLTRAIN_ACT_RELU_N1_TO_1: return z < -1.0f ? -1.0f : (z > 1.0f ? 1.0f : z);
    case CLTRAIN_ACT_TANH: {
      const float e = clt_exp(-2.0f * std::fabs(z));
      const float t = (1.0f - e) / (1.0f + e);
      return z < 0.0f ? -t : t;
    }
    default: return z;
  }
}

float dz_of(int32_t act, float y, float dy) {
  switch (act) {
    case CLTRAIN_ACT_RELU: return y > 0.0f ? dy : 0.0f;
    case CLTRAIN_ACT_RELU6: return (y > 0.0f && y < 6.0f) ? dy : 0.0f;
    case CLTRAIN_ACT_RELU_N1_TO_1: return (y > -1.0f && y < 1.0f) ? dy : 0.0f;
    case CLTRAIN_ACT_TANH: return dy * (1.0f - y * y);
    default: return dy;
  }
}

// Outputs of the case's two steps by tensor id, from the scalar definitions.
using Result = std::map<int32_t, Floats>;

Result fully_connected(const OpCase& c, const CaseInputs& in) {
  const cltrain_step_desc &f = c.steps[0], &bw = c.steps[1];
  const int32_t act = f.params.activation;
  const Floats& x = in.initial.at(f.inputs[0]);
  const Floats& w = in.initial.at(f.inputs[1]);
  const int64_t M = c.tensors[f.inputs[1]].dims[0], K = c.tensors[f.inputs[1]].dims[1], N = x.size() / K;
  Floats y(N * M), dz(N * M);
  const Floats& dy = in.initial.at(bw.inputs[3]);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(x[n * K + k], w[m * K + k], acc);
      if (f.inputs[2] >= 0) acc = acc + in.initial.at(f.inputs[2])[m];
      y[n * M + m] = act_of(act, acc);
      dz[n * M + m] = dz_of(act, y[n * M + m], dy[n * M + m]);
    }
  Result r{{f.outputs[0], y}};
  if (bw.outputs[0] >= 0) {
    Floats dx(N * K);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        float acc = 0.0f;
        for (int64_t m = 0; m < M; ++m) acc = std::fma(dz[n * M + m], w[m * K + k], acc);
        dx[n * K + k] = acc;
      }
    r[bw.outputs[0]] = dx;
  }
  if (bw.outputs[1] >= 0) {
    Floats dw(M * K);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        float acc = 0.0f;
        for (int64_t n = 0; n < N; ++n) acc = std::fma(dz[n * M + m], x[n * K + k], acc);
        dw[m * K + k] = acc;
      }
    r[bw.outputs[1]] = dw;
  }
  if (bw.outputs[2] >= 0) {
    Floats db(M, 0.0f);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) db[m] = db[m] + dz[n * M + m];
    r[bw.outputs[2]] = db;
  }
  return r;
}

Result convolution(const OpCase& c, const CaseInputs& in) {
  const bool depthwise = c.op == CLTRAIN_OP_DEPTHWISE_CONV_2D;
  const cltrain_step_desc &f = c.steps[0], &bw = c.steps[1];
  const cltrain_op_params& p = f.params;
  const std::vector<int32_t>& xd = c.tensors[f.inputs[0]].dims;
  const std::vector<int32_t>& wd = c.tensors[f.inputs[1]].dims;
  const Floats& x = in.initial.at(f.inputs[0]);
  const Floats& w = in.initial.at(f.inputs[1]);
  const Floats& dy = in.initial.at(bw.inputs[3]);
  const int64_t N = xd[0], I = xd[3], KH = wd[1], KW = wd[2];
  const int64_t O = depthwise ? wd[3] : wd[0], M = depthwise ? O / I : 1;
  const RefAxis ah(p.padding, xd[1], KH, p.stride_h, p.dilation_h), aw(p.padding, xd[2], KW, p.stride_w, p.dilation_w);
  auto xi = [&](int64_t n, int64_t ih, int64_t iw, int64_t i) { return ((n * ah.in + ih) * aw.in + iw) * I + i; };
  auto yi = [&](int64_t n, int64_t oh, int64_t ow, int64_t o) { return ((n * ah.out + oh) * aw.out + ow) * O + o; };
  auto wi = [&](int64_t o, int64_t kh, int64_t kw, int64_t i) {
    return depthwise ? (kh * KW + kw) * O + o : ((o * KH + kh) * KW + kw) * I + i;
  };
  Floats y(N * ah.out * aw.out * O), dz(y.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < ah.out; ++oh)
      for (int64_t ow = 0; ow < aw.out; ++ow)
        for (int64_t o = 0; o < O; ++o) {
          float acc = 0.0f;
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t ih = ah.pos(oh, kh), iw = aw.pos(ow, kw);
              if (!ah.inside(ih) || !aw.inside(iw)) continue;
              if (depthwise)
                acc = std::fma(x[xi(n, ih, iw, o / M)], w[wi(o, kh, kw, 0)], acc);
              else
                for (int64_t i = 0; i < I; ++i) acc = std::fma(x[xi(n, ih, iw, i)], w[wi(o, kh, kw, i)], acc);
            }
          if (f.inputs[2] >= 0) acc = acc + in.initial.at(f.inputs[2])[o];
          const int64_t at = yi(n, oh, ow, o);
          y[at] = act_of(p.activation, acc);
          dz[at] = dz_of(p.activation, y[at], dy[at]);
        }
  Result r{{f.outputs[0], y}};
  if (bw.outputs[1] >= 0) {  // dW: chains over (n, oh, ow)
    Floats dw(w.size());
    for (int64_t o = 0; o < O; ++o)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          for (int64_t i = 0; i < (depthwise ? 1 : I); ++i) {
            float acc = 0.0f;
            for (int64_t n = 0; n < N; ++n)
              for (int64_t oh = 0; oh < ah.out; ++oh)
                for (int64_t ow = 0; ow < aw.out; ++ow) {
                  const int64_t ih = ah.pos(oh, kh), iw = aw.pos(ow, kw);
                  if (!ah.inside(ih) || !aw.inside(iw)) continue;
                  acc = std::fma(dz[yi(n, oh, ow, o)], x[xi(n, ih, iw, depthwise ? o / M : i)], acc);
                }
            dw[wi(o, kh, kw, i)] = acc;
          }
    r[bw.outputs[1]] = dw;
  }
  if (bw.outputs[2] >= 0) {
    Floats db(O, 0.0f);
    for (size_t k = 0; k < dz.size(); ++k) db[k % O] = db[k % O] + dz[k];
    r[bw.outputs[2]] = db;
  }
  if (bw.outputs[0] >= 0) {  // dx: a sum over (kh, kw) of chains over the output channels
    Floats dx(x.size());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ih = 0; ih < ah.in; ++ih)
        for (int64_t iw = 0; iw < aw.in; ++iw)
          for (int64_t i = 0; i < I; ++i) {
            float s = 0.0f;
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t th = ih + ah.pad - kh * ah.dilation, tw = iw + aw.pad - kw * aw.dilation;
                if (th < 0 || tw < 0 || th % ah.stride || tw % aw.stride) continue;
                const int64_t oh = th / ah.stride, ow = tw / aw.stride;
                if (oh >= ah.out || ow >= aw.out) continue;
                float t = 0.0f;
                if (depthwise)
                  for (int64_t j = 0; j < M; ++j)
                    t = std::fma(dz[yi(n, oh, ow, i * M + j)], w[wi(i * M + j, kh, kw, 0)], t);
                else
                  for (int64_t o = 0; o < O; ++o) t = std::fma(dz[yi(n, oh, ow, o)], w[wi(o, kh, kw, i)], t);
                s = s + t;
              }
            // With dx_activation: the producer's derivative, a select on x at the same element.
            dx[xi(n, ih, iw, i)] = dz_of(bw.params.dx_activation, x[xi(n, ih, iw, i)], s);
          }
    r[bw.outputs[0]] = dx;
  }
  return r;
}

std::vector<const OpCase*> tiled_cases() {
  std::vector<const OpCase*> out;
  for (const OpCase& c : all_cases())
    if (c.op == CLTRAIN_OP_FULLY_CONNECTED || c.op == CLTRAIN_OP_CONV_2D || c.op == CLTRAIN_OP_DEPTHWISE_CONV_2D)
      out.push_back(&c);
  return out;
}

Outputs run_on_cpu(const OpCase& c, const CaseInputs& in) {
  std::string skip, error;
  std::unique_ptr<Backend> cpu = open_test_backend("cpu", &skip, &error);
  if (!cpu) throw std::runtime_error(error);
  RunOptions o;
  o.finite_differences = false;
  o.is_cpu = true;
  return run_case(c, *cpu, in, o);
}

TEST(CpuNumerics, ChainsAreTheScalarDefinition) {
  const std::vector<const OpCase*> cases = tiled_cases();
  ASSERT_GE(cases.size(), 10u);
  for (const OpCase* c : cases) {
    SCOPED_TRACE(c->name);
    const CaseInputs in = make_inputs(*c);
    const Result want = c->op == CLTRAIN_OP_FULLY_CONNECTED ? fully_connected(*c, in) : convolution(*c, in);
    Outputs expected(1);
    for (const auto& [t, v] : want) expected[0][t] = v;
    expect_outputs_bitwise(*c, run_on_cpu(*c, in), expected, "cpu vs the scalar definition");
  }
}

TEST(CpuNumerics, PortablePathGivesTheSameBits) {
  if (!cpu::simd_enabled()) GTEST_SKIP() << "no AVX2 + FMA here: only the portable path runs";
  for (const OpCase* c : tiled_cases()) {
    SCOPED_TRACE(c->name);
    const CaseInputs in = make_inputs(*c);
    const Outputs simd = run_on_cpu(*c, in);
    cpu::set_simd_allowed(false);
    const Outputs portable = run_on_cpu(*c, in);
    cpu::set_simd_allowed(true);
    expect_outputs_bitwise(*c, portable, simd, "std::fma path vs AVX2 path");
  }
}

// LOG's clt_log_any over the positive floats (every 997th bit pattern, subnormals included)
// within 4 float ulp of the true log, and its special values; ELU's clt_expm1 within 4 ulp of
// std::expm1 over [-88, 0] (where clt_exp(x) - 1 would lose every digit near 0).
TEST(CpuNumerics, LogAnyCoversEveryFloat) {
  const auto ulps = [](float got, double want) {
    const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
    return std::fabs(static_cast<double>(got) - want) / ulp;
  };
  double worst = 0;
  for (uint32_t bits = 1; bits < 0x7f800000u; bits += 997) {
    float x;
    std::memcpy(&x, &bits, 4);
    const double want = std::log(static_cast<double>(x));
    if (want == 0.0) continue;
    worst = std::max(worst, ulps(clt_log_any(x), want));
  }
  EXPECT_LE(worst, 4.0);
  EXPECT_TRUE(std::isnan(clt_log_any(-1.0f)));
  EXPECT_TRUE(std::isnan(clt_log_any(std::nanf(""))));
  EXPECT_EQ(clt_log_any(0.0f), -INFINITY);
  EXPECT_EQ(clt_log_any(-0.0f), -INFINITY);
  EXPECT_EQ(clt_log_any(INFINITY), INFINITY);
  double worst_expm1 = 0;
  for (float x = -88.0f; x < -1e-30f; x *= 0.999f) {
    worst_expm1 = std::max(worst_expm1, ulps(clt_expm1(x), std::expm1(static_cast<double>(x))));
  }
  EXPECT_LE(worst_expm1, 4.0);
  EXPECT_EQ(clt_expm1(0.0f), 0.0f);
  EXPECT_EQ(clt_expm1(-200.0f), -1.0f);
}

}  // namespace
}  // namespace optest
}  // namespace cltrain
