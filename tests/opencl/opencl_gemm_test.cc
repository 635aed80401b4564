// kernels/gemm.cl, the matrix product of CPU devices, with the forms and blocks
// backend/opencl/gemm/gemm_native.cc chooses, against the dot products of cltrain_backend.h's Numerics
// (acc = fma(a, b, acc) over k in increasing order, then alpha acc + beta C), bit for bit on the
// first OpenCL device (POCL in CI). Every layout and transpose CLBlast takes, both forms (the
// product and the product of the transposes), blocks read in place and packed, partial tiles and
// blocks, k in several packed slices, leading dimensions wider than the matrix, offsets, and
// beta != 0; elements of C outside the product must keep their value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "device/cl_headers.h"
#include "gemm/gemm_native.h"

namespace {

using clblast::Layout;
using clblast::Transpose;
using namespace cltrain::ocl;

std::string read_kernel(const char* name) {
  std::ifstream f(std::string(CLTRAIN_KERNELS_DIR) + "/" + name);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

struct Call {
  Layout layout;
  Transpose ta, tb;
  size_t m, n, k;
  size_t pad = 0;  // added to every leading dimension
  size_t a_off = 0, b_off = 0, c_off = 0;
  float alpha = 1.0f, beta = 0.0f;
};

class NativeGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    // The devices of every platform in order, as `cltrain devices` numbers them;
    // CLTRAIN_OPENCL_DEVICE picks one, else the first.
    cl_platform_id platforms[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, platforms, &np) != CL_SUCCESS || np == 0) return unavailable("no OpenCL platform");
    std::vector<cl_device_id> all;
    for (cl_uint i = 0; i < std::min<cl_uint>(np, 16); ++i) {
      cl_uint nd = 0;
      if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
      std::vector<cl_device_id> ids(nd);
      if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, nd, ids.data(), nullptr) == CL_SUCCESS)
        all.insert(all.end(), ids.begin(), ids.end());
    }
    if (all.empty()) return unavailable("no OpenCL device");
    const char* pick = std::getenv("CLTRAIN_OPENCL_DEVICE");
    const size_t index = pick && *pick ? std::strtoul(pick, nullptr, 10) : 0;
    ASSERT_LT(index, all.size()) << "CLTRAIN_OPENCL_DEVICE=" << pick;
    device_ = all[index];
    cl_int err = CL_SUCCESS;
    ctx_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    queue_ = clCreateCommandQueue(ctx_, device_, 0, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    ASSERT_EQ(clGetDeviceInfo(device_, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units_, &units_, nullptr), CL_SUCCESS);
    cl_ulong local = 0;
    ASSERT_EQ(clGetDeviceInfo(device_, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, nullptr), CL_SUCCESS);
    local_ = local;
    limits_ = native_limits(local);
    if (limits_.kc == 0) GTEST_SKIP() << "the device's local memory (" << local << " bytes) is too small for gemm.cl";
  }
  void TearDown() override {
    for (auto& [defines, k] : kernels_)
      if (k) clReleaseKernel(k);
    if (queue_) clReleaseCommandQueue(queue_);
    if (ctx_) clReleaseContext(ctx_);
  }
  void unavailable(const char* why) {
    if (std::getenv("CLTRAIN_REQUIRE_OPENCL")) FAIL() << why << " (CLTRAIN_REQUIRE_OPENCL is set)";
    GTEST_SKIP() << why;
  }

  cl_kernel kernel(const NativeForm& f, const NativeLimits& limits) {
    const std::string opts = "-cl-std=CL1.2 " + native_defines(f, limits);
    cl_kernel& k = kernels_[opts];
    if (k) return k;
    const std::string text =
        read_kernel("numerics.h") + "\n" + read_kernel("common.cl") + "\n" + read_kernel("gemm.cl");
    const char* src = text.c_str();
    cl_int err = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(ctx_, 1, &src, nullptr, &err);
    EXPECT_EQ(err, CL_SUCCESS);
    if (clBuildProgram(p, 1, &device_, opts.c_str(), nullptr, nullptr) != CL_SUCCESS) {
      std::vector<char> log(1 << 16);
      clGetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, log.size(), log.data(), nullptr);
      ADD_FAILURE() << "gemm.cl does not build with " << opts << ":\n" << log.data();
    }
    k = clCreateKernel(p, "gemm", &err);
    EXPECT_EQ(err, CL_SUCCESS);
    clReleaseProgram(p);
    return k;
  }

  // Runs c on the device and checks every element of C (and what lies around it) bit for bit.
  void check(const Call& c, const std::string& what) { check(c, what, limits_); }
  void check(const Call& c, const std::string& what, const NativeLimits& limits) {
    SCOPED_TRACE(what + ", kc " + std::to_string(limits.kc) + ", tiles " + std::to_string(limits.tile.mr) + "x" +
                 std::to_string(limits.tile.nv) + "xfloat" + std::to_string(limits.tile.vw));
    const bool row = c.layout == Layout::kRowMajor;
    const bool at = c.ta == Transpose::kYes, bt = c.tb == Transpose::kYes;
    // Stored shapes: op(A) [m, k] is A [k, m] when transposed; row-major lines are rows.
    const size_t a_lines = row ? (at ? c.k : c.m) : (at ? c.m : c.k);
    const size_t a_len = row ? (at ? c.m : c.k) : (at ? c.k : c.m);
    const size_t b_lines = row ? (bt ? c.n : c.k) : (bt ? c.k : c.n);
    const size_t b_len = row ? (bt ? c.k : c.n) : (bt ? c.n : c.k);
    const size_t c_lines = row ? c.m : c.n, c_len = row ? c.n : c.m;
    const size_t lda = a_len + c.pad, ldb = b_len + c.pad, ldc = c_len + c.pad;
    auto a_at = [&](size_t i, size_t k) {
      return c.a_off + (row ? (at ? k * lda + i : i * lda + k) : (at ? i * lda + k : k * lda + i));
    };
    auto b_at = [&](size_t k, size_t j) {
      return c.b_off + (row ? (bt ? j * ldb + k : k * ldb + j) : (bt ? k * ldb + j : j * ldb + k));
    };
    auto c_at = [&](size_t i, size_t j) { return c.c_off + (row ? i * ldc + j : j * ldc + i); };
    const size_t na = c.a_off + a_lines * lda, nb = c.b_off + b_lines * ldb, nc = c.c_off + c_lines * ldc + 7;
    (void)a_len, (void)b_len;

    std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 17 + c.k));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> pool(na + nb + nc);
    for (float& v : pool) v = u(rng);
    std::vector<float> expect(pool.begin() + na + nb, pool.end());
    for (size_t i = 0; i < c.m; ++i)
      for (size_t j = 0; j < c.n; ++j) {
        float acc = 0.0f;
        for (size_t k = 0; k < c.k; ++k) acc = std::fma(pool[a_at(i, k)], pool[na + b_at(k, j)], acc);
        float& out = expect[c_at(i, j)];
        const float scaled = c.alpha * acc;
        out = c.beta == 0.0f ? scaled : scaled + c.beta * out;
      }

    cl_int err = CL_SUCCESS;
    cl_mem buf = clCreateBuffer(ctx_, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, pool.size() * 4, pool.data(), &err);
    ASSERT_EQ(err, CL_SUCCESS);
    const NativeForm f = native_form(c.layout, c.ta, c.tb, c.m, c.n, c.k, lda, ldb, ldc, limits.tile);
    const NativeLimits call = native_call_limits(limits, f);  // as gemm/gemm.cc: narrower tiles for narrow products
    const NativeBlocks blocks = native_blocks(f, units_, call);
    cl_kernel k = kernel(f, call);
    ASSERT_NE(k, nullptr);
    const cl_uint a_off = static_cast<cl_uint>(c.a_off), b_off = static_cast<cl_uint>(na + c.b_off),
                  c_off = static_cast<cl_uint>(na + nb + c.c_off);
    cl_uint failed = 0;
    ASSERT_EQ(set_native_args(k, buf, a_off, b_off, c_off, f, blocks, c.alpha, c.beta, &failed), CL_SUCCESS)
        << "argument " << failed;
    const size_t groups[2] = {blocks.groups_n, blocks.groups_m}, one[2] = {1, 1};
    ASSERT_EQ(clEnqueueNDRangeKernel(queue_, k, 2, nullptr, groups, one, 0, nullptr, nullptr), CL_SUCCESS);
    std::vector<float> got(nc);
    ASSERT_EQ(clEnqueueReadBuffer(queue_, buf, CL_TRUE, (na + nb) * 4, nc * 4, got.data(), 0, nullptr, nullptr),
              CL_SUCCESS);
    clReleaseMemObject(buf);
    size_t bad = 0;
    for (size_t i = 0; i < nc; ++i)
      if (std::memcmp(&got[i], &expect[i], 4) != 0 && bad++ < 3)
        ADD_FAILURE() << "C element " << i << ": " << got[i] << ", expected " << expect[i] << " (form m" << f.m << " n"
                      << f.n << " a_km " << f.a_km << " b_nk " << f.b_nk << " c_t " << f.c_t << ", blocks " << blocks.mb
                      << "x" << blocks.nb << (blocks.direct ? " direct" : " packed") << ")";
    EXPECT_EQ(bad, 0u);
  }

  cl_device_id device_ = nullptr;
  cl_context ctx_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_uint units_ = 1;
  NativeLimits limits_;
  cl_ulong local_ = 0;
  std::map<std::string, cl_kernel> kernels_;
};

