#include "program/program_cache.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include "device/cl_error.h"
#include "program/disk_cache.h"
#include "program/kernel_sources.h"

namespace cltrain::ocl {
namespace {

// Bump when the kernels' calling conventions or the binary entries change.
constexpr const char* kCacheFormat = "cltrain-ocl-cache-3";
constexpr const char* kBinaryMagic = "CLTBIN01";

// The first lines of a build log, joined into one line.
std::string log_excerpt(const std::string& log) {
  std::istringstream in(log);
  std::string line, out;
  int lines = 0;
  while (std::getline(in, line) && lines < 8) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!out.empty()) out += " | ";
    out += line;
    ++lines;
  }
  if (out.size() > 800) out = out.substr(0, 800) + "...";
  return out.empty() ? "(empty build log)" : out;
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) return {};
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, &log[0], nullptr) != CL_SUCCESS) return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// POCL serializes a program's folder of its own kernel cache into the binary. When another
// process builds the same program into that shared folder at the same moment, the binary can come
// out without the folder's program.bc, and POCL then aborts (an assert in
// pocl_binary_get_kernels_metadata) on the clBuildProgram of that binary in any later process.
// Such a binary is neither saved nor loaded; other drivers' binaries are taken as they are.
bool whole_binary(const std::vector<uint8_t>& b) {
  static const char kPocl[] = "poclbin";
  static const char kBitcode[] = "program.bc";
  if (b.size() < sizeof kPocl || std::memcmp(b.data(), kPocl, sizeof kPocl - 1) != 0) return true;
  return std::search(b.begin(), b.end(), kBitcode, kBitcode + sizeof kBitcode - 1) != b.end();
}

}  // namespace

std::string program_options(cl_device_fp_config single_fp_config) {
  // -w: a compiler's warnings (POCL's clang prints "1 warning generated." to stderr for an unroll
  // hint it cannot follow) would break the CLI's one-line errors; a failed build's log still says why.
  std::string o = "-cl-std=CL1.2 -w";
  if (single_fp_config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) o += " -cl-fp32-correctly-rounded-divide-sqrt";
  return o;
}

ProgramCache::ProgramCache(cl_context context, cl_device_id device, std::string device_key, std::string cache_dir,
                           std::string device_options)
    : context_(context),
      device_(device),
      device_key_(std::move(device_key)),
      cache_dir_(std::move(cache_dir)),
      device_options_(std::move(device_options)) {}

ProgramCache::~ProgramCache() {
  for (auto& [key, program] : programs_) clReleaseProgram(program);
}

cl_kernel ProgramCache::create_kernel(const std::string& family, const std::string& options, const char* kernel_name) {
  cl_program program = get_program(family, options);
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, kernel_name, &err);
  CLT_CHECK(err, "clCreateKernel", std::string("kernel ") + kernel_name + " of " + family);
  return kernel;
}

