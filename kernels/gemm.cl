// The matrix product of CPU devices (POCL and the like), used instead of CLBlast there
// (backend/opencl/gemm_native.h chooses): C = alpha A B + beta C, [M, N] = [M, K] [K, N], every
// operand read or written in place in the pool in either orientation:
//   A_KM 0: A(i, k) = A[i lda + k]   A_KM 1: A(i, k) = A[k lda + i]
//   B_NK 0: B(k, j) = B[k ldb + j]   B_NK 1: B(k, j) = B[j ldb + k]
//   C_T 0:  C(i, j) = C[i ldc + j]   C_T 1:  C(i, j) = C[j ldc + i]
// gemm/gemm_native.cc turns every layout and transpose CLBlast takes into this form, as the product
// itself or as the product of the transposes, so no operand is ever copied to global scratch.
//
// Shape of the work (as a CPU BLAS, not as a GPU kernel): work-groups of one work-item, so that
// POCL keeps the accumulators in registers (with several work-items it interleaves them inside
// the k loop); each group computes an MB x NB block of C (mb, nb at run time, multiples of MR and
// NR). Per KC-slice of k it packs B's block into local memory as NR-column panels, [kk][NR]
// contiguous, which then stay in the L1 cache while the MR x NR register tiles of the block run
// over them; A is read in place, one broadcast per row and k. When the host says so (direct: most
// untransposed Bs, gemm_native.h), B is read in place instead and each tile runs over the whole of
// k at once.
//
// Numerics (cltrain_backend.h): each element of C is one chain acc = fma(A(i, k), B(k, j), acc)
// from acc = 0 over k in increasing order. Between KC-slices the chain's value is kept in local
// memory as the float it is, so slicing changes nothing. Then C = alpha acc when beta is 0 (C is
// not read) and alpha acc + beta C otherwise: the same values as CLBlast's kernels give.

#ifndef MR
#define MR 4  // rows of a register tile
#endif
#ifndef VW
#define VW 8  // lanes of the vectors (8 or 16: the device's native float vector width)
#endif
#ifndef NV
#define NV 2  // vectors of a register tile's row: NR = VW NV columns
#endif
// KC (k per packed slice), NB_MAX and MB_MAX (the largest block): from the device's local memory
// (gemm/gemm_native.cc, native_limits).
#define NR (VW * NV)
#if VW == 16
#define VEC float16
#define VLOAD vload16
#define VSTORE vstore16
#define WIDENV(v, p) CLT_H2F(convert_uint16(vload16((v), (p))), float16, uint16)
#define NARROWV(x) convert_ushort16(CLT_F2H(as_uint16(x), float16, uint16))
#else
#define VEC float8
#define VLOAD vload8
#define VSTORE vstore8
#define WIDENV(v, p) CLT_H2F(convert_uint8(vload8((v), (p))), float8, uint8)
#define NARROWV(x) convert_ushort8(CLT_F2H(as_uint8(x), float8, uint8))
#endif
// Storage of A, B and C (common.cl): A_H, B_H, C_H 1 for float16. A float16 B is widened as it is
// packed or loaded, a float16 A as its slice is packed (apack), a float16 C rounded once as it is
// stored.
#ifndef C_H
#define C_H 0
#endif
// B_CONV 1: B is a convolution's filter-gradient im2col panel read from x in place (below, where
// B is packed), with the geometry CV_H CV_W CV_IC CV_OH CV_OW CV_KW CV_SH CV_SW CV_DH CV_DW CV_PT
// CV_PL.
#ifndef B_CONV
#define B_CONV 0
#endif
// A_CONV 1: A is a convolution's forward im2col panel read from x in place (CONV_TILE), x float32,
// with the same geometry definitions. The input gradient of a stride-1 convolution is the same
// product over dz with the geometry mirrored (ops/conv2d.cc): rows are dx positions, the "taps"
// reach dz at ih + PT - kh DH (CV_SH 1, CV_PT -PT, CV_DH -DH), k = tap O + o, B the filter as
// [KH KW O, I].
#ifndef A_CONV
#define A_CONV 0
#endif
// K_SEG 1 (with A_CONV): the chain restarts at each tap, and the taps' chains are added in order,
// s = s + t from s = 0: per dx element the sums conv_gather_dx makes of dcol's dot products (a tap
// whose dz pixel lies outside adds the +0 of a chain over zeros, which leaves s as it is; s is
// never -0). KC is a multiple of CV_IC, so every run of CONV_TILE is one whole tap.
#ifndef K_SEG
#define K_SEG 0
#endif
#if K_SEG
#define SEG_BEGIN \
  _Pragma("unroll") for (int r = 0; r < MR; ++r) _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[r][v] = (VEC)(0.0f);