const char* name(Layout l) { return l == Layout::kRowMajor ? "R" : "C"; }
const char* name(Transpose t) { return t == Transpose::kYes ? "T" : "N"; }

TEST_F(NativeGemm, EveryLayoutAndTransposeAtEdgeShapesMatchesTheFmaChainBitForBit) {
  struct Shape {
    size_t m, n, k;
  };
  // 1x1x1; below one register tile; partial tiles and blocks; k over one packed slice (320);
  // few rows and many k (blocks read in place); one narrow side (the product of the transposes);
  // rows 256 floats apart (an untransposed B packed rather than read in place); 25 columns (a
  // tile half as wide, the last block's panel overlapping).
  const Shape shapes[] = {{1, 1, 1},     {3, 5, 2},    {17, 33, 40},   {70, 150, 9},    {33, 17, 700}, {32, 7, 900},
                          {64, 58, 350}, {5, 200, 64}, {130, 16, 321}, {300, 256, 330}, {32, 25, 500}};
  for (Layout l : {Layout::kRowMajor, Layout::kColMajor})
    for (Transpose ta : {Transpose::kNo, Transpose::kYes})
      for (Transpose tb : {Transpose::kNo, Transpose::kYes})
        for (const Shape& s : shapes) {
          Call c{l, ta, tb, s.m, s.n, s.k};
          c.pad = s.m % 3;
          c.a_off = 1, c.b_off = 5, c.c_off = 3;
          const std::string what = std::string(name(l)) + name(ta) + name(tb) + " m" + std::to_string(s.m) + " n" +
                                   std::to_string(s.n) + " k" + std::to_string(s.k);
          // Both register tiles (float8 for AVX2-class and other devices, float16 for AVX-512),
          // whichever this device gets by default; then the sizes of a device with 32 KiB of local
          // memory: shorter slices, smaller blocks.
          for (const NativeTile& tile : {NativeTile{4, 2, 8}, NativeTile{8, 2, 16}}) {
            check(c, what, native_limits(local_, false, tile));
            check(c, what, native_limits(32 << 10, false, tile));
          }
          if (HasFailure()) return;
        }
}

