// CONV_2D: x [N,H,W,I], W [O,KH,KW,I], optional b [O], y [N,OH,OW,O] = act(conv + b).
// Every dot product is one CLBlast GEMM output element (an fma chain over k in order), and all
// scratch (panel and CLBlast's copies) is bounded by c.scratch_budget() where the smallest chunk
// allows (private layer-scope tensors of the step). The large
// operands are laid out as CLBlast's kernel reads them (A as [K, M], B as [K, N], C column-major),
// so that its scratch only ever holds copies of the small ones:
//   forward   per chunk of output positions (n, oh, ow): conv_panel_t writes the im2col panel
//             transposed, [KH KW I, rows] (zeros outside x); GEMM y[rows] = panel W^T; then
//             bias_act over y. A float16 y: the bias and activation are the GEMM's epilogue
//             (gemm.cl's EPI), which rounds each element into y once, as Numerics asks.
// Float16 x, dz, dx (common.cl's storage): the panels and gathers load and store them, gemm.cl
// reads them in place (OpContext::prepare_gemm), dcol and the panels stay float32.
//   dW        per tap (and block of channels, when one tap's panel is over budget): conv_panel
//             writes x shifted by the tap for all N OH OW positions, [positions, I], and one GEMM
//             dW[:, tap] = dz^T panel (ldc = KH KW I) makes each dW element one chain over
//             (n, oh, ow) in order. On gemm.cl (CPU devices) with I a multiple of its vector
//             width: one GEMM dW = dz^T panel whose panel gemm.cl reads from x as it packs B
//             (B_CONV), the same chains, no panel. With at most 27 products per output
//             position (a first layer's KH KW I): conv_small_filter_grad, direct, the same
//             chains, VEC output channels per work-item.
//   db        bias_grad: sequential column sums of dz.
//   dx        per chunk of whole images: column-major GEMM dcol [rows, KH KW I] = dz W (dot over
//             o), then conv_gather_dx sums the taps that reach each dx element in (kh, kw) order.
//             On gemm.cl, stride 1, float32: one GEMM over every dx position whose A is dz read
//             in place through the mirrored geometry and whose B is W as [KH KW O, I]
//             (conv_filter_p), each tap's chain over o restarted and the chains added in
//             (kh, kw) order (K_SEG): the same sums, no dcol, no gather; the producer's
//             activation derivative as the GEMM's epilogue. A pointwise dx with one: the
//             GEMM's epilogue instead of the gather.
//   dz        act_grad, in place on dy, before all of these.
// A 1x1 convolution with stride 1 and no padding ("pointwise") uses x, dx and y as panels.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "memory_plan.h"
#include "ops/conv2d_plan.h"
#include "ops/conv_shape.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

std::string check(const StepView& s) {
  ConvShape sh;
  return check_conv(s, sh);
}

