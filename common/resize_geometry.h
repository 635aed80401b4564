// Where RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR read along one axis (cltrain_ops.h), in the
// float arithmetic both backends use (kernels/resize.cl computes the same in OpenCL C), and the
// output positions whose reads can reach one input position (the backward's gather).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cltrain {

// Input extent per output step.
inline float resize_scale(int64_t in, int64_t out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

// Bilinear: output position o reads lo with weight 1 - t and hi with weight t.
inline void bilinear_source(int64_t o, float scale, bool half_pixel_centers, int64_t in, int64_t* lo, int64_t* hi,
                            float* t) {
  const float f = half_pixel_centers ? (static_cast<float>(o) + 0.5f) * scale - 0.5f : static_cast<float>(o) * scale;
  *lo = std::max<int64_t>(static_cast<int64_t>(std::floor(f)), 0);
  *hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(f)), in - 1);
  *t = f - static_cast<float>(*lo);
}

// Nearest: the input position output position o copies.
inline int64_t nearest_source(int64_t o, float scale, bool align_corners, bool half_pixel_centers, int64_t in) {
  const float f = (static_cast<float>(o) + (half_pixel_centers ? 0.5f : 0.0f)) * scale;
  int64_t i = std::min<int64_t>(static_cast<int64_t>(align_corners ? std::round(f) : std::floor(f)), in - 1);
  if (half_pixel_centers) i = std::max<int64_t>(i, 0);
  return i;
}

// Output positions [*begin, *end) that include every one reading input position i (a superset:
// the reads are checked one by one, in increasing order).
inline void resize_candidates(int64_t i, float scale, int64_t out, int64_t* begin, int64_t* end) {
  if (!(scale > 0.0f)) {
    *begin = 0, *end = out;
    return;
  }
  *begin = std::max<int64_t>(static_cast<int64_t>(std::floor(static_cast<float>(i - 2) / scale)) - 2, 0);
  *end = std::min<int64_t>(static_cast<int64_t>(std::ceil(static_cast<float>(i + 2) / scale)) + 3, out);
}

}  // namespace cltrain
