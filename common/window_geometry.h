// Output size and leading padding of one spatial axis of a convolution or pool window, as both
// backends compute it (cltrain_ops.h states the SAME/VALID rules).
#pragma once

#include <cstdint>
#include <string>

namespace cltrain {

struct AxisGeometry {
  int64_t out = 0;         // output positions
  int64_t pad_before = 0;  // padding before the first input position
};

// Empty string on success; else one line naming the problem ("stride height 0 is less than 1").
// `what` names the axis ("height", "width").
std::string axis_geometry(int32_t padding, int64_t in, int64_t filter, int64_t stride, int64_t dilation,
                          const char* what, AxisGeometry* g);

}  // namespace cltrain
