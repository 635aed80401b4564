#include "gemm/gemm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "device/cl_error.h"
#include "gemm/gemm_tuning.h"
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
  const bool oom =
      s == clblast::StatusCode::kTempBufferAllocFailure || s == clblast::StatusCode::kOpenCLOutOfHostMemory;
  throw Error(
      oom ? CLTRAIN_OUT_OF_MEMORY : CLTRAIN_ERROR,
      std::string(call) + ": " + clblast_status_name(s) + " (" + source_location(__FILE__, line) + ", " + what + ")",
      code > -1000 ? code : CL_SUCCESS);
}

}  // namespace

void GemmEngine::init(const DeviceInfo& device, const Queue& queue) {
  device_ = &device;
  queue_ = &queue;
  apply_gemm_tuning(device);
  tile_ = gemm_tile(device);
  std::string error;
  native_ = choose_gemm_engine(device.type, device.local_mem, &error) == GemmKind::kNative;
  limits_ = native_limits(device.local_mem, false, native_tile(device.native_float_width));
  if (!error.empty()) fail(CLTRAIN_ERROR, error);
}

uint64_t GemmEngine::clblast_temp_bytes(const Gemm& g) const {
  size_t bytes = 0;
  cl_command_queue q = queue_->handle();
  check_clblast(clblast::GemmTempBufferSize<float>(g.layout, g.ta, g.tb, g.m, g.n, g.k, g.a_off, g.lda, g.b_off, g.ldb,
                                                   g.c_off, g.ldc, &q, bytes),
                "clblast::GemmTempBufferSize", __LINE__, g.what);
  return bytes;
}

// CLBlast copies C of every row-major GEMM (it computes column-major). A row-major C = A B is
// the column-major C^T = B^T A^T over the same memory, with the same chain over k per element;
// of the two forms, the one that needs less scratch.
Gemm GemmEngine::cheapest_form(const Gemm& g) const {
  if (g.layout != clblast::Layout::kRowMajor) return g;
  Gemm t = g;
  t.layout = clblast::Layout::kColMajor;
  t.m = g.n, t.n = g.m;
  t.ta = g.tb, t.tb = g.ta;
  t.a = g.b, t.a_off = g.b_off, t.lda = g.ldb;
  t.b = g.a, t.b_off = g.a_off, t.ldb = g.lda;
  return clblast_temp_bytes(t) < clblast_temp_bytes(g) ? t : g;
}

uint64_t GemmEngine::temp_bytes(const Gemm& g) const {
  return native_ || g.a_half || g.b_half || g.c_half || g.epilogue() ? 0 : clblast_temp_bytes(cheapest_form(g));
}

// Which operands CLBlast copies shows in its scratch size: forcing an operand into the scratch
// (an offset that is not 0) makes the scratch larger only if that operand was not there already.
// The direct kernel needs no scratch whatever the offsets.
int32_t GemmEngine::launches(const Gemm& g) const {
  if (native_ || g.a_half || g.b_half || g.c_half || g.epilogue()) return 1;
  auto forced = [&](size_t Gemm::*offset) {
    Gemm h = g;
    h.*offset += 1;
    return clblast_temp_bytes(h);  // as given: no change of form
  };
  const uint64_t base = clblast_temp_bytes(g);
  const uint64_t a = forced(&Gemm::a_off), bb = forced(&Gemm::b_off), c = forced(&Gemm::c_off);
  if (base == 0 && a == 0 && bb == 0 && c == 0) return 1;  // the direct kernel
  int32_t launches = 1;
  if (a == base) ++launches;
  if (bb == base) ++launches;
  if (c == base) launches += g.beta != 0.0f ? 2 : 1;
  return launches;
}

