// gemm_bench: the matrix products of a training step, through cltrain's GEMM path on the OpenCL
// device (the engine the backend picks, backend/opencl/gemm_native.h: kernels/gemm.cl on CPU
// devices, CLBlast Xgemm with the parameters gemm_tuning.cc applies elsewhere;
// CLTRAIN_OPENCL_GEMM=native|clblast chooses) and through OpenBLAS's cblas_sgemm on the host's CPU
// cores; GFLOP/s of both and their ratio per product.
//
//   build/gemm_bench                                  # mnist-kaggle at 32, mobilenetv2 at 10
//   build/gemm_bench --model mnist-kaggle:32 --top 0  # every GEMM group of the model
//   build/gemm_bench --threads 2 --repeat 5 --json gemm.json
//
// With --model, the products are the ones the OpenCL backend enqueued at commit 71a842a
// (backend/opencl/ops/conv2d.cc and fully_connected.cc then), call for call: the same layout,
// transposes, m n k, leading dimensions and offsets, the same chunking of the im2col panels by the
// scratch budget (8 MiB, or an eighth of the device's largest allocation;
// CLTRAIN_OPENCL_SCRATCH_BYTES) and the GEMM tile. The backend has changed its planning since;
// --calls FILE times the calls a real step makes, recorded by the backend itself
// (CLTRAIN_OPENCL_GEMM_LOG=FILE, gemm/gemm.cc), whatever its code is. A "group" is
// all the GEMM calls of one (layer, pass): forward y, dW, dx. Only the GEMMs are timed, not the
// im2col panel fills and the dx gather around them. OpenBLAS runs the very same calls on host
// memory. Not a test: it is built only where CMake finds OpenBLAS (Debian: libopenblas-dev) and
// ctest does not run it.
//
// Device: --device N, else CLTRAIN_OPENCL_DEVICE, else the first GPU, else the first device
// (backend/opencl/device/device.cc, as the backend chooses). CLTRAIN_CLBLAST_XGEMM and
// CLTRAIN_CLBLAST_MIN_INDIRECT override the parameters as they do in the backend.
#include <cblas.h>
#include <clblast.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "device/cl_error.h"
#include "device/device.h"
#include "gemm/gemm_native.h"
#include "gemm/gemm_tuning.h"
#include "gemm_calls.h"

extern "C" void openblas_set_num_threads(int num_threads);
extern "C" int openblas_get_num_threads(void);

namespace {

using namespace gemm_bench;

// ---- Timing ----

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of the process (all its threads): on a CPU device (POCL) a steadier figure than the wall
// time when other programs share the cores.
double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void check_status(clblast::StatusCode st, const char* what) {
  if (st != clblast::StatusCode::kSuccess) {
    std::fprintf(stderr, "gemm_bench: %s: CLBlast status %d\n", what, static_cast<int>(st));
    std::exit(1);
  }
}

cl_mem make_buffer(cl_context ctx, cl_command_queue q, const std::vector<float>& host) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, std::max<size_t>(host.size(), 1) * 4, nullptr, &err);
  CLT_CHECK(err, "clCreateBuffer", "gemm_bench");
  if (!host.empty())
    CLT_CALL(clEnqueueWriteBuffer, (q, m, CL_TRUE, 0, host.size() * 4, host.data(), 0, nullptr, nullptr), "gemm_bench");
  return m;
}

CBLAS_ORDER order(const Call& c) { return row_major(c) ? CblasRowMajor : CblasColMajor; }
CBLAS_TRANSPOSE trans(Transpose t) { return t == Transpose::kYes ? CblasTrans : CblasNoTrans; }

// kernels/gemm.cl as the backend builds it (numerics.h and common.cl first), one kernel per
// orientation and tile, on the device of ctx; CLTRAIN_KERNELS_DIR is the source tree's kernels/.
struct NativeGemm {
  cl_context ctx = nullptr;
  cl_device_id device = nullptr;
  size_t compute_units = 1;
  cltrain::ocl::NativeLimits limits;
  std::map<std::string, cl_kernel> kernels;  // by build options

