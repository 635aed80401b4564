// CONV_2D's plan (conv2d_plan.h): the chunks, panels, GEMMs and gathers of each step.
#include "ops/conv2d_plan.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "memory_plan.h"

namespace cltrain::ocl {
namespace {

// CLBlast copies an operand into its scratch unless its dimensions are whole tiles
// (c.gemm().tile()): how many units (of unit_rows GEMM rows each) make a chunk: at most fit (at least
// 1) and at most total, the largest such count whose rows are whole tiles when there is one.
uint64_t aligned_chunk(const OpContext& c, uint64_t fit, uint64_t unit_rows, uint64_t total) {
  const uint64_t count = std::clamp<uint64_t>(fit, 1, total);
  if (count == total) return count;
  const uint64_t tile = c.gemm().tile();
  for (uint64_t n = count; n >= 1; --n)
    if (n * unit_rows % tile == 0) return n;
  return count;
}

// gemm.cl's A_CONV (the forward's panel as A) or B_CONV (dW's as B) definitions of sh's geometry
// (Gemm::conv).
std::string conv_gemm_defines(const ConvShape& sh, const char* operand) {
  Defines d;
  d.set(operand, 1).set("CV_H", sh.h.in).set("CV_W", sh.w.in).set("CV_IC", sh.in_ch);
  d.set("CV_OH", sh.h.out).set("CV_OW", sh.w.out).set("CV_KW", sh.w.filter);
  d.set("CV_SH", sh.h.stride).set("CV_SW", sh.w.stride).set("CV_DH", sh.h.dilation).set("CV_DW", sh.w.dilation);
  d.set("CV_PT", sh.h.pad_before).set("CV_PL", sh.w.pad_before);
  return d.str();
}

// A_CONV definitions of dx's product for a stride-1 convolution: dz as the image (OH x OW, O
// channels), rows over the dx positions (H x W), tap (kh, kw) reading dz at (ih + PT - kh DH,
// iw + PL - kw DW).
std::string conv_dx_gemm_defines(const ConvShape& sh) {
  Defines d;
  d.set("A_CONV", 1).set("CV_H", sh.h.out).set("CV_W", sh.w.out).set("CV_IC", sh.out_ch);
  d.set("CV_OH", sh.h.in).set("CV_OW", sh.w.in).set("CV_KW", sh.w.filter);
  d.set("CV_SH", 1).set("CV_SW", 1).set("CV_DH", -sh.h.dilation).set("CV_DW", -sh.w.dilation);
  d.set("CV_PT", -sh.h.pad_before).set("CV_PL", -sh.w.pad_before);
  return d.str();
}

// gemm.cl's device, float32 x and dz, at most kSmallK products per dW element's tap set and not
// pointwise: dW runs direct (conv_small_filter_grad), the same chains.
constexpr uint64_t kSmallK = 27;
bool small_filter_grad(const OpContext& c, const ConvPlan& p) {
  const ConvShape& sh = p.sh;
  return c.gemm().native() && !p.pointwise && uint64_t(sh.taps()) * sh.in_ch <= kSmallK && !c.half(sh.x) &&
         !c.half(sh.dy);
}

void plan_forward(const OpContext& c, ConvPlan& p) {
  const StepView& s = c.s;
  const ConvShape& sh = p.sh;
  const uint64_t positions = sh.positions(), O = sh.out_ch, K = sh.taps() * sh.in_ch;
  Gemm g;
  g.tb = clblast::Transpose::kYes;  // W^T
  g.n = O, g.k = K;
  g.b = sh.w_t, g.ldb = K;
  g.c = sh.y, g.ldc = O;
  // A float16 y: the bias and activation as the GEMM's epilogue, so that y is rounded once.
  // On gemm.cl too: one pass over y fewer (the same operations on the same values: bitwise).
  const bool fused = c.half(sh.y) || c.gemm().native();
  if (fused) g.bias = sh.bias, g.act = sh.activation;
  // On gemm.cl, W^T written once into the scratch as [K, O] (conv_filter_t): B packed a vector at
  // a time instead of transposed element by element in every block (the implicit-panel forward).
  const bool filter_t = c.gemm().native() && !p.pointwise && !c.half(sh.w_t) && !c.half(sh.x);
  if (filter_t) {
    p.actions.push_back(Action(Action::kFilterT));
    p.panel_bytes = std::max(p.panel_bytes, (K * O + sh.in_ch) * 4);  // and the zeros A_CONV reads
    g.tb = clblast::Transpose::kNo;
    g.b = kPanel, g.ldb = O;
  }
  if (p.pointwise) {
    g.m = positions;
    g.a = sh.x, g.lda = K;
    g.what = s.what() + " y = x W^T";
    p.actions.push_back(Action(Action::kGemm, g));
  } else if (filter_t) {
    // On gemm.cl: one GEMM over every position, its A the im2col panel read from x in place
    // (A_CONV), the same chains over (kh, kw, i), no panel.
    g.m = positions;
    g.a = sh.x, g.lda = K;
    g.conv = conv_gemm_defines(sh, "A_CONV");
    g.what = s.what() + " y = panel W^T (x in place)";
    p.actions.push_back(Action(Action::kGemm, g));
  } else {
    const uint64_t chunk = aligned_chunk(c, p.budget / (K * 4), 1, positions);
    p.panel_bytes = chunk * K * 4;
    g.ta = clblast::Transpose::kYes;  // the panel is stored [K, rows]
    for (uint64_t r0 = 0; r0 < positions; r0 += chunk) {
      const uint64_t rows = std::min(chunk, positions - r0);
      Action fill(Action::kPanelFill);
      fill.row0 = static_cast<uint32_t>(r0), fill.rows = static_cast<uint32_t>(rows);
      fill.taps = static_cast<uint32_t>(sh.taps()), fill.ch = static_cast<uint32_t>(sh.in_ch);
      fill.transposed = true;
      p.actions.push_back(fill);
      g.m = rows;
      g.a = kPanel, g.lda = rows;
      g.c_off = r0 * O;
      g.what = s.what() + " y[" + std::to_string(r0) + "..] = panel W^T";
      p.actions.push_back(Action(Action::kGemm, g));
    }
  }
  if (!fused && (sh.bias >= 0 || sh.activation != CLTRAIN_ACT_NONE)) p.actions.push_back(Action(Action::kBiasAct));
}

void plan_filter_grad(const OpContext& c, ConvPlan& p) {
  const StepView& s = c.s;
  const ConvShape& sh = p.sh;
  const uint64_t positions = sh.positions(), O = sh.out_ch, I = sh.in_ch, taps = sh.taps(), K = taps * I;
  Gemm g;
  g.ta = clblast::Transpose::kYes;  // dz^T: [O, positions]
  g.m = O, g.k = positions;
  g.a = sh.dy, g.lda = O;
  g.c = sh.dw, g.ldc = K;
  if (small_filter_grad(c, p)) {
    p.actions.push_back(Action(Action::kSmallFilterGrad));
    return;
  }
  if (p.pointwise) {
    g.n = I;
    g.b = sh.x, g.ldb = I;
    g.what = s.what() + " dW = dz^T x";
    p.actions.push_back(Action(Action::kGemm, g));
    return;
  }
  // On gemm.cl, with channels in whole vectors of its tiles: one GEMM over every tap, its B the
  // im2col panel read from x in place as it packs B (no panel, no scratch), each dW element the
  // same chain over (n, oh, ow) in order.
  if (c.gemm().native() && I % c.gemm().native_vector_width() == 0) {
    g.n = K;
    g.b = sh.x, g.ldb = I;
    g.conv = conv_gemm_defines(sh, "B_CONV");
    g.what = s.what() + " dW = dz^T panel (x in place)";
    p.actions.push_back(Action(Action::kGemm, g));
    return;
  }
  // Blocks of taps about two GEMM tiles wide (so that an output of O = one tile is two
  // work-groups; more taps per panel run slower on POCL, the panel leaving the cache), or blocks
  // of one tap's channels when its panel is over budget.
  const uint64_t fit = p.budget / (positions * I * 4);
  const uint64_t want = (2 * c.gemm().tile() + I - 1) / I;
  const uint64_t block_taps = std::clamp<uint64_t>(std::min<uint64_t>(want, fit), 1, taps);
  const uint64_t block_ch = fit >= 1 ? I : std::clamp<uint64_t>(p.budget / (positions * 4), 1, I);
  p.panel_bytes = std::max(p.panel_bytes, positions * block_taps * block_ch * 4);
  for (uint64_t p0 = 0; p0 < taps; p0 += block_taps) {
    const uint64_t nt = std::min(block_taps, taps - p0);
    for (uint64_t c0 = 0; c0 < I; c0 += block_ch) {
      const uint64_t nc = std::min(block_ch, I - c0);
      Action fill(Action::kPanelFill);
      fill.row0 = 0, fill.rows = static_cast<uint32_t>(positions);
      fill.p0 = static_cast<uint32_t>(p0), fill.c0 = static_cast<uint32_t>(c0);
      fill.taps = static_cast<uint32_t>(nt), fill.ch = static_cast<uint32_t>(nc);
      p.actions.push_back(fill);
      g.n = nt * nc;
      g.b = kPanel, g.ldb = nt * nc;
      g.c_off = p0 * I + c0;
      g.what = s.what() + " dW[:, " + std::to_string(p0 * I + c0) + "..] = dz^T panel";
      p.actions.push_back(Action(Action::kGemm, g));
    }
  }
}

// The output rows [first, second] that reach the dx rows [h0, h1) (first > second: none).
std::pair<int64_t, int64_t> reaching_rows(const ConvShape& sh, int64_t h0, int64_t h1) {
  int64_t lo = INT64_MAX, hi = -1;
  for (int64_t h = h0; h < h1; ++h)
    for (int64_t kh = 0; kh < sh.h.filter; ++kh) {
      const int64_t t = h + sh.h.pad_before - kh * sh.h.dilation;
      if (t < 0 || t % sh.h.stride != 0 || t / sh.h.stride >= sh.h.out) continue;
      lo = std::min(lo, t / sh.h.stride), hi = std::max(hi, t / sh.h.stride);
    }
  return {lo, hi};
}

// dx of images whose dcol is over budget, by bands of dx rows: for each band, dcol of the output
// rows that reach it (neighbouring bands compute the rows they share again: the same products),
// then conv_gather_dx_band. The most dx rows per band whose dcol fits the budget, at least one.
void plan_input_grad_bands(const OpContext& c, ConvPlan& p, Gemm g) {
  const StepView& s = c.s;
  const ConvShape& sh = p.sh;
  const uint64_t O = sh.out_ch, K = sh.taps() * sh.in_ch, row_bytes = sh.w.out * K * 4;
  auto widest = [&](int64_t rows) {  // the most output rows a band of `rows` dx rows needs
    int64_t most = 0;
    for (int64_t h0 = 0; h0 < sh.h.in; h0 += rows) {
      const auto [lo, hi] = reaching_rows(sh, h0, std::min<int64_t>(h0 + rows, sh.h.in));
      most = std::max<int64_t>(most, hi - lo + 1);
    }
    return static_cast<uint64_t>(most);
  };
  int64_t rows = sh.h.in - 1;
  while (rows > 1 && widest(rows) * row_bytes > p.budget) --rows;
  p.panel_bytes = std::max(p.panel_bytes, widest(rows) * row_bytes);
  const uint64_t per_image = sh.h.out * sh.w.out;
  for (int64_t n = 0; n < sh.n; ++n)
    for (int64_t h0 = 0; h0 < sh.h.in; h0 += rows) {
      const int64_t h1 = std::min<int64_t>(h0 + rows, sh.h.in);
      const auto [lo, hi] = reaching_rows(sh, h0, h1);
      Action gather(Action::kGather);
      gather.banded = true;
      gather.row0 = static_cast<uint32_t>(n);
      gather.ih0 = static_cast<uint32_t>(h0), gather.ihn = static_cast<uint32_t>(h1 - h0);
      if (hi >= lo) {
        gather.oh0 = static_cast<uint32_t>(lo), gather.band = static_cast<uint32_t>(hi - lo + 1);
        g.n = gather.band * sh.w.out;
        g.b_off = (n * per_image + lo * sh.w.out) * O;
        g.c = kPanel, g.ldc = K;
        g.what = s.what() + " dcol = dz W (image " + std::to_string(n) + ", rows " + std::to_string(lo) + "..)";
        p.actions.push_back(Action(Action::kGemm, g));
      }
      p.actions.push_back(gather);
    }
}

// dx of images whose dcol is over budget, with float16 storage (which is for memory), by blocks of
// taps: per image, dz widened to float32 once (conv_widen_dz, after the sums in the out scratch),
// then per block dcol of those taps (the same products) and conv_gather_dx_taps adding them to
// the image's float32 sums (the same sums, in order). The most taps whose dcol fits the budget
// beside the sums and dz, at least one.
void plan_input_grad_taps(const OpContext& c, ConvPlan& p, Gemm g) {
  const StepView& s = c.s;
  const ConvShape& sh = p.sh;
  const uint64_t O = sh.out_ch, I = sh.in_ch, taps = sh.taps(), per_image = sh.h.out * sh.w.out;
  const uint64_t sums = uint64_t(sh.h.in) * sh.w.in * I * 4, tap_bytes = per_image * I * 4;
  const uint64_t side = sums + per_image * O * 4;  // the sums and the widened dz
  const uint64_t block = std::clamp<uint64_t>(p.budget > side ? (p.budget - side) / tap_bytes : 1, 1, taps);
  p.panel_bytes = std::max(p.panel_bytes, block * tap_bytes);
  p.out_bytes = std::max(p.out_bytes, side);
  g.b = kOut, g.b_off = sums / 4;
  for (int64_t n = 0; n < sh.n; ++n) {
    Action widen(Action::kWiden);
    widen.row0 = static_cast<uint32_t>(n);
    p.actions.push_back(widen);
    for (uint64_t p0 = 0; p0 < taps; p0 += block) {
      const uint64_t np = std::min(block, taps - p0);
      g.m = np * I, g.a_off = p0 * I;
      g.n = per_image;
      g.c = kPanel, g.ldc = np * I;
      g.what = s.what() + " dcol = dz W (image " + std::to_string(n) + ", taps " + std::to_string(p0) + "..)";
      p.actions.push_back(Action(Action::kGemm, g));
      Action gather(Action::kGather);
      gather.tapped = true, gather.first = p0 == 0, gather.last = p0 + np == taps;
      gather.row0 = static_cast<uint32_t>(n), gather.p0 = static_cast<uint32_t>(p0);
      gather.taps = static_cast<uint32_t>(np);
      p.actions.push_back(gather);
    }
  }
}

void plan_input_grad(const OpContext& c, ConvPlan& p) {
  const StepView& s = c.s;
  const ConvShape& sh = p.sh;
  const uint64_t O = sh.out_ch, I = sh.in_ch, K = sh.taps() * I, per_image = sh.h.out * sh.w.out;
  // Column-major C [K, rows] is the row-major [rows, K] of dcol (or dx): C(q, r) = sum over o of
  // W[o, q] dz[r, o], W read as [K = O, M = K] and dz as [O, rows] with ld O.
  Gemm g;
  g.layout = clblast::Layout::kColMajor;
  g.m = K, g.k = O;
  g.a = sh.w_t, g.lda = K;
  g.b = sh.dy, g.ldb = O;
  // gemm.cl applies the producer's activation derivative as an epilogue (float32 x, dx).
  const bool xact_epilogue = c.gemm().native() && !c.half(sh.x) && !c.half(sh.dx);
  if (p.pointwise && (sh.dx_activation == CLTRAIN_ACT_NONE ||
                      xact_epilogue)) {  // the gather is the identity: s = 0 + t is t (t is never -0)
    g.n = sh.positions();
    g.c = sh.dx, g.ldc = K;
    if (sh.dx_activation != CLTRAIN_ACT_NONE) g.xact = sh.dx_activation, g.xact_y = sh.x;
    g.what = s.what() + " dx = dz W";
    p.actions.push_back(Action(Action::kGemm, g));
    return;
  }
  if (xact_epilogue && !c.half(sh.dy) && sh.h.stride == 1 && sh.w.stride == 1 && O <= c.gemm().native_kc()) {
    Gemm d;
    d.m = static_cast<uint64_t>(sh.n) * sh.h.in * sh.w.in, d.n = I, d.k = sh.taps() * O;
    d.a = sh.dy, d.lda = d.k;
    d.b = kPanel, d.ldb = I;
    d.c = sh.dx, d.ldc = I;
    d.conv = conv_dx_gemm_defines(sh);
    d.k_segment = O;
    if (sh.dx_activation != CLTRAIN_ACT_NONE) d.xact = sh.dx_activation, d.xact_y = sh.x;
    d.what = s.what() + " dx = mirrored panel of dz W (dz in place)";
    p.actions.push_back(Action(Action::kFilterP));
    p.panel_bytes = std::max(p.panel_bytes, (d.k * I + O) * 4);  // and the zeros A_CONV reads
    p.actions.push_back(Action(Action::kGemm, d));
    return;
  }
  if (per_image * K * 4 > p.budget && sh.h.in > 1 && c.lean()) {
    plan_input_grad_bands(c, p, g);
    return;
  }
  if (per_image * K * 4 > p.budget && c.half(sh.dx) && sh.taps() > 1) {
    plan_input_grad_taps(c, p, g);
    return;
  }
  const uint64_t images = aligned_chunk(c, p.budget / (per_image * K * 4), per_image, sh.n);
  p.panel_bytes = std::max(p.panel_bytes, images * per_image * K * 4);
  for (uint64_t n0 = 0; n0 < static_cast<uint64_t>(sh.n); n0 += images) {
    const uint64_t count = std::min<uint64_t>(images, sh.n - n0);
    g.n = count * per_image;
    g.b_off = n0 * per_image * O;
    g.c = kPanel, g.ldc = K;
    g.what = s.what() + " dcol = dz W (images " + std::to_string(n0) + "..)";
    // The same products as column-major C [rows, K] (dcol stored transposed, each element the
    // same chain over o): CLBlast needs no copies when its tiles divide (rows, K) rather than
    // (K, rows); take the orientation with the smaller scratch.
    Gemm t;
    t.layout = clblast::Layout::kColMajor;
    t.ta = clblast::Transpose::kYes, t.tb = clblast::Transpose::kYes;
    t.m = g.n, t.n = K, t.k = O;
    t.a = sh.dy, t.lda = O, t.a_off = g.b_off;
    t.b = sh.w_t, t.ldb = K;
    t.c = kPanel, t.ldc = g.n;
    t.what = s.what() + " dcol^T = (dz W)^T (images " + std::to_string(n0) + "..)";
    const bool transposed = c.gemm_temp_bytes(t) < c.gemm_temp_bytes(g);
    p.actions.push_back(Action(Action::kGemm, transposed ? t : g));
    Action gather(Action::kGather);
    gather.row0 = static_cast<uint32_t>(n0), gather.rows = static_cast<uint32_t>(count);
    gather.transposed = transposed;
    p.actions.push_back(gather);
  }
}

ConvPlan plan_with_budget(const OpContext& c, uint64_t budget) {
  const StepView& s = c.s;
  ConvPlan p;
  p.budget = budget;
  if (const std::string why = check_conv(s, p.sh); !why.empty()) fail(CLTRAIN_INVALID, s.what() + ": " + why);
  const ConvShape& sh = p.sh;
  p.pointwise = sh.has_geometry && sh.taps() == 1 && sh.h.stride == 1 && sh.w.stride == 1 && sh.h.pad_before == 0 &&
                sh.w.pad_before == 0 && sh.h.out == sh.h.in && sh.w.out == sh.w.in;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    plan_forward(c, p);
  } else {
    if (sh.activation != CLTRAIN_ACT_NONE) p.actions.push_back(Action(Action::kActGrad));
    if (sh.db >= 0) p.actions.push_back(Action(Action::kBiasGrad));
    if (sh.dw >= 0) plan_filter_grad(c, p);
    if (sh.dx >= 0) plan_input_grad(c, p);
  }
  for (const Action& a : p.actions)
    if (a.kind == Action::kGemm) p.temp_bytes = std::max(p.temp_bytes, c.gemm_temp_bytes(a.gemm));
  return p;
}

}  // namespace

