#include "gemm/gemm_native.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace cltrain::ocl {

NativeTile native_tile(cl_uint native_float_width) {
  NativeTile t;
  if (native_float_width >= 16) t.mr = 8, t.nv = 2, t.vw = 16;
  if (const char* env = std::getenv("CLTRAIN_OPENCL_GEMM_TILE"); env && *env) {
    unsigned mr = 0, nv = 0, vw = 0;
    char end = 0;
    if (std::sscanf(env, "%ux%ux%u%c", &mr, &nv, &vw, &end) == 3 && (mr == 2 || mr == 4 || mr == 8 || mr == 16) &&
        (nv == 1 || nv == 2 || nv == 4) && (vw == 8 || vw == 16) && mr * nv * vw / 8 <= 64)
      t.mr = mr, t.nv = nv, t.vw = vw;
  }
  return t;
}

NativeLimits native_limits(uint64_t local_mem_bytes, bool pack_a, const NativeTile& tile) {
  const uint64_t usable = local_mem_bytes > 1024 ? local_mem_bytes - 1024 : 0;  // a margin for the compiler's own
  for (size_t nb = 128; nb >= 32; nb /= 2) {
    const size_t mb = nb / 2;
    if (nb % tile.nr() != 0 || mb % tile.mr != 0) continue;
    const uint64_t partial = uint64_t{mb} * nb * 4;
    if (usable < partial) continue;
    // Per k of a slice: B's packed row (nb floats) and, for a float16 A, A's packed column (mb).
    const uint64_t per_k = (uint64_t{nb} + (pack_a ? mb : 0)) * 4;
    const uint64_t kc = std::min<uint64_t>(320, (usable - partial) / per_k / 8 * 8);
    if (kc >= 64) return {static_cast<size_t>(kc), nb, mb, tile};
  }
  return {};
}

GemmKind choose_gemm_engine(cl_device_type type, uint64_t local_mem_bytes, std::string* error) {
  const bool fits = native_limits(local_mem_bytes).kc > 0;
  if (const char* env = std::getenv("CLTRAIN_OPENCL_GEMM"); env && *env) {
    const std::string v = env;
    if (v == "clblast") return GemmKind::kClblast;
    if (v == "native" && fits) return GemmKind::kNative;
    if (error)
      *error = v == "native" ? "CLTRAIN_OPENCL_GEMM=native: the device's " + std::to_string(local_mem_bytes) +
                                   " bytes of local memory are too few for kernels/gemm.cl"
                             : "CLTRAIN_OPENCL_GEMM is '" + v + "'; it takes native or clblast";
    return GemmKind::kClblast;
  }
  return (type & CL_DEVICE_TYPE_CPU) && fits ? GemmKind::kNative : GemmKind::kClblast;
}

NativeForm native_form(clblast::Layout layout, clblast::Transpose ta, clblast::Transpose tb, size_t m, size_t n,
                       size_t k, size_t lda, size_t ldb, size_t ldc, const NativeTile& tile, bool allow_swap) {
  const bool col = layout == clblast::Layout::kColMajor;
  const bool at = ta != clblast::Transpose::kNo, bt = tb != clblast::Transpose::kNo;
  // The product as given: op(A)(i, k) is A[k lda + i] for a row-major transposed or a
  // column-major untransposed A; op(B)(k, j) is B[j ldb + k] likewise.
  NativeForm given;
  given.m = m, given.n = n, given.k = k;
  given.lda = lda, given.ldb = ldb, given.ldc = ldc;
  given.a_km = col ? !at : at;
  given.b_nk = col ? !bt : bt;
  given.c_t = col;
  // The product of the transposes: A'(j, k) = op(B)(k, j), B'(k, i) = op(A)(i, k), C'(j, i) = C(i, j).
  NativeForm t;
  t.m = n, t.n = m, t.k = k;
  t.lda = ldb, t.ldb = lda, t.ldc = ldc;
  t.a_km = !given.b_nk;
  t.b_nk = !given.a_km;
  t.c_t = !col;
  t.swapped = true;
  // Work in whole register tiles, dearer where B is packed from a transposed layout and where C
  // is stored element by element.
  const size_t mr = tile.mr, nr = tile.nr();
  auto cost = [&](const NativeForm& f) {
    const double tiles = double((f.m + mr - 1) / mr * mr) * double((f.n + nr - 1) / nr * nr);
    return tiles * (1.0 + (f.b_nk ? 0.25 : 0.0) + (f.c_t ? 0.1 : 0.0));
  };
  return allow_swap && cost(t) < cost(given) ? t : given;
}