  static std::string read(const std::string& name) {
    std::ifstream f(std::string(CLTRAIN_KERNELS_DIR) + "/" + name);
    if (!f) {
      std::fprintf(stderr, "gemm_bench: cannot read %s/%s\n", CLTRAIN_KERNELS_DIR, name.c_str());
      std::exit(1);
    }
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  cl_kernel kernel(const cltrain::ocl::NativeForm& f, const cltrain::ocl::NativeLimits& call_limits) {
    const std::string opts = "-cl-std=CL1.2 " + cltrain::ocl::native_defines(f, call_limits);
    cl_kernel& k = kernels[opts];
    if (k) return k;
    const std::string text = read("numerics.h") + "\n" + read("common.cl") + "\n" + read("gemm.cl");
    const char* src = text.c_str();
    cl_int err = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, nullptr, &err);
    CLT_CHECK(err, "clCreateProgramWithSource", "gemm.cl");
    if (clBuildProgram(p, 1, &device, opts.c_str(), nullptr, nullptr) != CL_SUCCESS) {
      std::vector<char> log(1 << 16);
      clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, log.size(), log.data(), nullptr);
      std::fprintf(stderr, "gemm_bench: gemm.cl does not build:\n%s\n", log.data());
      std::exit(1);
    }
    k = clCreateKernel(p, "gemm", &err);
    CLT_CHECK(err, "clCreateKernel", "gemm");
    clReleaseProgram(p);
    return k;
  }
  // c's call on one pool buffer holding A at a0, B at b0 and C at c0 (elements).
  void run(cl_command_queue q, cl_mem pool, const Call& c, size_t a0, size_t b0, size_t c0) {
    const auto f = cltrain::ocl::native_form(c.layout, c.ta, c.tb, c.m, c.n, c.k, c.lda, c.ldb, c.ldc, limits.tile);
    const auto call_limits = cltrain::ocl::native_call_limits(limits, f);
    const auto blocks = cltrain::ocl::native_blocks(f, compute_units, call_limits);
    cl_kernel k = kernel(f, call_limits);
    const cl_uint a_off = cl_uint(a0 + c.a_off), b_off = cl_uint(b0 + c.b_off), c_off = cl_uint(c0 + c.c_off);
    CLT_CHECK(cltrain::ocl::set_native_args(k, pool, a_off, b_off, c_off, f, blocks, 1.0f, 0.0f, nullptr),
              "clSetKernelArg", "gemm");
    const size_t groups[2] = {blocks.groups_n, blocks.groups_m}, one[2] = {1, 1};
    CLT_CALL(clEnqueueNDRangeKernel, (q, k, 2, nullptr, groups, one, 0, nullptr, nullptr), "gemm");
  }
};

NativeGemm* native = nullptr;  // set when the device's engine is gemm.cl (gemm_native.h)

