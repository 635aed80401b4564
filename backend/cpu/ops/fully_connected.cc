// FULLY_CONNECTED: y = act(x W^T + b), W [M, K], x viewed as [N, K], y as [N, M]. Every
// product is a sequential fma chain over its inner index (cltrain_backend.h, Numerics):
// y[n,m] over k, dx[n,k] over m, dW[m,k] over n; db[m] sums dz over n.
#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#include "cpu_op.h"
#include "fma_chain.h"
#include "parallel.h"

namespace cltrain {
namespace cpu {
namespace {

struct Dims {
  uint64_t n = 0, k = 0, m = 0;
};

std::string weight_dims(const TensorRef& w, Dims* d) {
  if (std::string e = require(w, "W"); !e.empty()) return e;
  if (w.rank() != 2 || w.dim(0) <= 0 || w.dim(1) <= 0) return "W " + shape_string(w) + " must be [M, K] with M, K > 0";
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
  if (x.elements % d.k != 0) return "x " + shape_string(x) + " cannot be viewed as [N, " + std::to_string(d.k) + "]";
  d.n = x.elements / d.k;
  if (std::string e = require_elements(y, d.n * d.m, "y"); !e.empty()) return e;
  if (b.present())
    if (std::string e = require_elements(b, d.m, "b"); !e.empty()) return e;
  return require_activation(s);
}

std::string check_backward(const StepView& s) {
  Dims d;
  const TensorRef &x = s.in[0], &w = s.in[1], &y = s.in[2], &dy = s.in[3];
  const TensorRef &dx = s.out[0], &dw = s.out[1], &db = s.out[2];
  if (std::string e = require_slots(s, 4, 3); !e.empty()) return e;
  if (std::string e = weight_dims(w, &d); !e.empty()) return e;
  if (std::string e = require(dy, "dy"); !e.empty()) return e;
  if (dy.elements % d.m != 0) return "dy " + shape_string(dy) + " cannot be viewed as [N, " + std::to_string(d.m) + "]";
  d.n = dy.elements / d.m;
  if (std::string e = require_activation(s); !e.empty()) return e;
  if (s.params().activation != CLTRAIN_ACT_NONE)
    if (std::string e = require_elements(y, d.n * d.m, "y (the activation's output)"); !e.empty()) return e;
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

// The chains of s (one segment shared by all rows) split into tiles over threads.
void chain_parallel(const ChainShape& s, const ChainSegment& seg) {
  constexpr int64_t kRows = 4, kCols = 64;
  const int64_t row_tiles = (s.rows + kRows - 1) / kRows, col_tiles = (s.cols + kCols - 1) / kCols;
  parallel_for(row_tiles * col_tiles, items_per_thread(kRows * kCols * seg.len), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t r0 = t / col_tiles * kRows, c0 = t % col_tiles * kCols;
      ChainShape tile = s;
      tile.rows = std::min(kRows, s.rows - r0);
      tile.cols = std::min(kCols, s.cols - c0);
      tile.acc = s.acc + r0 * s.acc_row + c0;
      const ChainSegment part{seg.a + r0 * s.a_row, seg.b + c0, seg.len};
      fma_chain(tile, &part, 1);
    }
  });
}

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  const float* w = s.in[1].data;
  const float* b = s.in[2].data;
  float* y = s.out[0].data;
  const int64_t m_total = s.in[1].dim(0);
  const int64_t k_total = s.in[1].dim(1);
  const int64_t n_total = static_cast<int64_t>(s.in[0].elements) / k_total;
  // W^T [K, M], so that a term of the chains of a row of y reads one row of it.
  std::vector<float> wt(static_cast<size_t>(m_total * k_total));
  for (int64_t m = 0; m < m_total; ++m)
    for (int64_t k = 0; k < k_total; ++k) wt[k * m_total + m] = w[m * k_total + k];
  std::fill(y, y + n_total * m_total, 0.0f);
  ChainShape c;
  c.rows = n_total;
  c.cols = m_total;
  c.a_step = 1;
  c.a_row = k_total;
  c.b_step = m_total;
  c.acc = y;
  c.acc_row = m_total;
  chain_parallel(c, {x, wt.data(), k_total});
  if (b)
    for (int64_t n = 0; n < n_total; ++n)
      for (int64_t m = 0; m < m_total; ++m) y[n * m_total + m] = y[n * m_total + m] + b[m];
  apply_activation(s.params().activation, y, static_cast<uint64_t>(n_total * m_total));
  return {};
}

// dW[m,k]: chain over n of dz[n,m] x[n,k] (dw overwritten).
void weight_grad(const float* dz, const float* x, int64_t n_total, int64_t m_total, int64_t k_total, float* dw) {
  std::fill(dw, dw + m_total * k_total, 0.0f);
  ChainShape c;
  c.rows = m_total;
  c.cols = k_total;
  c.a_step = m_total;
  c.a_row = 1;
  c.b_step = k_total;
  c.acc = dw;
  c.acc_row = k_total;
  chain_parallel(c, {dz, x, n_total});
}

// db[m]: the sum over n, in increasing order, of dz[n,m] (db overwritten).
void bias_grad(const float* dz, int64_t n_total, int64_t m_total, float* db) {
  std::fill(db, db + m_total, 0.0f);
  for (int64_t n = 0; n < n_total; ++n)
    for (int64_t m = 0; m < m_total; ++m) db[m] = db[m] + dz[n * m_total + m];
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const float* x = s.in[0].data;
  const float* w = s.in[1].data;
  const float* y = s.in[2].data;
  float* dz = s.in[3].data;  // dy, turned into d(x W^T + b) in place (dy is dead after this step)
  float* dx = s.out[0].data;
  float* dw = s.out[1].data;
  float* db = s.out[2].data;
  const int64_t m_total = s.in[1].dim(0);
  const int64_t k_total = s.in[1].dim(1);
  const int64_t n_total = static_cast<int64_t>(s.in[3].elements) / m_total;
  activation_backward(s.params().activation, y, dz, static_cast<uint64_t>(n_total * m_total));

  if (dx) {  // dx[n,k]: chain over m of dz[n,m] W[m,k]
    std::fill(dx, dx + n_total * k_total, 0.0f);
    ChainShape c;
    c.rows = n_total;
    c.cols = k_total;
    c.a_step = 1;
    c.a_row = m_total;
    c.b_step = k_total;
    c.acc = dx;
    c.acc_row = k_total;
    chain_parallel(c, {dz, w, m_total});
  }
  if (dw) weight_grad(dz, x, n_total, m_total, k_total, dw);
  if (db) bias_grad(dz, n_total, m_total, db);
  return {};
}

// ACCUMULATE_FC_GRADS: in [x, dz] out [dW, db], dW += dz^T x and db += the column sums of dz, each
// sum as FULLY_CONNECTED's backward makes it, then added (one rounding).
std::string check_accumulate(const StepView& s) {
  const TensorRef &x = s.in[0], &dz = s.in[1], &dw = s.out[0], &db = s.out[1];
  if (std::string e = require_slots(s, 2, 2); !e.empty()) return e;
  if (std::string e = require(dz, "dz"); !e.empty()) return e;
  if (!dw.present() && !db.present()) return "neither dW nor db is given";
  if (dw.present()) {
    if (dw.rank() != 2 || dw.dim(0) <= 0 || dw.dim(1) <= 0) return "dW " + shape_string(dw) + " must be [M, K]";
    if (std::string e = require(x, "x"); !e.empty()) return e;
    const uint64_t m = static_cast<uint64_t>(dw.dim(0)), k = static_cast<uint64_t>(dw.dim(1));
    if (dz.elements % m != 0 || x.elements % k != 0 || dz.elements / m != x.elements / k)
      return "dz " + shape_string(dz) + " and x " + shape_string(x) + " do not fit dW " + shape_string(dw);
  }
  if (db.present() && (db.elements == 0 || dz.elements % db.elements != 0))
    return "dz " + shape_string(dz) + " does not fit db " + shape_string(db);
  if (dw.present() && db.present() && db.elements != static_cast<uint64_t>(dw.dim(0)))
    return "db " + shape_string(db) + " does not fit dW " + shape_string(dw);
  return {};
}

std::string run_accumulate(const StepView& s, const cltrain_run_args&) {
  const TensorRef &x = s.in[0], &dz = s.in[1], &dw = s.out[0], &db = s.out[1];
  const int64_t m_total = dw.present() ? dw.dim(0) : static_cast<int64_t>(db.elements);
  const int64_t n_total = static_cast<int64_t>(dz.elements) / m_total;
  std::vector<float> sum;
  if (dw.present()) {
    const int64_t k_total = dw.dim(1);
    sum.assign(static_cast<size_t>(m_total * k_total), 0.0f);
    weight_grad(dz.data, x.data, n_total, m_total, k_total, sum.data());
    for (size_t i = 0; i < sum.size(); ++i) dw.data[i] += sum[i];
  }
  if (db.present()) {
    sum.assign(static_cast<size_t>(m_total), 0.0f);
    bias_grad(dz.data, n_total, m_total, sum.data());
    for (size_t i = 0; i < sum.size(); ++i) db.data[i] += sum[i];
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_FULLY_CONNECTED = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};
extern const CpuOp kCpuOp_ACCUMULATE_FC_GRADS = {{{}, {check_accumulate, run_accumulate}, {}}};

}  // namespace cpu
}  // namespace cltrain
