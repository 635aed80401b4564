// Helpers the op families share: -D definitions, kernel creation, argument setting, launches,
// element offsets into the pool, and GEMMs through CLBlast.
#pragma once

#include <cstdint>
#include <string>

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

// A kernel that reduces with one work-group of wg work-items (WG_SIZE, a power of two) per row of
// n elements; wg shrinks until the compiled kernel accepts it.
Kernel make_reduction_kernel(Backend& b, const std::string& family, Defines defs, const char* name,
                             uint64_t n, size_t* wg);

void set_arg(const Kernel& k, cl_uint index, size_t size, const void* value);

template <class... A>
void set_args(const Kernel& k, const A&... args) {
  cl_uint i = 0;
  (set_arg(k, i++, sizeof(A), &args), ...);
}

// count work-items, padded to whole work-groups (kernels check their bound).
void launch_1d(Backend& b, const Kernel& k, uint64_t count);
// groups work-groups of wg work-items each.
void launch_groups(Backend& b, const Kernel& k, uint64_t groups, size_t wg);

// The tensor's offset in the pool in floats, as kernels take it.
cl_uint elem_offset(const Backend& b, int32_t tensor);

// C = alpha * op(A) op(B) + beta * C, row-major, on the pool; offsets and leading dimensions in
// elements.
struct Gemm {
  clblast::Transpose ta = clblast::Transpose::kNo, tb = clblast::Transpose::kNo;
  size_t m = 0, n = 0, k = 0;
  size_t a_off = 0, lda = 0, b_off = 0, ldb = 0, c_off = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  std::string what;  // for error messages: "step 5 (FullyConnected backward) dW"
};

// At prepare: grows the shared scratch buffer to what this GEMM needs.
void plan_gemm(Backend& b, const Gemm& g);
void run_gemm(Backend& b, const Gemm& g);

}  // namespace cltrain::ocl
