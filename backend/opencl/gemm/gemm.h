// Matrix products of the op families: C = alpha * op(A) op(B) + beta * C over tensors of the
// plan, through kernels/gemm.cl on devices that use it (CPU devices; gemm_native.h) and through
// CLBlast elsewhere (row-major unless layout says otherwise). Offsets and leading dimensions are
// in elements, offsets within their tensor. Each output element is one fma chain over k in
// increasing order (what the Numerics of cltrain_backend.h ask of dot products) as long as beta
// is 0 and alpha 1.
// CLBlast's kernel reads A as [K, M] and B as [K, N] and writes C column-major; other layouts cost
// it copies into its scratch (row-major C always does), so large operands are best laid out so.
// gemm.cl reads every layout in place and needs no scratch.
#pragma once

#include <cstdint>
#include <string>

#include <clblast.h>

#include "device/device.h"
#include "device/queue.h"
#include "gemm/gemm_native.h"
#include "memory/pool.h"
#include "program/kernel.h"

namespace cltrain::ocl {

struct Gemm {
  clblast::Layout layout = clblast::Layout::kRowMajor;
  clblast::Transpose ta = clblast::Transpose::kNo, tb = clblast::Transpose::kNo;
  size_t m = 0, n = 0, k = 0;
  int32_t a = -1, b = -1, c = -1;
  size_t a_off = 0, lda = 0, b_off = 0, ldb = 0, c_off = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  // Operands stored as float16 (OpContext::prepare_gemm sets them from the tensors): gemm.cl
  // runs such a product on every device, CLBlast taking float32 only.
  bool a_half = false, b_half = false, c_half = false;
  // An epilogue (gemm.cl's EPI, beta 0, gemm.cl on every device): C = act(alpha A B + bias), the
  // bias (a tensor, -1: none) along C's columns, act a cltrain_activation (NONE: none). For a
  // float16 C, which must be rounded once.
  int32_t bias = -1;
  int32_t act = CLTRAIN_ACT_NONE;
  // Or (gemm.cl only, without bias and act): C = xact'(y) alpha A B, the derivative of the
  // activation xact of the tensor y (laid out as C) applied to each element, as conv_gather_dx
  // applies a producer's activation to dx.
  int32_t xact = CLTRAIN_ACT_NONE, xact_y = -1;
  bool epilogue() const { return bias >= 0 || act != CLTRAIN_ACT_NONE || xact != CLTRAIN_ACT_NONE; }
  // gemm.cl only (GemmEngine::native()): A (the forward's) or B (dW's) is a convolution's im2col
  // panel read from x (a or b) in place, these being gemm.cl's A_CONV or B_CONV definitions of the
  // geometry ("-DB_CONV=1 -DCV_H=28 ..."; conv_gemm_defines in ops/conv2d.cc); that operand's
  // leading dimension is then unused. Empty: both are matrices.
  std::string conv;
  // With an A_CONV panel: each element's chain restarts every k_segment k (one tap of the
  // panel), the chains added in order (gemm.cl's K_SEG); 0: one chain over k.
  size_t k_segment = 0;
  bool conv_a() const { return conv.find("-DA_CONV=1") != std::string::npos; }
  std::string what;  // for error messages: "step 5 (FullyConnected backward) dW"
};

// A GEMM bound to buffers: CLBlast takes each operand as a sub-buffer covering its whole tensor
// (non-overlapping views of the pool, as OpenCL requires of buffers one kernel reads and writes)
// and its scratch as the sub-buffer of a private tensor of the step; gemm.cl its kernel with every
// argument set, on groups[0] x groups[1] work-groups of one work-item.
struct PreparedGemm {
  Gemm g;
  cl_mem a = nullptr, b = nullptr, c = nullptr, temp = nullptr;
  int32_t launches = 1;  // kernels CLBlast runs for it (GemmEngine::launches)
  Kernel native;
  size_t groups[2] = {0, 0};
};

// Which engine a device's GEMMs use, with what sizes, and how to prepare one.
class GemmEngine {
 public:
  // The device's engine (choose_gemm_engine: CLTRAIN_OPENCL_GEMM, else by device type), with
  // CLBlast's parameters for the device applied. Throws Error for a choice that does not fit.
  void init(const DeviceInfo& device, const Queue& queue);

  bool native() const { return native_; }
  // gemm.cl's vector width (its register tiles' lanes): a B_CONV product needs channels in
  // multiples of it.
  size_t native_vector_width() const { return limits_.tile.vw; }
  size_t native_kc() const { return limits_.kc; }  // gemm.cl's k per packed slice (0: no gemm.cl)
  // CLBlast's Xgemm tile on this device (gemm_tuning.h): GEMM dimensions that are multiples of
  // it spare CLBlast copies.
  uint64_t tile() const { return tile_; }

  // Bytes of the scratch CLBlast needs for g (0: none; always 0 with gemm.cl). Depends only on
  // shapes, transposes, leading dimensions and the offsets within the tensors, so it can size a
  // private tensor before the pool is planned.
  uint64_t temp_bytes(const Gemm& g) const;
  // Kernels CLBlast runs for g (1 with gemm.cl): its direct kernel alone, or its indirect kernel
  // plus one kernel per operand that it pads or transposes into its scratch (C twice when
  // beta != 0: in and out). CLBlast, a shared library, calls OpenCL itself, so the counters
  // cannot see these launches.
  int32_t launches(const Gemm& g) const;
  // temp_tensor: a private tensor of at least temp_bytes(g), or -1 when that is 0.
  PreparedGemm prepare(const Gemm& g, int32_t temp_tensor, Pool& pool, Kernels& kernels) const;

 private:
  uint64_t clblast_temp_bytes(const Gemm& g) const;
  Gemm cheapest_form(const Gemm& g) const;
  PreparedGemm prepare_native(const Gemm& g, const Pool& pool, Kernels& kernels) const;

  const DeviceInfo* device_ = nullptr;
  const Queue* queue_ = nullptr;
  bool native_ = false;
  NativeLimits limits_;
  uint64_t tile_ = 64;
};

// Enqueues a prepared GEMM (counting CLBlast's kernels, timing it with profiling on).
void run_gemm(const Queue& q, const PreparedGemm& g);

}  // namespace cltrain::ocl
