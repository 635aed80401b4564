// CONV_2D's plan (conv2d.cc describes the steps): what its forward or backward step enqueues, in
// run order, and the scratch that takes, chosen within the step's scratch budget.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ops/conv_shape.h"
#include "ops/op.h"

namespace cltrain::ocl {

// Placeholders for the step's panel (or dcol) and a float16 y's float32 chunk in the Gemm
// records, resolved in prepare.
constexpr int32_t kPanel = -2, kOut = -3;

// One thing the step enqueues, in run order.
struct Action {
  enum Kind {
    kPanelFill,
    kGemm,
    kGather,
    kBiasAct,
    kActGrad,
    kBiasGrad,
    kWiden,
    kFilterT,
    kFilterP,
    kSmallFilterGrad
  } kind;
  explicit Action(Kind k, Gemm g = {}) : kind(k), gemm(std::move(g)) {}
  Gemm gemm;                                  // kGemm
  uint32_t row0 = 0, rows = 0;                // kPanelFill: output positions; kGather: images (n0, count)
  uint32_t p0 = 0, c0 = 0, taps = 0, ch = 0;  // kPanelFill: the block of taps and channels
  bool transposed = false;                    // kPanelFill: [columns, rows] (conv_panel_t); kGather: dcol is [K, rows]
  // kGather of a band (conv_gather_dx_band): image row0, dcol holds output rows [oh0, oh0 + band),
  // dx rows [ih0, ih0 + ihn)
  bool banded = false;
  // kGather of a block of taps (conv_gather_dx_taps): image row0, dcol holds taps [p0, p0 + taps)
  bool tapped = false, first = false, last = false;
  uint32_t oh0 = 0, band = 0, ih0 = 0, ihn = 0;
};

struct ConvPlan {
  ConvShape sh;
  bool pointwise = false;
  std::vector<Action> actions;
  uint64_t panel_bytes = 0, temp_bytes = 0;  // the panel also holds dcol (dW and dx run one after the other)
  uint64_t out_bytes = 0;                    // the sums of dx by taps and dz widened
  uint64_t budget = 0;                       // for the panel
};

// The plan of c's step: of the panel budgets c.scratch_budget(), cap, 3/4 cap, ... 64 KiB, the
// one whose panel is largest and whose total scratch fits.
ConvPlan make_plan(const OpContext& c);

}  // namespace cltrain::ocl
