// The GEMM calls one training step of a named model makes on the OpenCL backend: those of
// backend/opencl/ops/conv2d.cc and fully_connected.cc, for gemm_bench (keep in step with them).
#pragma once

#include <clblast.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "model/builder.h"
#include "model/model.h"
#include "window_geometry.h"

namespace gemm_bench {

using clblast::Layout;
using clblast::Transpose;

struct Call {
  Layout layout = Layout::kRowMajor;
  Transpose ta = Transpose::kNo, tb = Transpose::kNo;
  size_t m = 0, n = 0, k = 0;
  size_t a_off = 0, lda = 0, b_off = 0, ldb = 0, c_off = 0, ldc = 0;
  double flops() const { return 2.0 * m * n * k; }
};

struct Group {
  std::string model, layer, pass;  // pass: "forward", "dW", "dx"
  std::vector<Call> calls;
  double flops() const {
    double f = 0;
    for (const Call& c : calls) f += c.flops();
    return f;
  }
  // Results.
  double cl_ms = 0, blas_ms = 0, max_rel_diff = 0;
  double cl_cpu_ms = 0, blas_cpu_ms = 0;  // CPU time of the whole process (POCL's and OpenBLAS's threads)
};

// Elements an operand spans: "lines" of ld elements, the last one len long.
inline size_t span(size_t off, size_t lines, size_t len, size_t ld) {
  return lines == 0 ? off : off + (lines - 1) * ld + len;
}
inline bool row_major(const Call& c) { return c.layout == Layout::kRowMajor; }
inline size_t a_size(const Call& c) {
  const bool lines_m = row_major(c) == (c.ta == Transpose::kNo);  // stored as m lines of k
  return span(c.a_off, lines_m ? c.m : c.k, lines_m ? c.k : c.m, c.lda);
}
inline size_t b_size(const Call& c) {
  const bool lines_k = row_major(c) == (c.tb == Transpose::kNo);  // stored as k lines of n
  return span(c.b_off, lines_k ? c.k : c.n, lines_k ? c.n : c.k, c.ldb);
}
inline size_t c_size(const Call& c) { return span(c.c_off, row_major(c) ? c.m : c.n, row_major(c) ? c.n : c.m, c.ldc); }

// ---- The GEMM calls of backend/opencl/ops/conv2d.cc and fully_connected.cc (keep in step). ----

inline uint64_t aligned_chunk(uint64_t tile, uint64_t fit, uint64_t unit_rows, uint64_t total) {
  const uint64_t count = std::clamp<uint64_t>(fit, 1, total);
  if (count == total) return count;
  for (uint64_t c = count; c >= 1; --c)
    if (c * unit_rows % tile == 0) return c;
  return count;
}

struct ConvGeom {
  uint64_t n, h, w, in_ch, out_ch, kh, kw, oh, ow;
  bool pointwise;
  uint64_t positions() const { return n * oh * ow; }
  uint64_t taps() const { return kh * kw; }
};

inline void conv_groups(const std::string& model, const std::string& layer, const ConvGeom& sh, bool need_dx,
                        uint64_t tile, uint64_t budget, std::vector<Group>& out) {
  const uint64_t positions = sh.positions(), O = sh.out_ch, I = sh.in_ch, taps = sh.taps(), K = taps * I;
  {  // forward: y = panel W^T per chunk of output positions (the panel stored [K, rows])
    Group g{model, layer, "forward", {}};
    Call c;
    c.tb = Transpose::kYes;
    c.n = O, c.k = K, c.ldb = K, c.ldc = O;
    if (sh.pointwise) {
      c.m = positions, c.lda = K;
      g.calls.push_back(c);
    } else {
      const uint64_t chunk = aligned_chunk(tile, budget / (K * 4), 1, positions);
      c.ta = Transpose::kYes;
      for (uint64_t r0 = 0; r0 < positions; r0 += chunk) {
        c.m = std::min(chunk, positions - r0);
        c.lda = c.m;
        c.c_off = r0 * O;
        g.calls.push_back(c);
      }
    }
    out.push_back(g);
  }
  {  // dW[:, block] = dz^T panel, one chain over all positions
    Group g{model, layer, "dW", {}};
    Call c;
    c.ta = Transpose::kYes;
    c.m = O, c.k = positions, c.lda = O, c.ldc = K;
    if (sh.pointwise) {
      c.n = I, c.ldb = I;
      g.calls.push_back(c);
    } else {
      const uint64_t fit = budget / (positions * I * 4);
      const uint64_t want = (2 * tile + I - 1) / I;
      const uint64_t block_taps = std::clamp<uint64_t>(std::min<uint64_t>(want, fit), 1, taps);
      const uint64_t block_ch = fit >= 1 ? I : std::clamp<uint64_t>(budget / (positions * 4), 1, I);
      for (uint64_t p0 = 0; p0 < taps; p0 += block_taps)
        for (uint64_t c0 = 0; c0 < I; c0 += block_ch) {
          const uint64_t nt = std::min(block_taps, taps - p0), nc = std::min(block_ch, I - c0);
          c.n = nt * nc, c.ldb = nt * nc;
          c.c_off = p0 * I + c0;
          g.calls.push_back(c);
        }
    }
    out.push_back(g);
  }
  if (need_dx) {  // column-major dcol [K, rows] = W^T-as-read dz per chunk of whole images
    Group g{model, layer, "dx", {}};
    Call c;
    c.layout = Layout::kColMajor;
    c.m = K, c.k = O, c.lda = K, c.ldb = O, c.ldc = K;
    const uint64_t per_image = sh.oh * sh.ow;
    if (sh.pointwise) {
      c.n = positions;
      g.calls.push_back(c);
    } else {
      const uint64_t images = aligned_chunk(tile, budget / (per_image * K * 4), per_image, sh.n);
      for (uint64_t n0 = 0; n0 < sh.n; n0 += images) {
        c.n = std::min<uint64_t>(images, sh.n - n0) * per_image;
        c.b_off = n0 * per_image * O;
        g.calls.push_back(c);
      }
    }
    out.push_back(g);
  }
}

inline void fc_groups(const std::string& model, const std::string& layer, uint64_t n, uint64_t m, uint64_t k,
                      bool need_dx, std::vector<Group>& out) {
  Call f;  // y [N, M] = x [N, K] W^T
  f.tb = Transpose::kYes;
  f.m = n, f.n = m, f.k = k, f.lda = k, f.ldb = k, f.ldc = m;
  out.push_back(Group{model, layer, "forward", {f}});
  Call w;  // dW [M, K] = dz^T x
  w.ta = Transpose::kYes;
  w.m = m, w.n = k, w.k = n, w.lda = m, w.ldb = k, w.ldc = k;
  out.push_back(Group{model, layer, "dW", {w}});
  if (need_dx) {  // dx [N, K] = dz W
    Call d;
    d.m = n, d.n = k, d.k = m, d.lda = m, d.ldb = k, d.ldc = k;
    out.push_back(Group{model, layer, "dx", {d}});
  }
}

// The GEMM groups of a named model's training step at this batch.
inline std::vector<Group> model_groups(const std::string& name, int32_t batch, uint64_t tile, uint64_t budget) {
  const cltrain::Model m = cltrain::make_named_model(name, batch);
  std::vector<Group> out;
  auto is_input = [&](int32_t t) { return std::find(m.inputs.begin(), m.inputs.end(), t) != m.inputs.end(); };
  for (const cltrain::Operator& op : m.operators) {
    const std::string layer = m.tensors[op.outputs[0]].name;
    const bool need_dx = !is_input(op.inputs[0]);  // the model's input gets no gradient
    if (op.op == CLTRAIN_OP_CONV_2D) {
      const auto& x = m.tensors[op.inputs[0]].shape;
      const auto& w = m.tensors[op.inputs[1]].shape;
      const auto& y = m.tensors[op.outputs[0]].shape;
      cltrain::AxisGeometry gh, gw;
      const cltrain_op_params& p = op.params;
      cltrain::axis_geometry(p.padding, x[1], w[1], p.stride_h, p.dilation_h, "height", &gh);
      cltrain::axis_geometry(p.padding, x[2], w[2], p.stride_w, p.dilation_w, "width", &gw);
      ConvGeom g{uint64_t(x[0]), uint64_t(x[1]), uint64_t(x[2]), uint64_t(x[3]), uint64_t(w[0]),
                 uint64_t(w[1]), uint64_t(w[2]), uint64_t(y[1]), uint64_t(y[2]), false};
      g.pointwise = g.taps() == 1 && p.stride_h == 1 && p.stride_w == 1 && gh.pad_before == 0 && gw.pad_before == 0 &&
                    g.oh == g.h && g.ow == g.w;
      conv_groups(name, layer, g, need_dx, tile, budget, out);
    } else if (op.op == CLTRAIN_OP_FULLY_CONNECTED) {
      const auto& w = m.tensors[op.inputs[1]].shape;  // [M, K]
      const uint64_t k = uint64_t(w[1]), n = m.tensors[op.inputs[0]].elements() / k;
      fc_groups(name, layer, n, uint64_t(w[0]), k, need_dx, out);
    }
  }
  return out;
}

}  // namespace gemm_bench
