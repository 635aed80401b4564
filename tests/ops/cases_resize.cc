// RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: forward in [x] out [y], backward in [dy] out [dx], over
// the three coordinate rules (half_pixel_centers as Keras's UpSampling2D and tf.image.resize write
// it, align_corners, neither), up and down, integer and fractional scales, an input of extent 1.
// Exact: the reference follows the numerics' order (the coordinates from
// common/resize_geometry.h, in float as both backends compute them).
#include "case_common.h"
#include "resize_geometry.h"

namespace cltrain {
namespace optest {
namespace {

struct ResizeSpec {
  std::string tag;
  std::vector<int32_t> x;  // [N,H,W,C]
  int32_t oh, ow;
  bool align = false, half = false;
};

OpCase resize_case(int32_t op, const ResizeSpec& s) {
  const bool bilinear = op == CLTRAIN_OP_RESIZE_BILINEAR;
  OpCase c;
  c.op = op;
  c.name = std::string(bilinear ? "ResizeBilinear_" : "ResizeNearestNeighbor_") + s.tag;
  const std::vector<int32_t> ydims{s.x[0], s.oh, s.ow, s.x[3]};
  cltrain_op_params p{};
  p.align_corners = s.align;
  p.half_pixel_centers = s.half;
  const int32_t x = c.input("x", s.x);
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dx = c.output("dx", s.x, CLTRAIN_ROLE_BACK_PROP);
  c.step(op, CLTRAIN_PHASE_FORWARD, {x}, {y}, p);
  c.step(op, CLTRAIN_PHASE_BACKWARD, {dy}, {dx}, p);
  c.y = y;
  c.dy = dy;
  c.grads.push_back({x, dx});
  c.fd_samples = 32;
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 1e-5;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-2;
  const int64_t N = s.x[0], H = s.x[1], W = s.x[2], C = s.x[3], OH = s.oh, OW = s.ow;
  const bool align = s.align, half = s.half;
  const float sh = resize_scale(H, OH, align), sw = resize_scale(W, OW, align);
  // Per output position, its taps (input position, weight factors) in the numerics' order.
  struct Tap {
    int64_t h, w;
    float wh, ww;
  };
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(OH * OW));
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow) {
      std::vector<Tap>& t = taps[static_cast<size_t>(oh * OW + ow)];
      if (bilinear) {
        int64_t h0, h1, w0, w1;
        float th, tw;
        bilinear_source(oh, sh, half, H, &h0, &h1, &th);
        bilinear_source(ow, sw, half, W, &w0, &w1, &tw);
        t = {{h0, w0, 1.0f - th, 1.0f - tw}, {h1, w0, th, 1.0f - tw}, {h0, w1, 1.0f - th, tw}, {h1, w1, th, tw}};
      } else {
        t = {{nearest_source(oh, sh, align, half, H), nearest_source(ow, sw, align, half, W), 1.0f, 1.0f}};
      }
    }
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(x))>::value_type;
    const auto& xv = in.at(x);
    const auto& g = in.at(dy);
    std::vector<T> yv(static_cast<size_t>(N * OH * OW * C)), dxv(xv.size(), T(0));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < OH * OW; ++o)
        for (int64_t ch = 0; ch < C; ++ch) {
          const size_t j = static_cast<size_t>((n * OH * OW + o) * C + ch);
          T acc = 0;
          bool first = true;
          for (const Tap& t : taps[static_cast<size_t>(o)]) {
            const size_t i = static_cast<size_t>(((n * H + t.h) * W + t.w) * C + ch);
            const T term = bilinear ? xv[i] * T(t.wh) * T(t.ww) : xv[i];
            acc = first ? term : acc + term;
            first = false;
            // dx gathers in increasing output position, then tap order: the same sequence.
            dxv[i] = dxv[i] + (bilinear ? g[j] * T(t.wh) * T(t.ww) : g[j]);
          }
          yv[j] = acc;
        }
    return std::decay_t<decltype(in)>{{y, yv}, {dx, dxv}};
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> cases;
  for (int32_t op : {CLTRAIN_OP_RESIZE_BILINEAR, CLTRAIN_OP_RESIZE_NEAREST_NEIGHBOR}) {
    // Keras UpSampling2D(interpolation="bilinear"): size 2, half-pixel centres.
    cases.push_back(resize_case(op, {"half_up2_n2_h3w4_c3", {2, 3, 4, 3}, 6, 8, false, true}));
    cases.push_back(resize_case(op, {"half_down_n1_h6w5_c2", {1, 6, 5, 2}, 3, 2, false, true}));
    cases.push_back(resize_case(op, {"align_n1_h4w3_c2_to_7x5", {1, 4, 3, 2}, 7, 5, true, false}));
    cases.push_back(resize_case(op, {"plain_n2_h3w3_c2_to_5x7", {2, 3, 3, 2}, 5, 7}));
    // An input of extent 1 under align_corners: scale 0, every output reads position 0.
    cases.push_back(resize_case(op, {"align_extent1_n1_h1w3_c2_to_4x5", {1, 1, 3, 2}, 4, 5, true, false}));
  }
  return cases;
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
