// Helpers the op families share: -D definitions, kernel creation, argument setting, launches,
// element offsets into the pool, and GEMMs through CLBlast.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend_state.h"
#include "cl_error.h"
#include "cl_headers.h"
#include <clblast.h>

namespace cltrain::ocl {

// Compile-time definitions of one op instance: "-DN=32 -DM=10 -DBETA=0x1p+0f".
class Defines {
 public:
  Defines& set(const char* name, long long value);
  Defines& set_float(const char* name, float value);  // exact, as a hex float literal
  Defines& append(const std::string& definitions);    // "-DA=1 -DB=2" as they are
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

// A kernel object of one step; the backend owns and releases it.
struct Kernel {
  cl_kernel handle = nullptr;
  std::string name;
  size_t max_local = 1;  // CL_KERNEL_WORK_GROUP_SIZE
  explicit operator bool() const { return handle != nullptr; }
};

Kernel make_kernel(Backend& b, const std::string& family, const Defines& defs, const char* name);

void set_arg(const Kernel& k, cl_uint index, size_t size, const void* value);

template <class... A>
void set_args(const Kernel& k, const A&... args) {
  cl_uint i = 0;
  (set_arg(k, i++, sizeof(A), &args), ...);
}

// count work-items, padded to whole work-groups (kernels check their bound). Work-groups hold
// 64 work-items on GPUs; on CPU devices, where every group costs a few microseconds of
// scheduling (POCL), up to 1024, fewer when that leaves less than 4 groups per compute unit.
void launch_1d(Backend& b, const Kernel& k, uint64_t count);
// The work-group size launch_1d uses for count work-items of k.
size_t local_size(const Backend& b, const Kernel& k, uint64_t count);
// A 2-D range of (x, y) work-items, x padded to whole work-groups (kernels check their bound).
void launch_2d(Backend& b, const Kernel& k, uint64_t x, uint64_t y);
// groups work-groups of wg work-items each.
void launch_groups(Backend& b, const Kernel& k, uint64_t groups, size_t wg);

// The tensor's offset in the pool in floats, as kernels take it.
cl_uint elem_offset(const Backend& b, int32_t tensor);

// C = alpha * op(A) op(B) + beta * C, through kernels/gemm.cl on devices where b.native_gemm is
// set (CPU devices; gemm_native.h) and through CLBlast elsewhere (row-major unless layout says
// otherwise). The operands are tensors of the plan (host or private); offsets and leading
// dimensions are in elements, offsets within their tensor. Each output element is one fma chain
// over k in increasing order (what the Numerics of cltrain_backend.h ask of dot products) as long
// as beta is 0 and alpha 1.
// CLBlast's kernel reads A as [K, M] and B as [K, N] and writes C column-major; other layouts cost
// it copies into its scratch (row-major C always does), so large operands are best laid out so.
// gemm.cl reads every layout in place and needs no scratch.
struct Gemm {
  clblast::Layout layout = clblast::Layout::kRowMajor;
  clblast::Transpose ta = clblast::Transpose::kNo, tb = clblast::Transpose::kNo;
  size_t m = 0, n = 0, k = 0;
  int32_t a = -1, b = -1, c = -1;
  size_t a_off = 0, lda = 0, b_off = 0, ldb = 0, c_off = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  std::string what;  // for error messages: "step 5 (FullyConnected backward) dW"
};

// Bytes of the scratch CLBlast needs for g (0: none; always 0 with gemm.cl). Depends only on shapes, transposes,
// leading dimensions and the offsets within the tensors, so it can size a private tensor before
// the pool is planned.
uint64_t gemm_temp_bytes(Backend& b, const Gemm& g);

// A GEMM bound to buffers: CLBlast takes each operand as a sub-buffer covering its whole tensor
// (non-overlapping views of the pool, as OpenCL requires of buffers one kernel reads and writes)
// and its scratch as the sub-buffer of a private tensor of the step.
struct PreparedGemm {
  Gemm g;
  cl_mem a = nullptr, b = nullptr, c = nullptr, temp = nullptr;
  int32_t launches = 1;  // kernels CLBlast runs for it (gemm_launches)
  // gemm.cl instead (b.native_gemm): its kernel with every argument set, on groups[0] x groups[1]
  // work-groups of one work-item.
  Kernel native;
  size_t groups[2] = {0, 0};
};

// Kernels CLBlast runs for g (1 with gemm.cl): its direct kernel alone, or its indirect kernel plus one kernel per
// operand that it pads or transposes into its scratch (C twice when beta != 0: in and out).
// CLBlast, a shared library, calls OpenCL itself, so the counters cannot see these launches.
int32_t gemm_launches(Backend& b, const Gemm& g);

// temp_tensor: a private tensor of at least gemm_temp_bytes(g), or -1 when that is 0.
PreparedGemm prepare_gemm(Backend& b, const Gemm& g, int32_t temp_tensor);
void run_gemm(Backend& b, const PreparedGemm& g);

// A sub-buffer of the pool covering the whole tensor; created once, owned by the backend.
cl_mem tensor_view(Backend& b, int32_t tensor);

}  // namespace cltrain::ocl