TEST_F(NativeGemm, BetaAddsToCAndAlphaScalesAsCLBlastDoes) {
  for (Layout l : {Layout::kRowMajor, Layout::kColMajor})
    for (const float beta : {1.0f, 0.5f}) {
      Call c{l, Transpose::kYes, Transpose::kNo, 40, 50, 700};  // sliced k, accumulated into C
      c.beta = beta;
      c.alpha = beta == 1.0f ? 1.0f : -0.75f;
      check(c, std::string(name(l)) + " beta " + std::to_string(beta));
      Call d{l, Transpose::kYes, Transpose::kNo, 8, 40, 600};  // in place
      d.beta = beta;
      check(d, std::string(name(l)) + " in place, beta " + std::to_string(beta));
    }
}

// The host's choices: every block a whole number of register tiles, enough groups for the
// compute units where the product allows, and the form with the fewer padded lanes.
TEST(NativeGemmPlan, BlocksAndFormsFollowTheShape) {
  const NativeForm big =
      native_form(Layout::kRowMajor, Transpose::kNo, Transpose::kYes, 490, 1280, 320, 320, 320, 1280);
  EXPECT_FALSE(big.swapped);
  const NativeLimits pocl = native_limits(512 << 10);  // POCL's CPU device
  EXPECT_EQ(pocl.kc, 320u);
  EXPECT_EQ(pocl.nb_max, 128u);
  EXPECT_EQ(pocl.mb_max, 64u);
  const NativeLimits small = native_limits(32 << 10);
  EXPECT_EQ(small.nb_max, 64u);
  EXPECT_EQ(small.mb_max, 32u);
  EXPECT_EQ(small.kc, 88u);  // (32 KiB - 1 KiB margin - 32 x 64 floats) / 64 floats, a multiple of 8
  EXPECT_GE(small.kc * small.nb_max * 4 + small.mb_max * small.nb_max * 4 + 1024, 0u);
  EXPECT_LE(small.kc * small.nb_max * 4 + small.mb_max * small.nb_max * 4 + 1024, 32u << 10);
  EXPECT_EQ(native_limits(4 << 10).kc, 0u);  // too small: CLBlast instead
  EXPECT_EQ(
      choose_gemm_engine(CL_DEVICE_TYPE_CPU, 4 << 10, nullptr) == GemmKind::kNative,
      std::getenv("CLTRAIN_OPENCL_GEMM") != nullptr && std::string(std::getenv("CLTRAIN_OPENCL_GEMM")) == "native");
  const NativeBlocks bb = native_blocks(big, 2, pocl);
  EXPECT_EQ(bb.mb, 64u);
  EXPECT_EQ(bb.nb, 128u);
  EXPECT_FALSE(bb.direct);  // B [N, K]: packed
  // dW of a 32-channel conv over a 7-column panel: computed as the 7 x 32 transpose.
  const NativeForm narrow = native_form(Layout::kRowMajor, Transpose::kYes, Transpose::kNo, 32, 7, 25088, 32, 7, 7);
  EXPECT_TRUE(narrow.swapped);
  EXPECT_EQ(narrow.m, 7u);
  EXPECT_EQ(narrow.n, 32u);
  EXPECT_TRUE(narrow.c_t);
  const NativeBlocks nb = native_blocks(narrow, 2, pocl);
  EXPECT_EQ(nb.mb % pocl.tile.mr, 0u);
  EXPECT_EQ(nb.nb % pocl.tile.nr(), 0u);
  EXPECT_TRUE(nb.direct);
  // AVX-512 devices (native float width 16): 8 x 32 tiles of float16, halved in width for a
  // product narrower than that; 25 columns stay one block (a second of 9 columns would pack B).
  const NativeTile wide = native_tile(16);
  EXPECT_EQ(wide.mr, 8u);
  EXPECT_EQ(wide.nr(), 32u);
  EXPECT_EQ(native_tile(8).nr(), 16u);
  const NativeLimits avx512 = native_limits(512 << 10, false, wide);
  EXPECT_EQ(avx512.nb_max, 128u);
  EXPECT_EQ(avx512.mb_max, 64u);
  const NativeForm dw =
      native_form(Layout::kRowMajor, Transpose::kYes, Transpose::kNo, 32, 25, 25088, 32, 25, 25, wide);
  EXPECT_EQ(dw.n, 25u);
  const NativeLimits dw_limits = native_call_limits(avx512, dw);
  EXPECT_EQ(dw_limits.tile.nr(), 16u);
  const NativeBlocks dwb = native_blocks(dw, 2, dw_limits);
  EXPECT_EQ(dwb.groups_n, 1u);
  EXPECT_EQ(dwb.mb, 8u);
  EXPECT_TRUE(dwb.direct);
  EXPECT_EQ(native_call_limits(avx512, big).tile.nr(), 32u);
  for (size_t units : {1, 2, 8, 64}) {
    const NativeBlocks b = native_blocks(big, units, pocl);
    EXPECT_GE(b.groups_m * b.groups_n, std::min<size_t>(4 * units, 8 * 80));
    EXPECT_EQ(b.groups_m, (big.m + b.mb - 1) / b.mb);
    EXPECT_EQ(b.groups_n, (big.n + b.nb - 1) / b.nb);
  }
}