cl_program ProgramCache::get_program(const std::string& family, const std::string& options) {
  const auto key = std::make_pair(family, options);
  if (auto it = programs_.find(key); it != programs_.end()) return it->second;

  // numerics.h comes first: its FP_CONTRACT OFF must precede every kernel.
  const char* numerics = find_kernel_source("numerics.h");
  const char* common = find_kernel_source("common.cl");
  const char* body = find_kernel_source(family);
  if (!numerics || !common || !body) fail(CLTRAIN_ERROR, "kernel source " + family + " is not embedded in the plugin");
  const std::string text = std::string(numerics) + "\n" + common + "\n" + body;
  const std::string full_options = device_options_ + " " + options;
  const std::string where = family + " with '" + options + "'";

  std::string cache_path;
  KeyHash cache_key;
  const bool source_only = source_only_.count(family) > 0;
  if (!cache_dir_.empty() && !source_only) {
    cache_key.str(kCacheFormat).str(device_key_).str(full_options).str(text);
    cache_path = cache_dir_ + "/cltrain-ocl-program-" + cache_key.hex() + ".bin";
    if (cl_program p = load_binary(cache_path, cache_key)) {
      if (clBuildProgram(p, 1, &device_, full_options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
        ++loaded_;
        programs_.emplace(key, p);
        return p;
      }
      clReleaseProgram(p);  // a binary this driver no longer takes: compile instead
      note_rejected(cache_path, "is not accepted by the driver");
    }
  }

  const char* src = text.c_str();
  const size_t len = text.size();
  cl_program program = nullptr;
  // A failure whose log names no compile error is retried: POCL's kernel cache is shared by every
  // process of the user, and a build that races another process's build of the same program fails
  // with only "failed to build the program" (pocl/pocl#1480; federated clients on one machine hit
  // it). A kernel that does not compile fails at once, with its log.
  for (int attempt = 1;; ++attempt) {
    cl_int err = CL_SUCCESS;
    program = clCreateProgramWithSource(context_, 1, &src, &len, &err);
    CLT_CHECK(err, "clCreateProgramWithSource", where);
    err = clBuildProgram(program, 1, &device_, full_options.c_str(), nullptr, nullptr);
    if (err == CL_SUCCESS) break;
    const std::string log = build_log(program, device_);
    clReleaseProgram(program);
    if (err == CL_BUILD_PROGRAM_FAILURE && attempt < kBuildAttempts && log.find("error") == std::string::npos) {
      ++retried_;
      if (trace_)
        std::fprintf(stderr, "cltrain opencl: %s: build failed without a compile error; again\n", where.c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
      continue;
    }
    CLT_CHECK(err, "clBuildProgram",
              where + (attempt > 1 ? " (" + std::to_string(attempt) + " attempts)" : "") + ": " + log_excerpt(log));
  }
  ++(source_only ? source_only_built_ : built_);
  programs_.emplace(key, program);
  if (!cache_path.empty()) save_binary(program, cache_path, cache_key);
  return program;
}

void ProgramCache::note_rejected(const std::string& path, const std::string& why) {
  ++rejected_;
  if (trace_) std::fprintf(stderr, "cltrain opencl: cache entry %s %s; building it again\n", path.c_str(), why.c_str());
}

cl_program ProgramCache::load_binary(const std::string& path, const KeyHash& key) {
  std::vector<uint8_t> bytes;
  std::string why;
  const EntryRead r = read_entry(path, kBinaryMagic, key, &bytes, &why);
  if (r == EntryRead::kInvalid || (r == EntryRead::kLoaded && bytes.empty())) {
    note_rejected(path, why.empty() ? "is empty" : why);
    return nullptr;
  }
  if (r != EntryRead::kLoaded) return nullptr;
  if (!whole_binary(bytes)) {
    note_rejected(path, "is a POCL binary without its program.bc (a build that raced another process's)");
    return nullptr;
  }
  const unsigned char* data = bytes.data();
  const size_t size = bytes.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program p = clCreateProgramWithBinary(context_, 1, &device_, &size, &data, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (p) clReleaseProgram(p);
    note_rejected(path, "is not accepted by the driver");
    return nullptr;
  }
  return p;
}

void ProgramCache::save_binary(cl_program program, const std::string& path, const KeyHash& key) {
  // Best effort: a cache that cannot be written only costs a compile next time.
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0)
    return;
  std::vector<uint8_t> bytes(size);
  unsigned char* ptr = bytes.data();
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return;
  if (!whole_binary(bytes)) {
    if (trace_)
      std::fprintf(stderr, "cltrain opencl: %s not saved: POCL's binary lacks its program.bc\n", path.c_str());
    return;
  }
  try {
    write_entry(path, kBinaryMagic, key, bytes);
  } catch (const std::exception& e) {
    if (trace_) std::fprintf(stderr, "cltrain opencl: %s\n", e.what());
  }
}

}  // namespace cltrain::ocl