void run_group(cl_context ctx, cl_command_queue q, Group& g, int repeat, bool blas, std::mt19937& rng) {
  size_t na = 1, nb = 1, nc = 1;
  for (const Call& c : g.calls)
    na = std::max(na, a_size(c)), nb = std::max(nb, b_size(c)), nc = std::max(nc, c_size(c));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> ha(na), hb(nb), hc(nc, 0.0f), back(nc);
  for (float& v : ha) v = u(rng);
  for (float& v : hb) v = u(rng);
  cl_mem a = make_buffer(ctx, q, ha), b = make_buffer(ctx, q, hb), c = make_buffer(ctx, q, hc);
  size_t temp_bytes = 0;
  for (const Call& k : g.calls) {
    size_t t = 0;
    check_status(clblast::GemmTempBufferSize<float>(k.layout, k.ta, k.tb, k.m, k.n, k.k, k.a_off, k.lda, k.b_off, k.ldb,
                                                    k.c_off, k.ldc, &q, t),
                 "GemmTempBufferSize");
    temp_bytes = std::max(temp_bytes, t);
  }
  cl_mem temp = nullptr;
  if (temp_bytes > 0 && !native) temp = make_buffer(ctx, q, std::vector<float>((temp_bytes + 3) / 4));
  cl_mem pool = nullptr;  // gemm.cl: A, B and C in one buffer, as in the backend's pool
  if (native) {
    std::vector<float> all(ha);
    all.insert(all.end(), hb.begin(), hb.end());
    all.insert(all.end(), hc.begin(), hc.end());
    pool = make_buffer(ctx, q, all);
  }

  auto cl_pass = [&] {
    if (native) {
      for (const Call& k : g.calls) native->run(q, pool, k, 0, na, na + nb);
      CLT_CALL(clFinish, (q), "gemm_bench");
      return;
    }
    for (const Call& k : g.calls)
      check_status(clblast::Gemm<float>(k.layout, k.ta, k.tb, k.m, k.n, k.k, 1.0f, a, k.a_off, k.lda, b, k.b_off, k.ldb,
                                        0.0f, c, k.c_off, k.ldc, &q, nullptr, temp),
                   "Gemm");
    CLT_CALL(clFinish, (q), "gemm_bench");
  };
  auto blas_pass = [&] {
    for (const Call& k : g.calls)
      cblas_sgemm(order(k), trans(k.ta), trans(k.tb), int(k.m), int(k.n), int(k.k), 1.0f, ha.data() + k.a_off,
                  int(k.lda), hb.data() + k.b_off, int(k.ldb), 0.0f, hc.data() + k.c_off, int(k.ldc));
  };
  cl_pass();  // compiles CLBlast's kernels on first use
  if (blas) {
    blas_pass();
    CLT_CALL(clEnqueueReadBuffer,
             (q, native ? pool : c, CL_TRUE, native ? (na + nb) * 4 : 0, nc * 4, back.data(), 0, nullptr, nullptr),
             "gemm_bench");
    double scale = 0, diff = 0;
    for (size_t i = 0; i < nc; ++i) {
      scale = std::max(scale, double(std::fabs(hc[i])));
      diff = std::max(diff, double(std::fabs(hc[i] - back[i])));
    }
    g.max_rel_diff = scale > 0 ? diff / scale : diff;
  }
  std::vector<double> tc, tb, cc, cb;
  for (int r = 0; r < repeat; ++r) {  // alternate, so that both see the same machine state
    double t0 = now_ms(), c0 = cpu_ms();
    cl_pass();
    tc.push_back(now_ms() - t0);
    cc.push_back(cpu_ms() - c0);
    if (!blas) continue;
    t0 = now_ms(), c0 = cpu_ms();
    blas_pass();
    tb.push_back(now_ms() - t0);
    cb.push_back(cpu_ms() - c0);
  }
  g.cl_ms = median(tc);
  g.cl_cpu_ms = median(cc);
  g.blas_ms = blas ? median(tb) : 0.0;
  g.blas_cpu_ms = blas ? median(cb) : 0.0;
  for (cl_mem mem : {a, b, c, temp, pool})
    if (mem) clReleaseMemObject(mem);
}

std::string shape_text(const Group& g) {
  // The largest call, and how many there are.
  const Call* big = &g.calls[0];
  for (const Call& c : g.calls)
    if (c.flops() > big->flops()) big = &c;
  char buf[160];
  const char* t = big->ta == Transpose::kYes ? "T" : "N";
  const char* u = big->tb == Transpose::kYes ? "T" : "N";
  std::snprintf(buf, sizeof buf, "%s%s%s m%zu n%zu k%zu%s", row_major(*big) ? "R" : "C", t, u, big->m, big->n, big->k,
                g.calls.size() > 1 ? (" x" + std::to_string(g.calls.size())).c_str() : "");
  return buf;
}

