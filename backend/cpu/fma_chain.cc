#include "fma_chain.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CLTRAIN_CPU_X86 1
#endif

namespace cltrain {
namespace cpu {
namespace {

std::atomic<bool> g_simd_allowed{true};

bool processor_has_avx2_fma() {
#ifdef CLTRAIN_CPU_X86
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

// --- the portable path: std::fma, a block of columns at a time ---

template <bool kSum>
void chain_generic(const ChainShape& s, const ChainSegment* segs, size_t n) {
  constexpr int64_t kBlock = 16;
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t c0 = 0; c0 < s.cols; c0 += kBlock) {
      const int64_t w = std::min(kBlock, s.cols - c0);
      float* out = s.acc + r * s.acc_row + c0;
      float v[kBlock];
      for (int64_t j = 0; j < w; ++j) v[j] = out[j];
      for (size_t i = 0; i < n; ++i) {
        const float* a = segs[i].a + r * s.a_row;
        const float* b = segs[i].b + c0;
        float t[kBlock] = {};
        float* dst = kSum ? t : v;
        for (int64_t k = 0; k < segs[i].len; ++k) {
          const float av = a[k * s.a_step];
          const float* bk = b + k * s.b_step;
          for (int64_t j = 0; j < w; ++j) dst[j] = std::fma(av, bk[j], dst[j]);
        }
        if (kSum)
          for (int64_t j = 0; j < w; ++j) v[j] = v[j] + t[j];
      }
      for (int64_t j = 0; j < w; ++j) out[j] = v[j];
    }
}

#ifdef CLTRAIN_CPU_X86
#define CLTRAIN_AVX2 __attribute__((target("avx2,fma")))

// Lanes of the last vector of a tile that are inside the columns (1..8).
CLTRAIN_AVX2 inline __m256i lane_mask(int lanes) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), idx);
}

// A tile of R rows by CB vectors of 8 columns, kept in registers over all segments. The last
// vector holds `last_lanes` columns (masked loads and stores never touch the others).
template <int R, int CB, bool kSum>
CLTRAIN_AVX2 void tile_avx2(const ChainShape& s, const ChainSegment* segs, size_t n, int64_t r0, int64_t c0,
                            int last_lanes) {
  const bool masked = last_lanes != 8;
  const __m256i mask = lane_mask(last_lanes);
  float* out = s.acc + r0 * s.acc_row + c0;
  __m256 acc[R][CB];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int cb = 0; cb < CB; ++cb) {
      float* p = out + r * s.acc_row + cb * 8;
      acc[r][cb] = (masked && cb == CB - 1) ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
    }
  for (size_t i = 0; i < n; ++i) {
    const float* a = segs[i].a + r0 * s.a_row;
    const float* b = segs[i].b + c0;
    __m256 t[R][CB];
    if constexpr (kSum) {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int cb = 0; cb < CB; ++cb) t[r][cb] = _mm256_setzero_ps();
    }
    for (int64_t k = 0; k < segs[i].len; ++k) {
      __m256 bv[CB];
#pragma GCC unroll 4
      for (int cb = 0; cb < CB; ++cb)
        bv[cb] = (masked && cb == CB - 1) ? _mm256_maskload_ps(b + cb * 8, mask) : _mm256_loadu_ps(b + cb * 8);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r * s.a_row);
#pragma GCC unroll 4
        for (int cb = 0; cb < CB; ++cb) {
          if constexpr (kSum)
            t[r][cb] = _mm256_fmadd_ps(av, bv[cb], t[r][cb]);
          else
            acc[r][cb] = _mm256_fmadd_ps(av, bv[cb], acc[r][cb]);
        }
      }
      a += s.a_step;
      b += s.b_step;
    }
    if constexpr (kSum) {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int cb = 0; cb < CB; ++cb) acc[r][cb] = _mm256_add_ps(acc[r][cb], t[r][cb]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int cb = 0; cb < CB; ++cb) {
      float* p = out + r * s.acc_row + cb * 8;
      if (masked && cb == CB - 1)
        _mm256_maskstore_ps(p, mask, acc[r][cb]);
      else
        _mm256_storeu_ps(p, acc[r][cb]);
    }
}