// gemm.cl's kernel for g, its arguments bound: the pool and the element offsets of the operands,
// in the form native_form() gives (operands swapped for a column-major call).
PreparedGemm GemmEngine::prepare_native(const Gemm& g, const Pool& pool, Kernels& kernels) const {
  if (g.m == 0 || g.n == 0 || g.k == 0)
    fail(CLTRAIN_INVALID, g.what + ": a matrix product with an empty dimension (m " + std::to_string(g.m) + ", n " +
                              std::to_string(g.n) + ", k " + std::to_string(g.k) + ")");
  const bool conv = !g.conv.empty();
  if (conv && (!native_ || g.layout != clblast::Layout::kRowMajor ||
               (g.conv_a() ? g.ta != clblast::Transpose::kNo || g.a_half : g.tb != clblast::Transpose::kNo)))
    fail(CLTRAIN_ERROR, g.what +
                            ": an implicit convolution panel needs kernels/gemm.cl as the device's GEMM, a row-major "
                            "product and the panel untransposed (and float32 as A)");
  // An implicit panel stays the operand gemm.cl reads it as: the form as given.
  const NativeForm f = native_form(g.layout, g.ta, g.tb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, limits_.tile, !conv);
  const bool a_half = f.swapped ? g.b_half : g.a_half;  // the form's A
  NativeLimits limits = native_call_limits(a_half ? native_limits(device_->local_mem, true, limits_.tile) : limits_, f);
  if (g.k_segment > 0) {
    // Slices of whole segments, and tiles of half the rows: the segment's chains and their sums
    // both stay in registers.
    if (!g.conv_a() || g.k % g.k_segment != 0 || g.k_segment > limits.kc)
      fail(CLTRAIN_ERROR, g.what + ": chains by segments need an implicit A panel and segments of at most " +
                              std::to_string(limits.kc) + " that divide k");
    limits.kc = limits.kc / g.k_segment * g.k_segment;
    limits.tile.mr = std::max<size_t>(2, limits.tile.mr / 2);
  }
  if (limits.kc == 0)
    fail(CLTRAIN_ERROR, g.what +
                            ": the device's local memory is too small for kernels/gemm.cl with a float16 operand; "
                            "train with float32 storage");
  NativeBlocks blocks = native_blocks(f, device_->compute_units, limits);
  if (a_half || conv) blocks.direct = false;  // gemm.cl packs a float16 A and an implicit B, slice by slice
  const uint64_t limit = 0x7fffffffu;         // gemm.cl indexes with int
  if ((f.a_km ? f.k : f.m) * f.lda > limit || (f.b_nk ? f.n : f.k) * f.ldb > limit ||
      (f.c_t ? f.n : f.m) * f.ldc > limit)
    fail(CLTRAIN_ERROR, g.what + ": a matrix product over 2^31 elements");
  PreparedGemm p;
  p.g = g;
  p.launches = 1;
  Defines d;
  d.append(native_defines(f, limits, g.a_half, g.b_half, g.c_half));
  if (conv) d.append(g.conv);
  if (g.k_segment > 0) d.set("K_SEG", 1);
  if (g.epilogue()) {
    if (g.beta != 0.0f) fail(CLTRAIN_ERROR, g.what + ": an epilogue with beta != 0");
    if (g.xact != CLTRAIN_ACT_NONE && (g.bias >= 0 || g.act != CLTRAIN_ACT_NONE || g.xact_y < 0))
      fail(CLTRAIN_ERROR, g.what + ": an activation's derivative from y, with no bias or activation");
    d.set("EPI", 1).set("EPI_ROWS", f.swapped ? 1 : 0).set("HAS_BIAS", g.bias >= 0 ? 1 : 0).set("ACT", g.act);
    if (g.xact != CLTRAIN_ACT_NONE) d.set("XACT", g.xact);
  }
  p.native = kernels.make("gemm.cl", d, "gemm");
  const cl_uint bias_off = g.bias >= 0                  ? pool.elem_offset(g.bias)
                           : g.xact != CLTRAIN_ACT_NONE ? pool.elem_offset(g.xact_y) + static_cast<cl_uint>(g.c_off)
                                                        : cl_uint{0};
  const cl_uint a_off = pool.elem_offset(g.a) + static_cast<cl_uint>(g.a_off);
  const cl_uint b_off = pool.elem_offset(g.b) + static_cast<cl_uint>(g.b_off);
  const cl_uint c_off = pool.elem_offset(g.c) + static_cast<cl_uint>(g.c_off);
  cl_uint failed = 0;
  CLT_CHECK(
      set_native_args(p.native.handle, pool.buffer, a_off, b_off, c_off, f, blocks, g.alpha, g.beta, &failed, bias_off),
      "clSetKernelArg", "kernel gemm argument " + std::to_string(failed) + " (" + g.what + ")");
  p.groups[0] = blocks.groups_n;
  p.groups[1] = blocks.groups_m;
  return p;
}

