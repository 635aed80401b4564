#include "launch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cltrain::ocl {
namespace {

size_t floor_pow2(size_t v) {
  size_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

std::string clblast_status_name(clblast::StatusCode s) {
  const int code = static_cast<int>(s);
  if (code > -1000) return cl_error_name(code);  // the codes shared with OpenCL
  switch (s) {
    case clblast::StatusCode::kNotImplemented: return "kNotImplemented";
    case clblast::StatusCode::kInvalidDimension: return "kInvalidDimension";
    case clblast::StatusCode::kInvalidLeadDimA: return "kInvalidLeadDimA";
    case clblast::StatusCode::kInvalidLeadDimB: return "kInvalidLeadDimB";
    case clblast::StatusCode::kInvalidLeadDimC: return "kInvalidLeadDimC";
    case clblast::StatusCode::kInsufficientMemoryA: return "kInsufficientMemoryA";
    case clblast::StatusCode::kInsufficientMemoryB: return "kInsufficientMemoryB";
    case clblast::StatusCode::kInsufficientMemoryC: return "kInsufficientMemoryC";
    case clblast::StatusCode::kInsufficientMemoryTemp: return "kInsufficientMemoryTemp";
    case clblast::StatusCode::kInvalidLocalMemUsage: return "kInvalidLocalMemUsage";
    case clblast::StatusCode::kDatabaseError: return "kDatabaseError";
    case clblast::StatusCode::kUnknownError: return "kUnknownError";
    case clblast::StatusCode::kUnexpectedError: return "kUnexpectedError";
    default: return "CLBlast status " + std::to_string(code);
  }
}

void check_clblast(clblast::StatusCode s, const char* call, int line, const std::string& what) {
  if (s == clblast::StatusCode::kSuccess) return;
  const int code = static_cast<int>(s);
  const bool oom = s == clblast::StatusCode::kTempBufferAllocFailure ||
                   s == clblast::StatusCode::kOpenCLOutOfHostMemory;
  throw Error(oom ? CLTRAIN_OUT_OF_MEMORY : CLTRAIN_ERROR,
              std::string(call) + ": " + clblast_status_name(s) + " (" + source_location(__FILE__, line) +
                  ", " + what + ")",
              code > -1000 ? code : CL_SUCCESS);
}

}  // namespace

Defines& Defines::set(const char* name, long long value) {
  text_ += std::string(text_.empty() ? "" : " ") + "-D" + name + "=" + std::to_string(value);
  return *this;
}

Defines& Defines::set_float(const char* name, float value) {
  if (!std::isfinite(value)) fail(CLTRAIN_INVALID, std::string(name) + " is not a finite number");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", static_cast<double>(value));
  text_ += std::string(text_.empty() ? "" : " ") + "-D" + name + "=" + buf;
  return *this;
}

Kernel make_kernel(Backend& b, const std::string& family, const Defines& defs, const char* name) {
  Kernel k;
  k.name = name;
  k.handle = b.programs->create_kernel(family, defs.str(), name);
  b.kernels.push_back(k.handle);  // owned by the backend from here on
  CLT_CALL(clGetKernelWorkGroupInfo,
           (k.handle, b.device.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof k.max_local, &k.max_local, nullptr),
           "kernel " + k.name);
  k.max_local = std::max<size_t>(k.max_local, 1);
  return k;
}

Kernel make_reduction_kernel(Backend& b, const std::string& family, Defines defs, const char* name,
                             uint64_t n, size_t* wg) {
  // Small rows get a small group; 256 work-items keep a row of 784 floats to 4 loads each.
  size_t size = floor_pow2(std::min<uint64_t>({256, std::max<uint64_t>(n, 1), b.device.max_work_group}));
  for (;;) {
    Defines d = defs;
    d.set("WG_SIZE", static_cast<long long>(size));
    Kernel k = make_kernel(b, family, d, name);
    if (k.max_local >= size || size == 1) {
      *wg = size;
      return k;
    }
    size = floor_pow2(k.max_local);  // the compiled kernel takes fewer work-items: build again
  }
}

void set_arg(const Kernel& k, cl_uint index, size_t size, const void* value) {
  CLT_CALL(clSetKernelArg, (k.handle, index, size, value),
           "kernel " + k.name + " argument " + std::to_string(index));
}

void launch_1d(Backend& b, const Kernel& k, uint64_t count) {
  if (count == 0) return;
  const size_t local = std::min<size_t>({64, k.max_local, b.device.max_work_group});
  const size_t global = (count + local - 1) / local * local;
  CLT_CALL(clEnqueueNDRangeKernel, (b.queue, k.handle, 1, nullptr, &global, &local, 0, nullptr, nullptr),
           "kernel " + k.name);
}

void launch_groups(Backend& b, const Kernel& k, uint64_t groups, size_t wg) {
  if (groups == 0) return;
  const size_t global = groups * wg;
  CLT_CALL(clEnqueueNDRangeKernel, (b.queue, k.handle, 1, nullptr, &global, &wg, 0, nullptr, nullptr),
           "kernel " + k.name);
}

cl_uint elem_offset(const Backend& b, int32_t tensor) {
  if (tensor < 0 || static_cast<size_t>(tensor) >= b.offsets.size() || b.offsets[tensor] < 0)
    fail(CLTRAIN_INVALID, b.tensor_label(tensor) + " is not planned on the OpenCL backend");
  return static_cast<cl_uint>(b.offsets[tensor] / 4);
}

void plan_gemm(Backend& b, const Gemm& g) {
  size_t bytes = 0;
  check_clblast(clblast::GemmTempBufferSize<float>(clblast::Layout::kRowMajor, g.ta, g.tb, g.m, g.n, g.k,
                                                   g.a_off, g.lda, g.b_off, g.ldb, g.c_off, g.ldc, &b.queue,
                                                   bytes),
                "clblast::GemmTempBufferSize", __LINE__, g.what);
  b.gemm_temp_bytes = std::max(b.gemm_temp_bytes, bytes);
}

void run_gemm(Backend& b, const Gemm& g) {
  check_clblast(clblast::Gemm<float>(clblast::Layout::kRowMajor, g.ta, g.tb, g.m, g.n, g.k, g.alpha, b.pool,
                                     g.a_off, g.lda, b.pool, g.b_off, g.ldb, g.beta, b.pool, g.c_off, g.ldc,
                                     &b.queue, nullptr, b.gemm_temp),
                "clblast::Gemm", __LINE__, g.what);
}

}  // namespace cltrain::ocl