#define SEG_END                                                                                             \
  _Pragma("unroll") for (int r = 0; r < MR; ++r) _Pragma("unroll") for (int v = 0; v < NV; ++v) sum[r][v] = \
      sum[r][v] + acc[r][v];
#else
#define SEG_BEGIN
#define SEG_END
#endif
// 8 float16 values at p (ushort bits), widened.
#define WIDEN8(p) CLT_H2F(convert_uint8(vload8(0, (p))), float8, uint8)
#if B_H
#define B_LOADV WIDENV
#else
#define B_LOADV VLOAD
#endif
#if C_H
#define C_STOREV(x, v, p) VSTORE(NARROWV(x), (v), (p))
#define C_STOREV_BETA(x, v, p)  // a float16 C with beta != 0 stores element by element
#else
#define C_STOREV VSTORE
#define C_STOREV_BETA(x, v, p) VSTORE(alpha*(x) + beta * VLOAD((v), (p)), (v), (p))
#endif

#if A_KM
#define A_AT(i, k) ((k)*lda + (i))
#define A_STEP lda
#else
#define A_AT(i, k) ((i)*lda + (k))
#define A_STEP 1
#endif
#if B_NK
#define B_AT(k, j) ((j)*ldb + (k))
#else
#define B_AT(k, j) ((k)*ldb + (j))
#endif
// Packed B: column jj of the block at kk in its NR-wide panel.
#if C_T
#define C_AT(i, j) ((j)*ldc + (i))
#else
#define C_AT(i, j) ((i)*ldc + (j))
#endif
#define PACKED(kk, jj) (((jj) / NR) * (KC * NR) + (kk)*NR + (jj) % NR)

// Inside the loops over a block's tiles (r0: the tile's first row in the block):
// ar[r], A's row r of the tile at k = K0. Rows past M repeat row M - 1: computed, never stored.
// A float16 A is widened once per k-slice into apack ([row of the block][kk], KC apart), from
// which the tiles read it: in place it would be widened at every tile of a row.
#if A_H
#define ROW_POINTERS(K0)       \
  const __local float* ar[MR]; \
  _Pragma("unroll") for (int r = 0; r < MR; ++r) ar[r] = apack + min(r0 + r, mrows - 1) * KC;
#define A_SLICE_STEP 1
#else
#define ROW_POINTERS(K0)        \
  const __global float* ar[MR]; \
  _Pragma("unroll") for (int r = 0; r < MR; ++r) ar[r] = A + A_AT(min(ib + r0 + r, M - 1), (K0));
#define A_SLICE_STEP A_STEP
#endif
// acc += the tile's products over kk < KN, B's row kk of the tile's columns at BPTR + kk BSTRIDE,
// A's row r at ar[r][kk ASTEP]; UNROLL: a loop pragma or nothing (unrolling by 2 measured faster
// in place and slower over packed panels, on POCL); LOADV: VLOAD over packed panels, B_LOADV in
// place.
#define TILE_K_LOOP(BPTR, BSTRIDE, KN, ASTEP, UNROLL, LOADV)                                 \
  UNROLL for (int kk = 0; kk < (KN); ++kk) {                                                 \
    VEC b[NV];                                                                               \
    _Pragma("unroll") for (int v = 0; v < NV; ++v) b[v] = LOADV(v, (BPTR) + kk * (BSTRIDE)); \
    _Pragma("unroll") for (int r = 0; r < MR; ++r) {                                         \
      const VEC a = (VEC)(ar[r][kk * (ASTEP)]);                                              \
      _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[r][v] = fma(a, b[v], acc[r][v]);    \
    }                                                                                        \
  }