// CLTRAIN_OPENCL_GEMM takes native or clblast; anything else, or native on a device whose local
// memory gemm.cl does not fit, is an error that names the value (and CLBlast is what remains).
TEST(NativeGemmPlan, neg_UnknownOrUnfittingEngineChoiceIsAnError) {
  const char* before = std::getenv("CLTRAIN_OPENCL_GEMM");
  const std::string saved = before ? before : "";
  std::string error;
  setenv("CLTRAIN_OPENCL_GEMM", "fast", 1);
  EXPECT_EQ(choose_gemm_engine(CL_DEVICE_TYPE_CPU, 512 << 10, &error), GemmKind::kClblast);
  EXPECT_NE(error.find("CLTRAIN_OPENCL_GEMM is 'fast'"), std::string::npos) << error;
  error.clear();
  setenv("CLTRAIN_OPENCL_GEMM", "native", 1);
  EXPECT_EQ(choose_gemm_engine(CL_DEVICE_TYPE_GPU, 512 << 10, &error), GemmKind::kNative);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(choose_gemm_engine(CL_DEVICE_TYPE_CPU, 4 << 10, &error), GemmKind::kClblast);
  EXPECT_NE(error.find("too few for kernels/gemm.cl"), std::string::npos) << error;
  error.clear();
  unsetenv("CLTRAIN_OPENCL_GEMM");
  EXPECT_EQ(choose_gemm_engine(CL_DEVICE_TYPE_CPU, 512 << 10, &error), GemmKind::kNative);
  EXPECT_EQ(choose_gemm_engine(CL_DEVICE_TYPE_GPU, 512 << 10, &error), GemmKind::kClblast);
  EXPECT_TRUE(error.empty()) << error;
  if (before) setenv("CLTRAIN_OPENCL_GEMM", saved.c_str(), 1);
}

}  // namespace
