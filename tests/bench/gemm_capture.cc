// libgemm_capture.so: records every clblast::Gemm<float> call of a process, then forwards it to
// CLBlast unchanged. For gemm_bench --calls: the GEMMs exactly as the OpenCL backend issues them
// at HEAD (whatever its chunking and memory planning decide), without mirroring its code.
//
//   GEMM_CAPTURE_FILE=calls.txt LD_PRELOAD=build/libgemm_capture.so build/cltrain bench mk.circle
//       --batch_size 32 --warmup 0 --steps 1 --backends opencl     (one command line)
//   build/gemm_bench --calls calls.txt
//
// One line per call: "L TA TB m n k a_offset lda b_offset ldb c_offset ldc" (L: R or C; TA, TB: N, T
// or C), in call order. The plugin is dlopen()ed and resolves clblast::Gemm<float> through the
// global scope first, where an LD_PRELOAD library is; this one forwards to libclblast.so.1.
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "cl_headers.h"

namespace {

// clblast::Gemm<float> (clblast.h, CLBlast 1.x): the enums are int-sized enum classes
// (Layout kRowMajor = 101, kColMajor = 102; Transpose kNo = 111, kYes = 112, kConjugate = 113).
using GemmFn = int (*)(int, int, int, size_t, size_t, size_t, float, cl_mem, size_t, size_t, cl_mem, size_t, size_t,
                       float, cl_mem, size_t, size_t, cl_command_queue*, cl_event*, cl_mem);
constexpr const char* kGemmFloat =
    "_ZN7clblast4GemmIfEENS_10StatusCodeENS_6LayoutENS_9TransposeES3_mmmT_P7_cl_memmmS6_mmS4_S6_mmPP17_cl_command_queuePP9_cl_eventS6_";

char trans(int t) { return t == 112 ? 'T' : t == 113 ? 'C' : 'N'; }

std::mutex mu;
FILE* out = nullptr;
GemmFn next = nullptr;

}  // namespace

extern "C" __attribute__((visibility("default"))) int gemm_capture_float(
    int layout, int ta, int tb, size_t m, size_t n, size_t k, float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b,
    size_t b_off, size_t ldb, float beta, cl_mem c, size_t c_off, size_t ldc, cl_command_queue* queue, cl_event* event,
    cl_mem temp) __asm__("_ZN7clblast4GemmIfEENS_10StatusCodeENS_6LayoutENS_9TransposeES3_mmmT_P7_cl_memmmS6_mmS4_S6_mmPP17_cl_command_queuePP9_cl_eventS6_");

extern "C" int gemm_capture_float(int layout, int ta, int tb, size_t m, size_t n, size_t k, float alpha, cl_mem a,
                                  size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, float beta, cl_mem c,
                                  size_t c_off, size_t ldc, cl_command_queue* queue, cl_event* event, cl_mem temp) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!next) {
      // The plugin's CLBlast is loaded in its local scope, out of RTLD_NEXT's reach: take the
      // library itself (already loaded, or load it).
      void* lib = dlopen("libclblast.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (!lib) lib = dlopen("libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
      if (!lib) lib = dlopen("libclblast.so", RTLD_NOW | RTLD_LOCAL);
      next = reinterpret_cast<GemmFn>(lib ? dlsym(lib, kGemmFloat) : dlsym(RTLD_NEXT, kGemmFloat));
      if (!next) {
        std::fprintf(stderr, "gemm_capture: clblast::Gemm<float> not found in libclblast.so.1\n");
        std::abort();
      }
      const char* path = std::getenv("GEMM_CAPTURE_FILE");
      out = std::fopen(path && *path ? path : "gemm_calls.txt", "w");
    }
    if (out) {
      std::fprintf(out, "%c %c %c %zu %zu %zu %zu %zu %zu %zu %zu %zu\n", layout == 102 ? 'C' : 'R', trans(ta),
                   trans(tb), m, n, k, a_off, lda, b_off, ldb, c_off, ldc);
      std::fflush(out);
    }
  }
  return next(layout, ta, tb, m, n, k, alpha, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc, queue, event, temp);
}