// The panel and CLBlast's scratch together within c.scratch_budget(): of the panel budgets
// c.scratch_budget(), cap, 3/4 cap, ... 64 KiB, the largest panel whose total fits (fewest chunks),
// else the smallest total (CLBlast copies operands whose chunks are not whole tiles, so a
// smaller panel can cost more).
ConvPlan make_plan(const OpContext& c) {
  std::vector<uint64_t> budgets = {c.scratch_budget()};
  for (uint64_t f = c.scratch_cap(); f >= (64u << 10); f = f * 3 / 4) budgets.push_back(f);
  ConvPlan best;
  bool have = false, best_fits = false;
  for (uint64_t budget : budgets) {
    ConvPlan p = plan_with_budget(c, budget);
    const uint64_t total = p.panel_bytes + p.out_bytes + p.temp_bytes;
    const uint64_t best_total = best.panel_bytes + best.out_bytes + best.temp_bytes;
    const bool fits = total <= c.scratch_budget();
    const bool better = !have ||
                        (fits && (!best_fits || p.panel_bytes > best.panel_bytes ||
                                  (p.panel_bytes == best.panel_bytes && total < best_total))) ||
                        (!fits && !best_fits && total < best_total);
    if (better) best = std::move(p), have = true, best_fits = fits;
  }
  return best;
}

}  // namespace cltrain::ocl
