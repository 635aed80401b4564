// DEPTHWISE_CONV_2D: x [N,H,W,C], W [1,KH,KW,C*M], optional b [C*M], y [N,OH,OW,C*M]; direct
// kernels (kernels/depthwise_conv2d.cl), one work-item per VEC neighbouring channels of an output
// element (lanes of a vector), each lane a chain in the order of cltrain_backend.h's Numerics:
//   forward  dw_forward: fma over (kh, kw), + b, act;
//   backward act_grad (dz, in place on dy), bias_grad (db, kernels/bias_act.cl),
//            dw_filter_grad (dW: fma over (n, oh, ow); dw_filter_grad_taps, every tap of a small
//            filter in one pass), dw_input_grad (dx: sum over the taps of
//            the fma over j). No scratch. Float16 x, y, dz, dx load and store in the kernels.
#include <vector>

#include "ops/conv_shape.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "depthwise_conv2d.cl";

std::string check(const StepView& s) {
  ConvShape sh;
  return check_conv(s, sh);
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  ConvShape sh;
  if (const std::string why = check_conv(s, sh); !why.empty()) fail(CLTRAIN_INVALID, s.what() + ": " + why);
  struct Launch {
    Kernel k;
    uint64_t count;
  };
  std::vector<Launch> launches;
  // Channels per work-item (kernels/depthwise_conv2d.cl): the widest of 16, 8, 4 that divides
  // the channel counts, with multiplier 1; else 1.
  long long vec = 1;
  if (sh.multiplier == 1)
    for (long long v : {16, 8, 4})
      if (sh.in_ch % v == 0 && sh.out_ch % v == 0) {
        vec = v;
        break;
      }
  Defines geometry = sh.defines();
  geometry.set("ACT", sh.activation).set("HAS_BIAS", sh.bias >= 0).set("VEC", vec);
  c.storage(c.storage(c.storage(c.storage(geometry, "X_H", sh.x), "Y_H", sh.y), "DY_H", sh.dy), "DX_H", sh.dx);
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    Kernel k = c.kernel(kFamily, geometry, "dw_forward");
    set_args(k, c.pool(), c.offset(sh.x), c.offset(sh.w_t), sh.bias >= 0 ? c.offset(sh.bias) : cl_uint{0},
             c.offset(sh.y));
    launches.push_back({k, s.count(sh.y) / vec});
  } else {
    const uint64_t count = s.count(sh.dy);
    Defines d;
    d.set("COLS", sh.out_ch).set("HAS_BIAS", 0).set("ACT", sh.activation);
    const cl_uint rows = static_cast<cl_uint>(count / sh.out_ch);
    d.set("VEC", channel_lanes(sh.out_ch));
    c.storage(c.storage(d, "Y_H", sh.y), "DY_H", sh.dy);
    if (sh.activation != CLTRAIN_ACT_NONE) {
      Kernel k = c.kernel("bias_act.cl", d, "act_grad");
      set_args(k, c.pool(), c.offset(sh.y), c.offset(sh.dy), rows);
      launches.push_back({k, count});
    }
    if (sh.db >= 0) {
      Kernel k = c.kernel("bias_act.cl", d, "bias_grad");
      set_args(k, c.pool(), c.offset(sh.dy), c.offset(sh.db), rows);
      launches.push_back({k, static_cast<uint64_t>(sh.out_ch / channel_lanes(sh.out_ch))});
    }
    if (sh.dw >= 0) {
      // Small filters: every tap in one pass over dz (fewer work-items, dz read once).
      const bool one_pass = sh.taps() * vec <= 9 * 16;
      Kernel k = c.kernel(kFamily, geometry, one_pass ? "dw_filter_grad_taps" : "dw_filter_grad");
      set_args(k, c.pool(), c.offset(sh.x), c.offset(sh.dy), c.offset(sh.dw));
      launches.push_back({k, one_pass ? static_cast<uint64_t>(sh.out_ch / vec) : s.count(sh.dw) / vec});
    }
    if (sh.dx >= 0) {
      Defines d = geometry;
      Kernel k = c.kernel(kFamily, d.set("XACT", sh.dx_activation), "dw_input_grad");
      set_args(k, c.pool(), c.offset(sh.w_t), c.offset(sh.dy), c.offset(sh.dx),
               sh.dx_activation != CLTRAIN_ACT_NONE ? c.offset(sh.x) : cl_uint{0});
      launches.push_back({k, s.count(sh.dx) / vec});
    }
  }
  return [launches](const Queue& q, const cltrain_run_args*) {
    for (const Launch& l : launches) q.launch_1d(l.k, l.count);
  };
}

}  // namespace

const OpFamily kOp_DEPTHWISE_CONV_2D = {check, prepare, nullptr, true};

}  // namespace cltrain::ocl
