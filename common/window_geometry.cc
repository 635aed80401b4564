#include "window_geometry.h"

#include "cltrain/cltrain_ops.h"

namespace cltrain {

std::string axis_geometry(int32_t padding, int64_t in, int64_t filter, int64_t stride, int64_t dilation,
                          const char* what, AxisGeometry* g) {
  const std::string w(what);
  if (stride < 1) return "stride " + w + " " + std::to_string(stride) + " is less than 1";
  if (dilation < 1) return "dilation " + w + " " + std::to_string(dilation) + " is less than 1";
  if (filter < 1) return "filter " + w + " " + std::to_string(filter) + " is less than 1";
  if (in < 1) return "input " + w + " " + std::to_string(in) + " is empty";
  const int64_t span = (filter - 1) * dilation + 1;
  if (padding == CLTRAIN_PADDING_SAME) {
    g->out = (in + stride - 1) / stride;
    const int64_t total = (g->out - 1) * stride + span - in;
    g->pad_before = total > 0 ? total / 2 : 0;
  } else if (padding == CLTRAIN_PADDING_VALID) {
    if (in < span)
      return "filter " + w + " " + std::to_string(filter) + " (dilation " + std::to_string(dilation) +
             ") does not fit input " + w + " " + std::to_string(in) + " with VALID padding";
    g->out = (in - span) / stride + 1;
    g->pad_before = 0;
  } else {
    return "padding " + std::to_string(padding) + " is not SAME (0) or VALID (1)";
  }
  return {};
}

}  // namespace cltrain
