// The matrix product of CPU devices (kernels/gemm.cl) and which GEMM engine a device uses.
//
// On POCL's CPU device CLBlast's kernels reach a tenth of the machine's GEMM rate at large sizes
// and copy operands into scratch for most orientations; gemm.cl is written as a CPU BLAS is
// (one work-item per block, B packed in local memory, register tiles of the device's vectors),
// reads every orientation in place and needs no scratch. GPUs keep CLBlast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <clblast.h>
#include "device/cl_headers.h"

namespace cltrain::ocl {

enum class GemmKind { kClblast, kNative };

// gemm.cl's register tile: mr rows by nv vectors of vw floats (nr = vw nv columns). The device's
// native float vector width (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT) chooses: 16 (AVX-512) gets 8 x 32
// tiles of float16 (16 accumulators of the 32 vector registers), anything else 4 x 16 of float8
// (8 of AVX2's 16). CLTRAIN_OPENCL_GEMM_TILE=MRxNVxVW (for example 8x2x16) overrides, for tuning;
// a malformed value is ignored.
struct NativeTile {
  size_t mr = 4, nv = 2, vw = 8;
  size_t nr() const { return nv * vw; }
};
NativeTile native_tile(cl_uint native_float_width);

// gemm.cl's compile-time sizes, from the device's local memory (CL_DEVICE_LOCAL_MEM_SIZE): the
// packed slice of B (kc x nb_max floats) and the chains between slices (mb_max x nb_max floats)
// live there. The largest of 128 x 64, 64 x 32 and 32 x 16 blocks (those of whole tiles) whose
// slice can still be at least 64 deep, kc up to 320; kc 0 where not even that fits.
struct NativeLimits {
  size_t kc = 0, nb_max = 0, mb_max = 0;
  NativeTile tile;
};
// pack_a: room for a float16 A's packed slice too (gemm.cl's apack).
NativeLimits native_limits(uint64_t local_mem_bytes, bool pack_a = false, const NativeTile& tile = {});

// CLTRAIN_OPENCL_GEMM=native or =clblast chooses for every device; otherwise CPU devices
// (CL_DEVICE_TYPE_CPU) get the native kernel and the others CLBlast, and so do CPU devices whose
// local memory is too small for gemm.cl. An unknown value, or native where gemm.cl does not fit,
// is an error (a message in *error, kClblast returned).
GemmKind choose_gemm_engine(cl_device_type type, uint64_t local_mem_bytes, std::string* error);

// A GEMM in gemm.cl's form: C(i, j) of [m, n] at C[c_t ? j ldc + i : i ldc + j],
// A(i, k) = A[a_km ? k lda + i : i lda + k], B(k, j) = B[b_nk ? j ldb + k : k ldb + j].
// swapped: the operands of the given call trade places, for the product of the transposes
// (C^T = op(B)^T op(A)^T), which gemm.cl computes whenever that fits its tiles better: fewer
// padded columns and rows, a B it can read in place, C stored as rows.
struct NativeForm {
  size_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  bool a_km = false, b_nk = false, c_t = false, swapped = false;
};
NativeForm native_form(clblast::Layout layout, clblast::Transpose ta, clblast::Transpose tb, size_t m, size_t n,
                       size_t k, size_t lda, size_t ldb, size_t ldc, const NativeTile& tile = {},
                       bool allow_swap = true);

// The limits for one product in form f: the device's, with a tile half as wide (nv halved, down to
// one vector) while f has fewer columns than a tile. A product narrower than a tile would be
// padded and packed slice by slice; with a tile that fits it reads B in place (direct), and its
// last panel overlaps the one before.
NativeLimits native_call_limits(const NativeLimits& device_limits, const NativeForm& f);

// The block of C one work-group computes: the largest up to mb_max x nb_max that still gives
// every compute unit about four groups (smaller blocks only where the product is small). direct:
// an untransposed B is read in place rather than packed, and each register tile runs over the
// whole of k. That is faster (measured with gemm_bench on POCL) except for blocks of many rows
// over a B whose rows lie a multiple of kNativeAliasStride floats apart: those rows then share
// few L1 sets, and the packed panels are faster.
struct NativeBlocks {
  size_t mb = 0, nb = 0, groups_m = 0, groups_n = 0;
  bool direct = false;
};
constexpr size_t kNativeDirectRows = 32, kNativeAliasStride = 256;
NativeBlocks native_blocks(const NativeForm& f, size_t compute_units, const NativeLimits& limits);

// Sets every argument of gemm.cl's kernel for the call whose operands lie at element offsets
// a_off, b_off and c_off of pool (as the call gives them: f.swapped trades A's and B's places
// here), and the bias of an EPI epilogue at bias_off. Returns the first error of clSetKernelArg,
// and its argument index in *failed_arg.
cl_int set_native_args(cl_kernel kernel, cl_mem pool, cl_uint a_off, cl_uint b_off, cl_uint c_off, const NativeForm& f,
                       const NativeBlocks& blocks, float alpha, float beta, cl_uint* failed_arg, cl_uint bias_off = 0);

// gemm.cl's -D definitions for f under limits: "-DA_KM=1 -DB_NK=0 -DC_T=0 -DKC=320 ... -DMR=4 -DNV=2 -DVW=8", with the
// storage of the given product's A, B and C (float16 where true; swapped with f).
std::string native_defines(const NativeForm& f, const NativeLimits& limits, bool a_half = false, bool b_half = false,
                           bool c_half = false);

}  // namespace cltrain::ocl