NativeLimits native_call_limits(const NativeLimits& device_limits, const NativeForm& f) {
  NativeLimits l = device_limits;
  while (l.tile.nv > 1 && f.n < l.tile.nr()) l.tile.nv /= 2;
  return l;
}

NativeBlocks native_blocks(const NativeForm& f, size_t compute_units, const NativeLimits& limits) {
  const size_t m = f.m, n = f.n, mr = limits.tile.mr, nr = limits.tile.nr();
  auto round_up = [](size_t v, size_t unit) { return (v + unit - 1) / unit * unit; };
  NativeBlocks b;
  b.mb = std::min(limits.mb_max, round_up(std::max<size_t>(m, 1), mr));
  b.nb = std::min(limits.nb_max, round_up(std::max<size_t>(n, 1), nr));
  const size_t want = 4 * std::max<size_t>(compute_units, 1);
  auto groups = [&] { return ((m + b.mb - 1) / b.mb) * ((n + b.nb - 1) / b.nb); };
  // Narrower blocks only where the last one still holds a whole tile: one narrower than a tile
  // cannot read B in place and packs it, slice by slice, for a single tile.
  auto last_holds_a_tile = [&](size_t nb) { return n % nb == 0 || n % nb >= nr; };
  while (groups() < want) {
    if (b.mb > 4 * mr) {
      b.mb = round_up(b.mb / 2, mr);
    } else if (b.nb > nr && last_holds_a_tile(round_up(b.nb / 2, nr))) {
      b.nb = round_up(b.nb / 2, nr);
    } else if (b.mb > mr) {
      b.mb = round_up(b.mb / 2, mr);
    } else {
      break;
    }
  }
  b.direct = !f.b_nk && (b.mb <= kNativeDirectRows || f.ldb % kNativeAliasStride != 0);
  b.groups_m = (m + b.mb - 1) / b.mb;
  b.groups_n = (n + b.nb - 1) / b.nb;
  return b;
}

cl_int set_native_args(cl_kernel kernel, cl_mem pool, cl_uint a_off, cl_uint b_off, cl_uint c_off, const NativeForm& f,
                       const NativeBlocks& blocks, float alpha, float beta, cl_uint* failed_arg, cl_uint bias_off) {
  const cl_uint first = f.swapped ? b_off : a_off, second = f.swapped ? a_off : b_off;
  const cl_int ints[9] = {static_cast<cl_int>(f.m),       static_cast<cl_int>(f.n),       static_cast<cl_int>(f.k),
                          static_cast<cl_int>(f.lda),     static_cast<cl_int>(f.ldb),     static_cast<cl_int>(f.ldc),
                          static_cast<cl_int>(blocks.mb), static_cast<cl_int>(blocks.nb), blocks.direct ? 1 : 0};
  struct Arg {
    size_t size;
    const void* value;
  };
  const Arg args[16] = {{sizeof pool, &pool},
                        {sizeof first, &first},
                        {sizeof second, &second},
                        {sizeof c_off, &c_off},
                        {4, &ints[0]},
                        {4, &ints[1]},
                        {4, &ints[2]},
                        {4, &ints[3]},
                        {4, &ints[4]},
                        {4, &ints[5]},
                        {4, &ints[6]},
                        {4, &ints[7]},
                        {4, &ints[8]},
                        {sizeof alpha, &alpha},
                        {sizeof beta, &beta},
                        {sizeof bias_off, &bias_off}};
  for (cl_uint i = 0; i < 16; ++i)
    if (const cl_int err = clSetKernelArg(kernel, i, args[i].size, args[i].value); err != CL_SUCCESS) {
      if (failed_arg) *failed_arg = i;
      return err;
    }
  return CL_SUCCESS;
}

std::string native_defines(const NativeForm& f, const NativeLimits& limits, bool a_half, bool b_half, bool c_half) {
  if (f.swapped) std::swap(a_half, b_half);
  std::string d = std::string("-DA_KM=") + (f.a_km ? "1" : "0") + " -DB_NK=" + (f.b_nk ? "1" : "0") +
                  " -DC_T=" + (f.c_t ? "1" : "0") + " -DKC=" + std::to_string(limits.kc) +
                  " -DNB_MAX=" + std::to_string(limits.nb_max) + " -DMB_MAX=" + std::to_string(limits.mb_max) +
                  " -DMR=" + std::to_string(limits.tile.mr) + " -DNV=" + std::to_string(limits.tile.nv) +
                  " -DVW=" + std::to_string(limits.tile.vw);
  if (a_half || b_half || c_half)
    d += std::string(" -DA_H=") + (a_half ? "1" : "0") + " -DB_H=" + (b_half ? "1" : "0") +
         " -DC_H=" + (c_half ? "1" : "0");
  return d;
}

}  // namespace cltrain::ocl