// A_CONV: the tile's products over the slice [K0, K0 + KN) with A a convolution's im2col panel read
// from x in place (rows: output positions; k = tap CV_IC + c), B packed at BQ. The slice runs tap
// by tap: each row's pointer moves to its input pixel of the tap; a row whose pixel lies outside
// x (padding) reads CV_IC zeros instead, +0 as a panel holds (fma(+0, w, acc) leaves acc as it
// is), which the host writes after B (B row-major, float32: the zeros at B + K ldb).
#if A_CONV
#define CONV_TILE(K0, KN, BQ)                                                                      \
  {                                                                                                \
    int ihb[MR], iwb[MR], img[MR];                                                                 \
    _Pragma("unroll") for (int r = 0; r < MR; ++r) {                                               \
      const int pos = min(ib + r0 + r, M - 1);                                                     \
      ihb[r] = pos / CV_OW % CV_OH * CV_SH - CV_PT, iwb[r] = pos % CV_OW * CV_SW - CV_PL;          \
      img[r] = pos / (CV_OW * CV_OH);                                                              \
    }                                                                                              \
    const __global float* zeros = (const __global float*)B + K * ldb;                              \
    for (int k1 = 0; k1 < (KN);) {                                                                 \
      const int tap = ((K0) + k1) / CV_IC, c = ((K0) + k1) % CV_IC, run = min((KN)-k1, CV_IC - c); \
      const int kh = tap / CV_KW, kw = tap % CV_KW;                                                \
      const __global float* ar[MR];                                                                \
      _Pragma("unroll") for (int r = 0; r < MR; ++r) {                                             \
        const int ih = ihb[r] + kh * CV_DH, iw = iwb[r] + kw * CV_DW;                              \
        const bool inside = ih >= 0 && ih < CV_H && iw >= 0 && iw < CV_W;                          \
        ar[r] = inside ? A + ((img[r] * CV_H + ih) * CV_W + iw) * CV_IC + c : zeros;               \
      }                                                                                            \
      const __local float* bp = (BQ) + k1 * NR;                                                    \
      SEG_BEGIN                                                                                    \
      TILE_K_LOOP(bp, NR, run, 1, , VLOAD)                                                         \
      SEG_END                                                                                      \
      k1 += run;                                                                                   \
    }                                                                                              \
  }