using TileFn = void (*)(const ChainShape&, const ChainSegment*, size_t, int64_t, int64_t, int);

// Tiles by rows (1, 2, 4) and vectors (1..4); 16 ymm registers bound rows x vectors (twice
// that for sums, which keep a second set of registers for the running chain).
template <bool kSum>
struct Tiles {
  static constexpr int max_vectors(int rows) {
    return kSum ? (rows == 1 ? 4 : rows == 2 ? 2 : 1) : (rows == 4 ? 2 : 4);
  }
  static TileFn get(int rows, int vectors) {
    static const TileFn table[3][4] = {
        {tile_avx2<1, 1, kSum>, tile_avx2<1, 2, kSum>, tile_avx2<1, 3, kSum>, tile_avx2<1, 4, kSum>},
        {tile_avx2<2, 1, kSum>, tile_avx2<2, 2, kSum>, tile_avx2<2, 3, kSum>, tile_avx2<2, 4, kSum>},
        {tile_avx2<4, 1, kSum>, tile_avx2<4, 2, kSum>, tile_avx2<4, 3, kSum>, tile_avx2<4, 4, kSum>},
    };
    return table[rows == 1 ? 0 : rows == 2 ? 1 : 2][vectors - 1];
  }
};

template <bool kSum>
void chain_avx2(const ChainShape& s, const ChainSegment* segs, size_t n) {
  for (int64_t r0 = 0; r0 < s.rows;) {
    const int rows = s.rows - r0 >= 4 ? 4 : s.rows - r0 >= 2 ? 2 : 1;
    const int64_t width = Tiles<kSum>::max_vectors(rows) * 8;
    for (int64_t c0 = 0; c0 < s.cols; c0 += width) {
      const int64_t w = std::min(width, s.cols - c0);
      const int vectors = static_cast<int>((w + 7) / 8);
      const int last = static_cast<int>(w - (vectors - 1) * 8);
      Tiles<kSum>::get(rows, vectors)(s, segs, n, r0, c0, last);
    }
    r0 += rows;
  }
}

CLTRAIN_AVX2 void elementwise_avx2(float* acc, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(acc + i,
                     _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), _mm256_loadu_ps(acc + i)));
  for (; i < n; ++i) acc[i] = std::fma(a[i], b[i], acc[i]);
}
#endif  // CLTRAIN_CPU_X86

}  // namespace

bool simd_enabled() { return g_simd_allowed.load(std::memory_order_relaxed) && processor_has_avx2_fma(); }

void set_simd_allowed(bool allowed) { g_simd_allowed.store(allowed, std::memory_order_relaxed); }

void fma_chain(const ChainShape& s, const ChainSegment* segs, size_t num_segs) {
  if (s.rows <= 0 || s.cols <= 0) return;
#ifdef CLTRAIN_CPU_X86
  if (simd_enabled()) return chain_avx2<false>(s, segs, num_segs);
#endif
  chain_generic<false>(s, segs, num_segs);
}

void fma_chain_sum(const ChainShape& s, const ChainSegment* segs, size_t num_segs) {
  if (s.rows <= 0 || s.cols <= 0) return;
#ifdef CLTRAIN_CPU_X86
  if (simd_enabled()) return chain_avx2<true>(s, segs, num_segs);
#endif
  chain_generic<true>(s, segs, num_segs);
}

void fma_elementwise(float* acc, const float* a, const float* b, int64_t n) {
#ifdef CLTRAIN_CPU_X86
  if (simd_enabled()) return elementwise_avx2(acc, a, b, n);
#endif
  for (int64_t i = 0; i < n; ++i) acc[i] = std::fma(a[i], b[i], acc[i]);
}

}  // namespace cpu
}  // namespace cltrain
