#include "half.h"

#include <cstring>

namespace cltrain::cpu {

float round_to_half(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint32_t sign = u & 0x80000000u, mag = u & 0x7fffffffu;
  if (mag >= 0x7f800000u) return x;  // Inf, NaN
  uint32_t out;
  if (mag >= 0x38800000u) {  // |x| >= 2^-14: a normal float16 (or beyond its range)
    // Keep 10 of the 23 fraction bits, to nearest, ties to even.
    const uint32_t lsb = (mag >> 13) & 1u;
    uint32_t r = (mag + 0x0fffu + lsb) & ~0x1fffu;
    if (r >= 0x47800000u) r = 0x7f800000u;  // at or above 65520 rounds to 2^16: Inf
    out = r;
  } else {
    // Subnormal float16: multiples of 2^-24. Round |x| / 2^-24 to an integer, ties to even, and
    // scale back (exact: the result is a small integer times a power of two).
    float a;
    std::memcpy(&a, &mag, 4);
    const float q = a * 16777216.0f;  // exact: a power of two
    float n = static_cast<float>(static_cast<uint32_t>(q));
    const float rest = q - n;
    if (rest > 0.5f || (rest == 0.5f && (static_cast<uint32_t>(n) & 1u))) n += 1.0f;
    const float v = n / 16777216.0f;
    std::memcpy(&out, &v, 4);
  }
  out |= sign;
  float y;
  std::memcpy(&y, &out, 4);
  return y;
}

void round_half_outputs(const StepView& v, const std::vector<uint8_t>& half) {
  for (int i = 0; i < v.step->num_outputs; ++i) {
    const int32_t id = v.step->outputs[i];
    if (id < 0 || static_cast<size_t>(id) >= half.size() || !half[static_cast<size_t>(id)]) continue;
    float* p = v.out[i].data;
    for (uint64_t e = 0; e < v.out[i].elements; ++e) p[e] = round_to_half(p[e]);
  }
}

}  // namespace cltrain::cpu