#endif
// EPI (with beta 0): C = act(alpha acc + b) with the fused ACT and, with HAS_BIAS, the bias at
// bias_off along the given product's columns (the form's rows where it is the product of the
// transposes, EPI_ROWS): what bias_act would do after the GEMM, the same operations, without
// storing alpha acc first (so a float16 C is rounded once).
#if EPI
#if defined(XACT) && XACT
// The derivative of the producer's activation, from its output at the element of C's position
// in the tensor at bias_off (laid out as C): what conv_gather_dx applies to its sums.
typedef float vfloat;
#define EPI_VALUE(x, i, j) CLT_XACT_GRAD(pool[bias_off + C_AT((i), (j))], (x))
#elif HAS_BIAS && EPI_ROWS
#define EPI_VALUE(x, i, j) clt_act((x) + pool[bias_off + (i)])
#elif HAS_BIAS
#define EPI_VALUE(x, i, j) clt_act((x) + pool[bias_off + (j)])
#else
#define EPI_VALUE(x, i, j) clt_act(x)
#endif
#else
#define EPI 0
#define EPI_VALUE(x, i, j) (x)
#endif
// EPI_VALUE over the VW neighbouring columns from j of row i (each element as EPI_VALUE has it):
// the bias and the activations of ACT 0 to 3 on the vector at once (the same add, and common.cl's
// vector form of clt_act), others lane by lane.
#if EPI
#if !(defined(XACT) && XACT) && defined(CLT_ACT_LANES)
CLT_DEFINE_ACTV(epi_actv, VW)
static inline VEC epi_vec(VEC x, int i, int j, __global const float* pool, uint bias_off, int ldc) {
#if HAS_BIAS && EPI_ROWS
  x = x + (VEC)(pool[bias_off + i]);
#elif HAS_BIAS
  x = x + VLOAD(0, pool + bias_off + j);
#endif
  return epi_actv(x);
}
#else
static inline VEC epi_vec(VEC x, int i, int j, __global const float* pool, uint bias_off, int ldc) {
  float e[VW];
  VSTORE(x, 0, e);
  _Pragma("unroll") for (int l = 0; l < VW; ++l) e[l] = EPI_VALUE(e[l], i, j + l);
  return VLOAD(0, e);
}
#endif
#define EPI_VEC(x, i, j) epi_vec((x), (i), (j), pool, bias_off, ldc)
#else
#define EPI_VEC(x, i, j) (x)
#endif
// C of the tile whose columns start at block column CS: its columns from FROM (>= CS) to the
// tile's or the block's end, rows below M. Whole tiles of a row-major C with beta 0 store as
// vectors (through EPI_VEC), and of a float32 C with beta != 0 too (alpha acc + beta C per lane,
// as the element-by-element store computes it).
#define STORE_TILE(CS, FROM)                                                                                           \
  _Pragma("unroll") for (int r = 0; r < MR; ++r) {                                                                     \
    const int i = ib + r0 + r;                                                                                         \
    if (i < M) {                                                                                                       \
      if (!C_T && (CS) == (FROM) && (CS) + NR <= nb && (beta == 0.0f || !C_H)) {                                       \
        __global CLT_T(C_H)* cr = C + C_AT(i, jb + (CS));                                                              \
        if (beta == 0.0f) {                                                                                            \
          _Pragma("unroll") for (int v = 0; v < NV; ++v)                                                               \
              C_STOREV(EPI_VEC(alpha* acc[r][v], i, jb + (CS) + VW * v), v, cr);                                       \
        } else {                                                                                                       \
          _Pragma("unroll") for (int v = 0; v < NV; ++v) C_STOREV_BETA(acc[r][v], v, cr);                              \
        }                                                                                                              \
      } else {                                                                                                         \
        _Pragma("unroll") for (int v = 0; v < NV; ++v) {                                                               \
          float out[VW];                                                                                               \
          VSTORE(acc[r][v], 0, out);                                                                                   \
          _Pragma("unroll 1") for (int l = 0; l < VW; ++l) {                                                           \
            const int j = (CS) + VW * v + l;                                                                           \
            if (j >= (FROM) && j < nb) {                                                                               \
              __global CLT_T(C_H)* c = C + C_AT(i, jb + j);                                                            \
              CLT_ST(C_H, c, 0,                                                                                        \
                     beta == 0.0f ? EPI_VALUE(alpha * out[l], i, jb + j) : alpha * out[l] + beta * CLT_LD(C_H, c, 0)); \
            }                                                                                                          \
          }                                                                                                            \
        }                                                                                                              \
      }                                                                                                                \
    }                                                                                                                  \
  }

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void gemm(__global float* pool, uint a_off, uint b_off,
                                                                  uint c_off, int M, int N, int K, int lda, int ldb,
                                                                  int ldc, int mb, int nb_max, int direct, float alpha,
                                                                  float beta, uint bias_off) {
  // Packed as vectors so that the panels are aligned as the register tiles load them.
  __local VEC packed_vec[KC * NB_MAX / VW];
  __local float* packed = (__local float*)packed_vec;
  __local VEC partial[MB_MAX * NB_MAX / VW];  // the chains between slices, [r][c / VW]
#if A_H
  __local float apack[MB_MAX * KC];
#endif
  const __global CLT_T(A_H)* A = CLT_PTR(A_H) + a_off;
  const __global CLT_T(B_H)* B = CLT_PTR(B_H) + b_off;
  __global CLT_T(C_H)* C = CLT_PTR(C_H) + c_off;
  const int jb = get_group_id(0) * nb_max, ib = get_group_id(1) * mb;
  const int nb = min(nb_max, N - jb);  // columns of this block
  const int nb_up = (nb + NR - 1) / NR * NR;
  const int mrows = min(mb, M - ib);  // rows of this block
#if !B_NK && !A_H && !B_CONV && !A_CONV
  if (direct && nb >= NR) {
    // B in place: no packing, so no slicing of k either; each register tile runs over the whole
    // of k. A block's last, partial panel starts at nb - NR, overlapping the one before; it
    // stores only the columns that one did not.
    for (int c0 = 0; c0 < nb; c0 += NR) {
      const int cs = min(c0, nb - NR);
      const __global CLT_T(B_H)* bg = B + B_AT(0, jb + cs);
      for (int r0 = 0; r0 < mb && ib + r0 < M; r0 += MR) {
        ROW_POINTERS(0)
        VEC acc[MR][NV];
        _Pragma("unroll") for (int r = 0; r < MR; ++r) _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[r][v] =
            (VEC)(0.0f);
        TILE_K_LOOP(bg, ldb, K, A_STEP, _Pragma("unroll 2"), B_LOADV)
        STORE_TILE(cs, c0)
      }
    }
    return;
  }
#endif
  for (int k0 = 0; k0 < K; k0 += KC) {
    const int kc = min(KC, K - k0);
#if B_NK
    for (int jj = 0; jj < nb_up; ++jj) {
      if (jj < nb) {
        const __global CLT_T(B_H)* src = B + B_AT(k0, jb + jj);
        int kk = 0;
#if B_H  // 8 halves widened at a time
        for (; kk + 8 <= kc; kk += 8) {
          float v[8];
          vstore8(WIDEN8(src + kk), 0, v);
          for (int l = 0; l < 8; ++l) packed[PACKED(kk + l, jj)] = v[l];
        }
#endif
        for (; kk < kc; ++kk) packed[PACKED(kk, jj)] = CLT_LD(B_H, src, kk);
      } else {
        for (int kk = 0; kk < kc; ++kk) packed[PACKED(kk, jj)] = 0.0f;
      }
    }
#elif B_CONV
    // B(k, j) of a convolution's filter gradient, read from x in place: the im2col panel's row
    // for output position k, column j = tap CV_IC + c, zeros outside x (the +0 a panel holds).
    // CV_IC is a multiple of VW, so each vector lies in one tap.
    for (int jj = 0; jj < nb_up; jj += VW) {
      if (jj < nb) {
        const int col = jb + jj, tap = col / CV_IC, c = col % CV_IC;
        const int kh = tap / CV_KW, kw = tap % CV_KW;
        int ow = k0 % CV_OW, oh = k0 / CV_OW % CV_OH, n = k0 / (CV_OW * CV_OH);
        for (int kk = 0; kk < kc; ++kk) {
          const int ih = oh * CV_SH + kh * CV_DH - CV_PT, iw = ow * CV_SW + kw * CV_DW - CV_PL;
          const bool in = ih >= 0 && ih < CV_H && iw >= 0 && iw < CV_W;
          VSTORE(in ? B_LOADV(0, B + ((n * CV_H + ih) * CV_W + iw) * CV_IC + c) : (VEC)(0.0f), 0,
                 packed + PACKED(kk, jj));
          if (++ow == CV_OW) {
            ow = 0;
            if (++oh == CV_OH) oh = 0, ++n;
          }
        }
      } else {
        for (int kk = 0; kk < kc; ++kk) VSTORE((VEC)(0.0f), 0, packed + PACKED(kk, jj));
      }
    }
#else
    for (int kk = 0; kk < kc; ++kk) {
      const __global CLT_T(B_H)* src = B + B_AT(k0 + kk, jb);
      int jj = 0;
      // A vector at a time into a panel's row (NR is a multiple of VW), widened if float16.
      for (; jj + VW <= nb; jj += VW) VSTORE(B_LOADV(0, src + jj), 0, packed + PACKED(kk, jj));
      for (; jj < nb_up; ++jj) packed[PACKED(kk, jj)] = jj < nb ? CLT_LD(B_H, src, jj) : 0.0f;
    }
#endif
#if A_H
#if A_KM  // rows are neighbours: 8 widened at a time
    for (int kk = 0; kk < kc; ++kk) {
      int rr = 0;
      for (; rr + 8 <= mrows; rr += 8) {
        float v[8];
        vstore8(WIDEN8(A + A_AT(ib + rr, k0 + kk)), 0, v);
        for (int l = 0; l < 8; ++l) apack[(rr + l) * KC + kk] = v[l];
      }
      for (; rr < mrows; ++rr) apack[rr * KC + kk] = CLT_LD(1, A, A_AT(ib + rr, k0 + kk));
    }
#else  // k is contiguous in a row of A and of apack
    for (int rr = 0; rr < mrows; ++rr) {
      int kk = 0;
      for (; kk + 8 <= kc; kk += 8) vstore8(WIDEN8(A + A_AT(ib + rr, k0 + kk)), 0, apack + rr * KC + kk);
      for (; kk < kc; ++kk) apack[rr * KC + kk] = CLT_LD(1, A, A_AT(ib + rr, k0 + kk));
    }
#endif
#endif
    const bool first = k0 == 0, last = k0 + KC >= K;
    for (int c0 = 0; c0 < nb; c0 += NR) {
      const __local float* bq = packed + (c0 / NR) * (KC * NR);
      for (int r0 = 0; r0 < mb && ib + r0 < M; r0 += MR) {
        VEC acc[MR][NV];
        _Pragma("unroll") for (int r = 0; r < MR; ++r) _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[r][v] =
            first ? (VEC)(0.0f) : partial[(r0 + r) * (NB_MAX / VW) + c0 / VW + v];
#if A_CONV && K_SEG
        VEC sum[MR][NV];
        _Pragma("unroll") for (int r = 0; r < MR; ++r) _Pragma("unroll") for (int v = 0; v < NV; ++v) sum[r][v] =
            acc[r][v];
        CONV_TILE(k0, kc, bq)
        _Pragma("unroll") for (int r = 0; r < MR; ++r) _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[r][v] =
            sum[r][v];
#elif A_CONV
        CONV_TILE(k0, kc, bq)
#else
        ROW_POINTERS(k0)
        TILE_K_LOOP(bq, NR, kc, A_SLICE_STEP, , VLOAD)
#endif
        if (!last) {
          _Pragma("unroll") for (int r = 0; r < MR; ++r) _Pragma("unroll") for (int v = 0; v < NV; ++v)
              partial[(r0 + r) * (NB_MAX / VW) + c0 / VW + v] = acc[r][v];
          continue;
        }
        STORE_TILE(c0, c0)
      }
    }
  }
}