PreparedGemm GemmEngine::prepare(const Gemm& given, int32_t temp_tensor, Pool& pool, Kernels& kernels) const {
  if (native_) return prepare_native(given, pool, kernels);
  if (given.a_half || given.b_half || given.c_half || given.epilogue()) {
    if (limits_.kc == 0)
      fail(CLTRAIN_ERROR, given.what +
                              ": float16 storage needs kernels/gemm.cl, and the device's local memory is too "
                              "small for it; train with float32 storage");
    return prepare_native(given, pool, kernels);
  }
  const Gemm g = cheapest_form(given);
  PreparedGemm p;
  p.g = g;
  p.launches = launches(g);
  p.a = pool.view(g.a);
  p.b = pool.view(g.b);
  p.c = pool.view(g.c);
  const uint64_t need = temp_bytes(g);
  if (need > 0) {
    if (temp_tensor < 0 || tensor_bytes(pool.tensors[static_cast<size_t>(temp_tensor)]) < need)
      fail(CLTRAIN_ERROR, g.what + ": CLBlast needs " + std::to_string(need) + " bytes of scratch, more than planned");
    p.temp = pool.view(temp_tensor);
  }
  return p;
}

namespace {

// CLTRAIN_OPENCL_GEMM_LOG=FILE: one line per GEMM run, "L TA TB m n k a_off lda b_off ldb c_off
// ldc" (L: R or C; TA, TB: N or T; offsets within the operand's tensor), for gemm_bench --calls.
// A product with an implicit convolution panel (Gemm::conv) is logged as the plain product of its
// shape (the panel dense: lda k or ldb n) with " conv" after it.
void log_gemm(const Gemm& g) {
  static std::FILE* out = [] {
    const char* path = std::getenv("CLTRAIN_OPENCL_GEMM_LOG");
    return path && *path ? std::fopen(path, "w") : nullptr;
  }();
  if (!out) return;
  auto t = [](clblast::Transpose x) { return x == clblast::Transpose::kNo ? 'N' : 'T'; };
  const bool conv = !g.conv.empty(), conv_a = conv && g.conv_a();
  std::fprintf(out, "%c %c %c %zu %zu %zu %zu %zu %zu %zu %zu %zu%s\n",
               g.layout == clblast::Layout::kColMajor ? 'C' : 'R', t(g.ta), t(g.tb), g.m, g.n, g.k, g.a_off,
               conv_a ? g.k : g.lda, g.b_off, conv && !conv_a ? g.n : g.ldb, g.c_off, g.ldc, conv ? " conv" : "");
  std::fflush(out);
}

}  // namespace

void run_gemm(const Queue& q, const PreparedGemm& p) {
  const Gemm& g = p.g;
  log_gemm(g);
  if (p.native) {
    const size_t one[2] = {1, 1};
    CLT_CALL(clEnqueueNDRangeKernel, (q.handle(), p.native.handle, 2, nullptr, p.groups, one, 0, nullptr, nullptr),
             "kernel gemm (" + g.what + ")");
    return;
  }
  // Profiling: CLBlast's event is its last kernel's; the marker's end is where the GEMM began.
  Counters& counters = q.counters();
  cl_command_queue queue = q.handle();
  cl_event marker = nullptr, last = nullptr;
  if (counters.profiling) CLT_CALL(clEnqueueMarkerWithWaitList, (queue, 0, nullptr, &marker), g.what);
  const clblast::StatusCode st =
      clblast::Gemm<float>(g.layout, g.ta, g.tb, g.m, g.n, g.k, g.alpha, p.a, g.a_off, g.lda, p.b, g.b_off, g.ldb,
                           g.beta, p.c, g.c_off, g.ldc, &queue, counters.profiling ? &last : nullptr, p.temp);
  if (st == clblast::StatusCode::kSuccess) counters.stats.launches += static_cast<uint64_t>(p.launches);
  if (marker && last) {
    counters.timed.push_back({counters.current_step, last, marker, p.launches});
  } else {
    if (marker) clReleaseEvent(marker);
    if (last) clReleaseEvent(last);
  }
  check_clblast(st, "clblast::Gemm", __LINE__, g.what);
}

}  // namespace cltrain::ocl