int usage() {
  std::fprintf(stderr,
               "usage: gemm_bench [--model NAME:BATCH]... [--device N] [--threads T] [--repeat R] [--top K]\n"
               "                  [--json FILE]\n"
               "  --model     a make-model name and batch (default mnist-kaggle:32 and mobilenetv2:10)\n"
               "  --threads   OpenBLAS threads (default 2)\n"
               "  --repeat    timed runs per group, the median counts (default 5)\n"
               "  --top       only the K groups of each model with the most FLOPs (default 6; 0 = all)\n"
               "  --call L,TA,TB,m,n,k[,lda,ldb,ldc]  this product (L: R or C; TA, TB: N or T); with --call\n"
               "              the models run only where --model names them\n"
               "  --calls FILE  the calls CLTRAIN_OPENCL_GEMM_LOG=FILE recorded (a real step's GEMMs)\n"
               "  --square N  also an N x N x N row-major product (what the machine reaches at large sizes)\n"
               "  --no-blas   time cltrain's path only (for trying CLBlast parameters: CLTRAIN_CLBLAST_XGEMM)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, int>> models;
  int device = -1, threads = 2, repeat = 5, top = 6, square = 0;
  std::vector<Call> custom;
  std::vector<std::vector<Group>> captured;  // --calls FILE: groups of recorded calls
  bool blas = true;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage());
      return argv[++i];
    };
    if (a == "--model") {
      const std::string v = next();
      const size_t colon = v.find(':');
      if (colon == std::string::npos) return usage();
      models.emplace_back(v.substr(0, colon), std::atoi(v.c_str() + colon + 1));
    } else if (a == "--device") {
      device = std::atoi(next().c_str());
    } else if (a == "--threads") {
      threads = std::atoi(next().c_str());
    } else if (a == "--repeat") {
      repeat = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--top") {
      top = std::atoi(next().c_str());
    } else if (a == "--call") {
      // LAYOUT,TA,TB,m,n,k[,lda,ldb,ldc]: R|C, N|T, N|T; leading dimensions default to packed.
      const std::string v = next();
      char lay = 0, ta = 0, tb = 0;
      size_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
      if (std::sscanf(v.c_str(), "%c,%c,%c,%zu,%zu,%zu,%zu,%zu,%zu", &lay, &ta, &tb, &m, &n, &k, &lda, &ldb, &ldc) < 6)
        return usage();
      Call c;
      c.layout = lay == 'C' ? Layout::kColMajor : Layout::kRowMajor;
      c.ta = ta == 'T' ? Transpose::kYes : Transpose::kNo;
      c.tb = tb == 'T' ? Transpose::kYes : Transpose::kNo;
      c.m = m, c.n = n, c.k = k;
      const bool rm = lay != 'C';
      c.lda = lda ? lda : (rm == (c.ta == Transpose::kNo) ? k : m);
      c.ldb = ldb ? ldb : (rm == (c.tb == Transpose::kNo) ? n : k);
      c.ldc = ldc ? ldc : (rm ? n : m);
      custom.push_back(c);
    } else if (a == "--calls") {
      // Lines of CLTRAIN_OPENCL_GEMM_LOG: "L TA TB m n k a_off lda b_off ldb c_off ldc". Consecutive
      // calls with the same layout, transposes and k are one group (the chunks of one pass).
      const std::string path = next();
      std::ifstream f(path);
      if (!f) {
        std::fprintf(stderr, "gemm_bench: cannot read %s\n", path.c_str());
        return 2;
      }
      std::vector<Group> groups;
      std::string line;
      int index = 0;
      while (std::getline(f, line)) {
        char lay = 0, ta = 0, tb = 0;
        Call c;
        if (std::sscanf(line.c_str(), " %c %c %c %zu %zu %zu %zu %zu %zu %zu %zu %zu", &lay, &ta, &tb, &c.m, &c.n, &c.k,
                        &c.a_off, &c.lda, &c.b_off, &c.ldb, &c.c_off, &c.ldc) != 12)
          continue;
        ++index;
        c.layout = lay == 'C' ? Layout::kColMajor : Layout::kRowMajor;
        c.ta = ta == 'N' ? Transpose::kNo : Transpose::kYes;
        c.tb = tb == 'N' ? Transpose::kNo : Transpose::kYes;
        const bool same = !groups.empty() && groups.back().calls.back().layout == c.layout &&
                          groups.back().calls.back().ta == c.ta && groups.back().calls.back().tb == c.tb &&
                          groups.back().calls.back().k == c.k;
        if (!same) groups.push_back(Group{path, "call " + std::to_string(index), "", {}});
        groups.back().calls.push_back(c);
      }
      captured.push_back(groups);
    } else if (a == "--square") {
      square = std::atoi(next().c_str());
    } else if (a == "--no-blas") {
      blas = false;
    } else if (a == "--json") {
      json_path = next();
    } else {
      return usage();
    }
  }
  if (models.empty() && custom.empty() && captured.empty()) models = {{"mnist-kaggle", 32}, {"mobilenetv2", 10}};
  if (square > 0) models.emplace_back("square", square);
  for (size_t i = 0; i < custom.size(); ++i) models.emplace_back("call", static_cast<int>(i));
  for (size_t i = 0; i < captured.size(); ++i) models.emplace_back("captured", static_cast<int>(i));

  try {
    using namespace cltrain::ocl;
    const Discovery d = discover_devices();
    if (d.devices.empty()) {
      std::fprintf(stderr, "gemm_bench: no OpenCL device: %s\n", d.none_reason.c_str());
      return 1;
    }
    const DeviceInfo dev = d.devices[select_device(d.devices, device)];
    cl_int err = CL_SUCCESS;
    cl_context ctx = clCreateContext(nullptr, 1, &dev.id, nullptr, nullptr, &err);
    CLT_CHECK(err, "clCreateContext", device_line(dev));
    cl_command_queue q = clCreateCommandQueue(ctx, dev.id, 0, &err);
    CLT_CHECK(err, "clCreateCommandQueue", device_line(dev));
    const std::string applied = apply_gemm_tuning(dev);  // what the backend's create() does
    std::string engine_error;
    NativeGemm native_gemm;
    if (choose_gemm_engine(dev.type, dev.local_mem, &engine_error) == GemmKind::kNative) {
      native_gemm.limits = native_limits(dev.local_mem, false, native_tile(dev.native_float_width));
      native_gemm.ctx = ctx;
      native_gemm.device = dev.id;
      native_gemm.compute_units = dev.compute_units;
      native = &native_gemm;
    }
    if (!engine_error.empty()) {
      std::fprintf(stderr, "gemm_bench: %s\n", engine_error.c_str());
      return 1;
    }
    const uint64_t tile = gemm_tile(dev);
    uint64_t budget = std::min<uint64_t>(8u << 20, std::max<uint64_t>(dev.max_alloc / 8, 1u << 20));
    if (const char* env = std::getenv("CLTRAIN_OPENCL_SCRATCH_BYTES"); env && *env)
      budget = std::strtoull(env, nullptr, 10);
    openblas_set_num_threads(threads);

    std::printf("device: %s\n", device_line(dev).c_str());
    if (!std::getenv("OPENBLAS_THREAD_TIMEOUT"))
      std::printf(
          "note: OpenBLAS's threads spin after each call and can take a core from POCL's for the next "
          "cltrain product; run with OPENBLAS_THREAD_TIMEOUT=4 (docs/benchmarks.md)\n");
    if (native)
      std::printf("cltrain GEMM path: kernels/gemm.cl (gemm_native.h), register tiles %zu x %zu x float%zu\n",
                  native->limits.tile.mr, native->limits.tile.nv, native->limits.tile.vw);
    else
      std::printf("cltrain GEMM path: CLBlast\n");
    std::printf("CLBlast parameters: %s\n", applied.empty() ? "CLBlast's own (database or defaults)" : applied.c_str());
    std::printf("GEMM tile %llu, scratch budget %llu bytes; OpenBLAS %d threads; median of %d runs\n",
                static_cast<unsigned long long>(tile), static_cast<unsigned long long>(budget),
                openblas_get_num_threads(), repeat);
    std::printf(
        "shape: layout (R row-/C column-major) and transposes of A, B; the largest call, x calls in the group\n");

    std::mt19937 rng(7);
    std::string json = "{\n  \"device\": \"" + device_line(dev) + "\",\n  \"clblast\": \"" + applied +
                       "\",\n  \"openblas_threads\": " + std::to_string(threads) + ",\n  \"groups\": [";
    bool first_json = true;
    int below = 0;
    for (const auto& [name, batch] : models) {
      std::vector<Group> groups;
      if (name == "square") {
        Call c;
        c.m = c.n = c.k = c.lda = c.ldb = c.ldc = static_cast<size_t>(batch);
        groups.push_back(Group{name, std::to_string(batch) + "^3", "C=AB", {c}});
      } else if (name == "captured") {
        groups = captured[batch];
      } else if (name == "call") {
        groups.push_back(Group{name, "--call " + std::to_string(batch + 1), "", {custom[batch]}});
      } else {
        groups = model_groups(name, batch, tile, budget);
      }
      double all_flops = 0;
      size_t all_calls = 0;
      for (const Group& g : groups) all_flops += g.flops(), all_calls += g.calls.size();
      std::stable_sort(groups.begin(), groups.end(),
                       [](const Group& x, const Group& y) { return x.flops() > y.flops(); });
      if (top > 0 && groups.size() > static_cast<size_t>(top)) groups.resize(top);
      if (name == "call")
        std::printf("\n");
      else if (name == "captured")
        std::printf("\n%s: %.2f GFLOP in %zu recorded calls\n", groups.empty() ? "?" : groups[0].model.c_str(),
                    all_flops * 1e-9, all_calls);
      else if (name == "square")
        std::printf("\nreference: one %d x %d x %d product, row-major, no transposes\n", batch, batch, batch);
      else
        std::printf("\n%s, batch %d: %.2f GFLOP of GEMMs per training step in %zu calls\n", name.c_str(), batch,
                    all_flops * 1e-9, all_calls);
      std::printf("%-28s %-7s %-30s %7s %9s %8s %9s %8s %6s %8s\n", "layer", "pass", "shape", "MFLOP", "cltrain ms",
                  "GFLOP/s", "OpenBLAS ms", "GFLOP/s", "ratio", "max diff");
      double sum_cl = 0, sum_blas = 0, sum_flops = 0, sum_cl_cpu = 0;
      for (Group& g : groups) {
        run_group(ctx, q, g, repeat, blas, rng);
        const double f = g.flops(), gc = f / (g.cl_ms * 1e6), gb = f / (g.blas_ms * 1e6);
        sum_cl += g.cl_ms, sum_blas += g.blas_ms, sum_flops += f, sum_cl_cpu += g.cl_cpu_ms;
        if (blas && gc < 0.4 * gb) ++below;
        if (blas)
          std::printf("%-28s %-7s %-30s %7.1f %10.2f %8.1f %11.2f %8.1f %5.0f%% %8.1e\n", g.layer.c_str(),
                      g.pass.c_str(), shape_text(g).c_str(), f * 1e-6, g.cl_ms, gc, g.blas_ms, gb, 100.0 * gc / gb,
                      g.max_rel_diff);
        else
          std::printf("%-28s %-7s %-30s %7.1f %10.2f %8.1f\n", g.layer.c_str(), g.pass.c_str(), shape_text(g).c_str(),
                      f * 1e-6, g.cl_ms, gc);
        std::fflush(stdout);
        char row[512];
        std::snprintf(
            row, sizeof row,
            "%s\n    {\"model\": \"%s\", \"batch\": %d, \"layer\": \"%s\", \"pass\": \"%s\", \"shape\": \"%s\", "
            "\"calls\": %zu, \"flops\": %.0f, \"cltrain_ms\": %.4f, \"openblas_ms\": %.4f, "
            "\"cltrain_cpu_ms\": %.4f, \"openblas_cpu_ms\": %.4f, "
            "\"cltrain_gflops\": %.3f, \"openblas_gflops\": %.3f, \"max_rel_diff\": %.3e}",
            first_json ? "" : ",", name.c_str(), batch, g.layer.c_str(), g.pass.c_str(), shape_text(g).c_str(),
            g.calls.size(), f, g.cl_ms, g.blas_ms, g.cl_cpu_ms, g.blas_cpu_ms, gc, gb, g.max_rel_diff);
        json += row;
        first_json = false;
      }
      if (blas)
        std::printf("%-28s %-7s %-30s %7.1f %10.2f %8.1f %11.2f %8.1f %5.0f%%\n", "these together", "", "",
                    sum_flops * 1e-6, sum_cl, sum_flops / (sum_cl * 1e6), sum_blas, sum_flops / (sum_blas * 1e6),
                    100.0 * sum_blas / sum_cl);
      std::printf("total cltrain GEMM ms %s %.3f\n", name.c_str(), sum_cl);
      std::printf("total cltrain GEMM cpu-ms %s %.3f\n", name.c_str(), sum_cl_cpu);
    }
    json += "\n  ]\n}\n";
    if (blas) std::printf("\n%d of the groups above run below 40%% of OpenBLAS's GFLOP/s\n", below);
    if (!json_path.empty()) std::ofstream(json_path) << json;
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
