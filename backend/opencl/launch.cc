#include "launch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gemm_native.h"
#include "memory_plan.h"

namespace cltrain::ocl {
namespace {

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

Defines& Defines::append(const std::string& definitions) {
  if (!definitions.empty()) text_ += (text_.empty() ? "" : " ") + definitions;
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

void set_arg(const Kernel& k, cl_uint index, size_t size, const void* value) {
  CLT_CALL(clSetKernelArg, (k.handle, index, size, value),
           "kernel " + k.name + " argument " + std::to_string(index));
}

size_t local_size(const Backend& b, const Kernel& k, uint64_t count) {
  size_t want = 64;
  if (b.device.type & CL_DEVICE_TYPE_CPU) {
    const uint64_t per_unit = count / (4 * std::max<uint64_t>(b.device.compute_units, 1));
    want = 1;
    while (want * 2 <= 1024 && want * 2 <= per_unit) want *= 2;
  }
  return std::max<size_t>(1, std::min<size_t>({want, k.max_local, b.device.max_work_group}));
}

void launch_1d(Backend& b, const Kernel& k, uint64_t count) {
  if (count == 0) return;
  const size_t local = local_size(b, k, count);
  const size_t global = (count + local - 1) / local * local;
  CLT_CALL(clEnqueueNDRangeKernel, (b.queue, k.handle, 1, nullptr, &global, &local, 0, nullptr, nullptr),
           "kernel " + k.name);
}

void launch_2d(Backend& b, const Kernel& k, uint64_t x, uint64_t y) {
  if (x == 0 || y == 0) return;
  const size_t lx = local_size(b, k, x * y);
  const size_t global[2] = {(x + lx - 1) / lx * lx, y};
  const size_t local[2] = {lx, 1};
  CLT_CALL(clEnqueueNDRangeKernel, (b.queue, k.handle, 2, nullptr, global, local, 0, nullptr, nullptr),
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

namespace {

size_t clblast_temp_bytes(Backend& b, const Gemm& g) {
  size_t bytes = 0;
  check_clblast(clblast::GemmTempBufferSize<float>(g.layout, g.ta, g.tb, g.m, g.n, g.k,
                                                   g.a_off, g.lda, g.b_off, g.ldb, g.c_off, g.ldc, &b.queue,
                                                   bytes),
                "clblast::GemmTempBufferSize", __LINE__, g.what);
  return bytes;
}

// CLBlast copies C of every row-major GEMM (it computes column-major). A row-major C = A B is
// the column-major C^T = B^T A^T over the same memory, with the same chain over k per element;
// of the two forms, the one that needs less scratch.
Gemm cheapest_form(Backend& b, const Gemm& g) {
  if (g.layout != clblast::Layout::kRowMajor) return g;
  Gemm t = g;
  t.layout = clblast::Layout::kColMajor;
  t.m = g.n, t.n = g.m;
  t.ta = g.tb, t.tb = g.ta;
  t.a = g.b, t.a_off = g.b_off, t.lda = g.ldb;
  t.b = g.a, t.b_off = g.a_off, t.ldb = g.lda;
  return clblast_temp_bytes(b, t) < clblast_temp_bytes(b, g) ? t : g;
}

}  // namespace

uint64_t gemm_temp_bytes(Backend& b, const Gemm& g) {
  return b.native_gemm ? 0 : clblast_temp_bytes(b, cheapest_form(b, g));
}

cl_mem tensor_view(Backend& b, int32_t tensor) {
  if (auto it = b.sub_buffers.find(tensor); it != b.sub_buffers.end()) return it->second;
  if (tensor < 0 || static_cast<size_t>(tensor) >= b.offsets.size() || b.offsets[tensor] < 0)
    fail(CLTRAIN_INVALID, b.tensor_label(tensor) + " is not planned on the OpenCL backend");
  cl_buffer_region region;
  region.origin = static_cast<size_t>(b.offsets[tensor]);  // a multiple of the base address alignment
  region.size = static_cast<size_t>(std::max<uint64_t>(tensor_bytes(b.tensors[tensor]), 4));
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateSubBuffer(b.pool, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  CLT_CHECK(err, "clCreateSubBuffer", "view of " + b.tensor_label(tensor));
  b.sub_buffers.emplace(tensor, mem);
  return mem;
}

// Which operands CLBlast copies shows in its scratch size: forcing an operand into the scratch
// (an offset that is not 0) makes the scratch larger only if that operand was not there already.
// The direct kernel needs no scratch whatever the offsets.
int32_t gemm_launches(Backend& b, const Gemm& g) {
  if (b.native_gemm) return 1;
  auto forced = [&](size_t Gemm::*offset) {
    Gemm h = g;
    h.*offset += 1;
    return clblast_temp_bytes(b, h);  // as given: no change of form
  };
  const uint64_t base = clblast_temp_bytes(b, g);
  const uint64_t a = forced(&Gemm::a_off), bb = forced(&Gemm::b_off), c = forced(&Gemm::c_off);
  if (base == 0 && a == 0 && bb == 0 && c == 0) return 1;  // the direct kernel
  int32_t launches = 1;
  if (a == base) ++launches;
  if (bb == base) ++launches;
  if (c == base) launches += g.beta != 0.0f ? 2 : 1;
  return launches;
}

namespace {

// gemm.cl's kernel for g, its arguments bound: the pool and the element offsets of the operands,
// in the form native_form() gives (operands swapped for a column-major call).
PreparedGemm prepare_native(Backend& b, const Gemm& g) {
  if (g.m == 0 || g.n == 0 || g.k == 0)
    fail(CLTRAIN_INVALID, g.what + ": a matrix product with an empty dimension (m " + std::to_string(g.m) + ", n " +
                              std::to_string(g.n) + ", k " + std::to_string(g.k) + ")");
  const NativeForm f = native_form(g.layout, g.ta, g.tb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc);
  const NativeBlocks blocks = native_blocks(f, b.device.compute_units, b.gemm_limits);
  const uint64_t limit = 0x7fffffffu;  // gemm.cl indexes with int
  if ((f.a_km ? f.k : f.m) * f.lda > limit || (f.b_nk ? f.n : f.k) * f.ldb > limit || (f.c_t ? f.n : f.m) * f.ldc > limit)
    fail(CLTRAIN_ERROR, g.what + ": a matrix product over 2^31 elements");
  PreparedGemm p;
  p.g = g;
  p.launches = 1;
  p.native = make_kernel(b, "gemm.cl", Defines().append(native_defines(f, b.gemm_limits)), "gemm");
  const cl_uint a_off = elem_offset(b, g.a) + static_cast<cl_uint>(g.a_off);
  const cl_uint b_off = elem_offset(b, g.b) + static_cast<cl_uint>(g.b_off);
  const cl_uint c_off = elem_offset(b, g.c) + static_cast<cl_uint>(g.c_off);
  cl_uint failed = 0;
  CLT_CHECK(set_native_args(p.native.handle, b.pool, a_off, b_off, c_off, f, blocks, g.alpha, g.beta, &failed),
            "clSetKernelArg", "kernel gemm argument " + std::to_string(failed) + " (" + g.what + ")");
  p.groups[0] = blocks.groups_n;
  p.groups[1] = blocks.groups_m;
  return p;
}

}  // namespace

PreparedGemm prepare_gemm(Backend& b, const Gemm& given, int32_t temp_tensor) {
  if (b.native_gemm) return prepare_native(b, given);
  const Gemm g = cheapest_form(b, given);
  PreparedGemm p;
  p.g = g;
  p.launches = gemm_launches(b, g);
  p.a = tensor_view(b, g.a);
  p.b = tensor_view(b, g.b);
  p.c = tensor_view(b, g.c);
  const uint64_t need = gemm_temp_bytes(b, g);
  if (need > 0) {
    if (temp_tensor < 0 || tensor_bytes(b.tensors[temp_tensor]) < need)
      fail(CLTRAIN_ERROR, g.what + ": CLBlast needs " + std::to_string(need) + " bytes of scratch, more than planned");
    p.temp = tensor_view(b, temp_tensor);
  }
  return p;
}

namespace {

// CLTRAIN_OPENCL_GEMM_LOG=FILE: one line per GEMM run, "L TA TB m n k a_off lda b_off ldb c_off
// ldc" (L: R or C; TA, TB: N or T; offsets within the operand's tensor), for gemm_bench --calls.
void log_gemm(const Gemm& g) {
  static std::FILE* out = [] {
    const char* path = std::getenv("CLTRAIN_OPENCL_GEMM_LOG");
    return path && *path ? std::fopen(path, "w") : nullptr;
  }();
  if (!out) return;
  auto t = [](clblast::Transpose x) { return x == clblast::Transpose::kNo ? 'N' : 'T'; };
  std::fprintf(out, "%c %c %c %zu %zu %zu %zu %zu %zu %zu %zu %zu\n",
               g.layout == clblast::Layout::kColMajor ? 'C' : 'R', t(g.ta), t(g.tb), g.m, g.n, g.k, g.a_off, g.lda,
               g.b_off, g.ldb, g.c_off, g.ldc);
  std::fflush(out);
}

}  // namespace

void run_gemm(Backend& b, const PreparedGemm& p) {
  const Gemm& g = p.g;
  log_gemm(g);
  if (p.native) {
    const size_t one[2] = {1, 1};
    CLT_CALL(clEnqueueNDRangeKernel, (b.queue, p.native.handle, 2, nullptr, p.groups, one, 0, nullptr, nullptr),
             "kernel gemm (" + g.what + ")");
    return;
  }
  // Profiling: CLBlast's event is its last kernel's; the marker's end is where the GEMM began.
  cl_event marker = nullptr, last = nullptr;
  if (b.profiling)
    CLT_CALL(clEnqueueMarkerWithWaitList, (b.queue, 0, nullptr, &marker), g.what);
  const clblast::StatusCode st =
      clblast::Gemm<float>(g.layout, g.ta, g.tb, g.m, g.n, g.k, g.alpha, p.a, g.a_off, g.lda, p.b, g.b_off, g.ldb,
                           g.beta, p.c, g.c_off, g.ldc, &b.queue, b.profiling ? &last : nullptr, p.temp);
  if (st == clblast::StatusCode::kSuccess) b.counters.launches += static_cast<uint64_t>(p.launches);
  if (marker && last) {
    b.timed.push_back({b.current_step, last, marker, p.launches});
  } else {
    if (marker) clReleaseEvent(marker);
    if (last) clReleaseEvent(last);
  }
  check_clblast(st, "clblast::Gemm", __LINE__, g.what);
}

}  // namespace cltrain::ocl