// The plan, and its private tensors in this order where needed: the panel (or dcol), a float16
// y's chunk, CLBlast's scratch.
StepPlan plan(const OpContext& c) {
  auto p = std::make_shared<ConvPlan>(make_plan(c));
  StepPlan out;
  for (uint64_t bytes : {p->panel_bytes, p->out_bytes, p->temp_bytes})
    if (bytes > 0) out.scratch.push_back(bytes);
  out.detail = std::move(p);
  return out;
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  const ConvPlan& p = c.plan<ConvPlan>();
  const ConvShape& sh = p.sh;
  size_t next = 0;
  const int32_t panel = p.panel_bytes > 0 ? c.scratch(next++) : -1;
  const int32_t out = p.out_bytes > 0 ? c.scratch(next++) : -1;
  const int32_t temp = p.temp_bytes > 0 ? c.scratch(next++) : -1;
  const Defines geometry = sh.defines();
  std::map<std::pair<uint32_t, uint32_t>, Kernel> panel_kernels;  // by (taps, channels) of a block
  Kernel taps_kernel;                                             // conv_gather_dx_taps
  std::vector<std::function<void(const Queue&)>> run;
  for (const Action& a : p.actions) {
    switch (a.kind) {
      case Action::kPanelFill: {
        Kernel& k = panel_kernels[{a.taps * 2 + a.transposed, a.ch}];
        if (!k) {
          Defines d = geometry;
          d.set("PANEL_TAPS", a.taps).set("PANEL_CH", a.ch);
          c.storage(d, "X_H", sh.x);
          // conv_panel copies channel_lanes() channels at a time.
          k = c.kernel("conv2d.cl", d.set("VEC", a.transposed ? 1 : channel_lanes(a.ch)),
                       a.transposed ? "conv_panel_t" : "conv_panel");
        }
        const cl_uint x_off = c.offset(sh.x), panel_off = c.offset(panel);
        const Kernel kk = k;
        const cl_mem pool = c.pool();
        // The kernel serves every block of its shape: its arguments are set as each block runs.
        run.push_back([kk, pool, x_off, panel_off, a](const Queue& q) {
          set_args(kk, pool, x_off, panel_off, a.row0, a.rows, a.p0, a.c0);
          if (a.transposed)
            q.launch_2d(kk, (uint64_t{a.rows} + 7) / 8, a.taps);
          else
            q.launch_1d(kk, uint64_t{a.rows} * a.taps);
        });
        break;
      }
      case Action::kGemm: {
        Gemm g = a.gemm;
        for (int32_t* id : {&g.a, &g.b, &g.c}) *id = *id == kPanel ? panel : *id == kOut ? out : *id;
        const PreparedGemm pg = c.prepare_gemm(g, temp);
        run.push_back([pg](const Queue& q) { run_gemm(q, pg); });
        break;
      }
      case Action::kGather: {
        // Channels per work-item: channel_lanes(I).
        const long long vec = a.transposed ? 1 : channel_lanes(sh.in_ch);
        Defines d = geometry;
        d.set("XACT", sh.dx_activation).set("DCOL_T", a.transposed);
        c.storage(c.storage(d, "X_H", sh.x), "DX_H", sh.dx);
        const cl_uint x_off = sh.dx_activation != CLTRAIN_ACT_NONE ? c.offset(sh.x) : cl_uint{0};
        d.set("PANEL_TAPS", 1).set("PANEL_CH", 1).set("VEC", vec);
        if (a.tapped) {  // one kernel for every block of the step: its arguments set as each runs
          if (!taps_kernel) taps_kernel = c.kernel("conv2d.cl", d, "conv_gather_dx_taps");
          const Kernel k = taps_kernel;
          const cl_mem pool = c.pool();
          const cl_uint dcol = c.offset(panel), acc = c.offset(out), dx = c.offset(sh.dx);
          const uint64_t count = static_cast<uint64_t>(sh.h.in * sh.w.in * sh.in_ch) / vec;
          run.push_back([k, pool, dcol, acc, dx, x_off, a, count](const Queue& q) {
            set_args(k, pool, dcol, acc, dx, a.row0, a.p0, a.taps, cl_uint{a.first}, cl_uint{a.last}, x_off);
            q.launch_1d(k, count);
          });
          break;
        }
        Kernel k = c.kernel("conv2d.cl", d, a.banded ? "conv_gather_dx_band" : "conv_gather_dx");
        if (a.banded)
          set_args(k, c.pool(), c.offset(panel), c.offset(sh.dx), a.row0, a.oh0, a.band, a.ih0, a.ihn, x_off);
        else
          set_args(k, c.pool(), c.offset(panel), c.offset(sh.dx), a.row0, a.rows, x_off);
        const uint64_t count = (a.banded ? uint64_t{a.ihn} : uint64_t{a.rows} * sh.h.in) * sh.w.in * sh.in_ch / vec;
        run.push_back([k, count](const Queue& q) { q.launch_1d(k, count); });
        break;
      }
      case Action::kFilterT:
      case Action::kFilterP: {  // W^T for the forward, W as [KH KW O, I] for dx
        Defines d = geometry;
        Kernel k = c.kernel("conv2d.cl", d.set("PANEL_TAPS", 1).set("PANEL_CH", 1).set("VEC", 1),
                            a.kind == Action::kFilterT ? "conv_filter_t" : "conv_filter_p");
        set_args(k, c.pool(), c.offset(sh.w_t), c.offset(panel));
        const uint64_t count = static_cast<uint64_t>(sh.taps() * sh.in_ch * sh.out_ch) +
                               static_cast<uint64_t>(a.kind == Action::kFilterT ? sh.in_ch : sh.out_ch);
        run.push_back([k, count](const Queue& q) { q.launch_1d(k, count); });
        break;
      }
      case Action::kSmallFilterGrad: {  // VEC output channels per work-item, a work-item per compute unit or more
        Defines d = geometry;
        long long lanes = channel_lanes(sh.out_ch);
        while (lanes > 4 && static_cast<uint64_t>(sh.out_ch / lanes) < c.device().compute_units) lanes /= 2;
        Kernel k = c.kernel("conv2d.cl", d.set("PANEL_TAPS", 1).set("PANEL_CH", 1).set("VEC", lanes),
                            "conv_small_filter_grad");
        set_args(k, c.pool(), c.offset(sh.x), c.offset(sh.dy), c.offset(sh.dw));
        const uint64_t groups = static_cast<uint64_t>(sh.out_ch / lanes);
        run.push_back([k, groups](const Queue& q) { q.launch_groups(k, groups, 1); });
        break;
      }
      case Action::kWiden: {
        Defines d = geometry;
        Kernel k =
            c.kernel("conv2d.cl", c.storage(d.set("PANEL_TAPS", 1).set("PANEL_CH", 1).set("VEC", 1), "DY_H", sh.dy),
                     "conv_widen_dz");
        const uint64_t sums = static_cast<uint64_t>(sh.h.in * sh.w.in * sh.in_ch);
        set_args(k, c.pool(), c.offset(sh.dy), c.offset(out) + static_cast<cl_uint>(sums), a.row0);
        const uint64_t count = static_cast<uint64_t>(sh.h.out * sh.w.out * sh.out_ch);
        run.push_back([k, count](const Queue& q) { q.launch_1d(k, count); });
        break;
      }
      case Action::kBiasAct:
      case Action::kActGrad:
      case Action::kBiasGrad: {
        Defines d;
        const cl_uint rows = static_cast<cl_uint>(s.count(a.kind == Action::kBiasAct ? sh.y : sh.dy) / sh.out_ch);
        d.set("COLS", sh.out_ch).set("HAS_BIAS", sh.bias >= 0).set("ACT", sh.activation);
        const long long lanes = channel_lanes(sh.out_ch);
        d.set("VEC", lanes);
        c.storage(c.storage(d, "Y_H", sh.y), "DY_H", sh.dy);
        const char* name = a.kind == Action::kBiasAct   ? "bias_act"
                           : a.kind == Action::kActGrad ? "act_grad"
                                                        : "bias_grad";
        Kernel k = c.kernel("bias_act.cl", d, name);
        uint64_t count = s.count(a.kind == Action::kBiasAct ? sh.y : sh.dy);
        if (a.kind == Action::kBiasAct)
          set_args(k, c.pool(), c.offset(sh.y), sh.bias >= 0 ? c.offset(sh.bias) : cl_uint{0}, rows);
        else if (a.kind == Action::kActGrad)
          set_args(k, c.pool(), c.offset(sh.y), c.offset(sh.dy), rows);
        else
          set_args(k, c.pool(), c.offset(sh.dy), c.offset(sh.db), rows), count = sh.out_ch / lanes;
        run.push_back([k, count](const Queue& q) { q.launch_1d(k, count); });
        break;
      }
    }
  }
  return [run](const Queue& q, const cltrain_run_args*) {
    for (const auto& f : run) f(q);
  };
}

}  // namespace

const OpFamily kOp_CONV_2D = {check, prepare, plan, true};

}  // namespace cltrain::ocl
