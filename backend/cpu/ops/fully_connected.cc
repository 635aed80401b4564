// FULLY_CONNECTED: y = act(x W^T + b), W [M, K], x viewed as [N, K], y as [N, M].
#include <algorithm>
#include <cstring>
#include <sstream>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

// Rows of W kept hot while all rows of x pass over them.
constexpr uint64_t kRowBlock = 16;

// x . w with kLanes independent float partial sums (a fixed order, so deterministic), which the
// compiler can keep in vector registers instead of waiting on one running sum.
constexpr uint64_t kLanes = 8;

float dot(const float* x, const float* w, uint64_t n) {
  float lane[kLanes] = {};
  uint64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (uint64_t l = 0; l < kLanes; ++l) lane[l] += x[k + l] * w[k + l];
  float acc = 0.0f;
  for (; k < n; ++k) acc += x[k] * w[k];
  for (uint64_t l = 0; l < kLanes; ++l) acc += lane[l];
  return acc;
}

struct Dims {
  uint64_t n = 0, k = 0, m = 0;
};

std::string weight_dims(const TensorRef& w, Dims* d) {
  if (std::string e = require(w, "W"); !e.empty()) return e;
  if (w.rank() != 2 || w.dim(0) <= 0 || w.dim(1) <= 0)
    return "W " + shape_string(w) + " must be [M, K] with M, K > 0";
  d->m = static_cast<uint64_t>(w.dim(0));
  d->k = static_cast<uint64_t>(w.dim(1));
  return {};
}

std::string check_forward(const StepView& s) {
  Dims d;
  const TensorRef &x = s.in[0], &w = s.in[1], &b = s.in[2], &y = s.out[0];
  if (std::string e = require_slots(s, 3, 1); !e.empty()) return e;
  if (std::string e = weight_dims(w, &d); !e.empty()) return e;
  if (std::string e = require(x, "x"); !e.empty()) return e;
  if (x.elements % d.k != 0)
    return "x " + shape_string(x) + " cannot be viewed as [N, " + std::to_string(d.k) + "]";
  d.n = x.elements / d.k;
  if (std::string e = require_elements(y, d.n * d.m, "y"); !e.empty()) return e;
  if (b.present())
    if (std::string e = require_elements(b, d.m, "b"); !e.empty()) return e;
  if (!activation_supported(s.params().activation))
    return "activation " + std::to_string(s.params().activation) + " is not supported";
  return {};
}

std::string check_backward(const StepView& s) {
  Dims d;
  const TensorRef &x = s.in[0], &w = s.in[1], &y = s.in[2], &dy = s.in[3];
  const TensorRef &dx = s.out[0], &dw = s.out[1], &db = s.out[2];
  if (std::string e = require_slots(s, 4, 3); !e.empty()) return e;
  if (std::string e = weight_dims(w, &d); !e.empty()) return e;
  if (std::string e = require(dy, "dy"); !e.empty()) return e;
  if (dy.elements % d.m != 0)
    return "dy " + shape_string(dy) + " cannot be viewed as [N, " + std::to_string(d.m) + "]";
  d.n = dy.elements / d.m;
  if (!activation_supported(s.params().activation))
    return "activation " + std::to_string(s.params().activation) + " is not supported";
  if (s.params().activation != CLTRAIN_ACT_NONE)
    if (std::string e = require_elements(y, d.n * d.m, "y (the activation's output)"); !e.empty())
      return e;
  if (x.present())
    if (std::string e = require_elements(x, d.n * d.k, "x"); !e.empty()) return e;
  if (dw.present()) {
    if (!x.present()) return "dW is requested but x is missing";
    if (std::string e = require_elements(dw, d.m * d.k, "dW"); !e.empty()) return e;
  }
  if (dx.present())
    if (std::string e = require_elements(dx, d.n * d.k, "dx"); !e.empty()) return e;
  if (db.present())
    if (std::string e = require_elements(db, d.m, "db"); !e.empty()) return e;
  return {};
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  const float* w = s.in[1].data;
  const float* b = s.in[2].data;
  float* y = s.out[0].data;
  const uint64_t m_total = static_cast<uint64_t>(s.in[1].dim(0));
  const uint64_t k_total = static_cast<uint64_t>(s.in[1].dim(1));
  const uint64_t n_total = s.in[0].elements / k_total;
  const int32_t act = s.params().activation;
  for (uint64_t m0 = 0; m0 < m_total; m0 += kRowBlock) {
    const uint64_t m1 = std::min(m_total, m0 + kRowBlock);
    for (uint64_t n = 0; n < n_total; ++n) {
      const float* xr = x + n * k_total;
      for (uint64_t m = m0; m < m1; ++m) {
        float acc = dot(xr, w + m * k_total, k_total);
        if (b) acc += b[m];
        y[n * m_total + m] = apply_activation(act, acc);
      }
    }
  }
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  const float* w = s.in[1].data;
  const float* y = s.in[2].data;
  float* dz = s.in[3].data;  // dy, turned into d(x W^T + b) in place (dy is dead after this step)
  float* dx = s.out[0].data;
  float* dw = s.out[1].data;
  float* db = s.out[2].data;
  const uint64_t m_total = static_cast<uint64_t>(s.in[1].dim(0));
  const uint64_t k_total = static_cast<uint64_t>(s.in[1].dim(1));
  const uint64_t n_total = s.in[3].elements / m_total;
  const int32_t act = s.params().activation;

  if (act != CLTRAIN_ACT_NONE)
    for (uint64_t i = 0; i < n_total * m_total; ++i) dz[i] *= activation_derivative(act, y[i]);

  if (dx) {  // dx = dz W
    std::memset(dx, 0, n_total * k_total * sizeof(float));
    for (uint64_t n = 0; n < n_total; ++n) {
      float* dxr = dx + n * k_total;
      for (uint64_t m = 0; m < m_total; ++m) {
        const float a = dz[n * m_total + m];
        const float* wr = w + m * k_total;
        for (uint64_t k = 0; k < k_total; ++k) dxr[k] += a * wr[k];
      }
    }
  }
  if (dw) {  // dW = dz^T x
    std::memset(dw, 0, m_total * k_total * sizeof(float));
    for (uint64_t m0 = 0; m0 < m_total; m0 += kRowBlock) {
      const uint64_t m1 = std::min(m_total, m0 + kRowBlock);
      for (uint64_t n = 0; n < n_total; ++n) {
        const float* xr = x + n * k_total;
        for (uint64_t m = m0; m < m1; ++m) {
          const float a = dz[n * m_total + m];
          float* dwr = dw + m * k_total;
          for (uint64_t k = 0; k < k_total; ++k) dwr[k] += a * xr[k];
        }
      }
    }
  }
  if (db) {
    for (uint64_t m = 0; m < m_total; ++m) {
      float acc = 0.0f;
      for (uint64_t n = 0; n < n_total; ++n) acc += dz[n * m_total + m];
      db[m] = acc;
    }
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_FULLY_CONNECTED = {
    {{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
