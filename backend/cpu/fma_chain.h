// Sequential fused multiply-add chains: the dot products of cltrain_backend.h's Numerics
// ("acc = fma(a_k, b_k, acc) for k = 0, 1, ... in increasing order"), computed for many
// independent outputs at once. Every output element's chain runs in its defined order; what is
// done in parallel (SIMD lanes, several rows, threads of the callers) is only ever independent
// outputs, so the results are bit for bit those of the scalar definition.
//
// Two implementations, chosen at run time: AVX2 + FMA intrinsics where the processor has them,
// else std::fma (exact everywhere; the C library uses the instruction where there is one).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cltrain {
namespace cpu {

// One run of consecutive terms of a chain: term k (0 <= k < len) multiplies
// a[k * a_step + r * a_row] (row r) by b[k * b_step + c] (column c).
struct ChainSegment {
  const float* a;
  const float* b;
  int64_t len;
};

struct ChainShape {
  int64_t rows = 1, cols = 0;
  int64_t a_step = 1, a_row = 0;  // see ChainSegment
  int64_t b_step = 0;
  float* acc = nullptr;  // acc[r * acc_row + c], read and written
  int64_t acc_row = 0;
};

// One chain per output over all segments in order: for each segment, for each term,
// acc = fma(a, b, acc).
void fma_chain(const ChainShape& s, const ChainSegment* segs, size_t num_segs);

// One chain per segment, each started at 0 and then added to the output:
// t = 0; t = fma(a, b, t) over the segment's terms; acc = acc + t; for each segment in order.
void fma_chain_sum(const ChainShape& s, const ChainSegment* segs, size_t num_segs);

// acc[i] = fma(a[i], b[i], acc[i]) for i < n.
void fma_elementwise(float* acc, const float* a, const float* b, int64_t n);

// True where the AVX2 + FMA path is in use (the processor has it and it is not switched off).
bool simd_enabled();
// Switches the SIMD path off (false) or back on where the processor has it; for tests that
// check that both paths give the same bits. Not thread-safe against running steps.
void set_simd_allowed(bool allowed);

}  // namespace cpu
}  // namespace cltrain
