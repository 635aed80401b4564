#include "program_cache.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "cl_error.h"
#include "kernel_sources.h"

namespace cltrain::ocl {
namespace {

// Bump when the kernels' calling conventions or the cache file layout change.
constexpr const char* kCacheFormat = "cltrain-ocl-cache-2";

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

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
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS)
    return {};
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, &log[0], nullptr) != CL_SUCCESS)
    return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

}  // namespace

std::string program_options(cl_device_fp_config single_fp_config) {
  std::string o = "-cl-std=CL1.2";
  if (single_fp_config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) o += " -cl-fp32-correctly-rounded-divide-sqrt";
  return o;
}

ProgramCache::ProgramCache(cl_context context, cl_device_id device, std::string device_key,
                           std::string cache_dir, std::string device_options)
    : context_(context),
      device_(device),
      device_key_(std::move(device_key)),
      cache_dir_(std::move(cache_dir)),
      device_options_(std::move(device_options)) {}

ProgramCache::~ProgramCache() {
  for (auto& [key, program] : programs_) clReleaseProgram(program);
}

cl_kernel ProgramCache::create_kernel(const std::string& family, const std::string& options,
                                      const char* kernel_name) {
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
  if (!numerics || !common || !body)
    fail(CLTRAIN_ERROR, "kernel source " + family + " is not embedded in the plugin");
  const std::string text = std::string(numerics) + "\n" + common + "\n" + body;
  const std::string full_options = device_options_ + " " + options;
  const std::string where = family + " with '" + options + "'";

  std::string cache_path;
  if (!cache_dir_.empty()) {
    const std::string k = std::string(kCacheFormat) + "\n" + device_key_ + "\n" + full_options + "\n" + text;
    cache_path = cache_dir_ + "/cltrain-ocl-" + hex64(fnv1a(k, 0xcbf29ce484222325ull)) +
                 hex64(fnv1a(k, 0x84222325cbf29ce4ull)) + ".bin";
    if (cl_program p = load_binary(cache_path)) {
      if (clBuildProgram(p, 1, &device_, full_options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
        ++loaded_;
        programs_.emplace(key, p);
        return p;
      }
      clReleaseProgram(p);  // a stale or foreign binary: compile instead
    }
  }

  const char* src = text.c_str();
  const size_t len = text.size();
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context_, 1, &src, &len, &err);
  CLT_CHECK(err, "clCreateProgramWithSource", where);
  err = clBuildProgram(program, 1, &device_, full_options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    const std::string log = build_log(program, device_);
    clReleaseProgram(program);
    CLT_CHECK(err, "clBuildProgram", where + ": " + log_excerpt(log));
  }
  ++built_;
  programs_.emplace(key, program);
  if (!cache_path.empty()) save_binary(program, cache_path);
  return program;
}

cl_program ProgramCache::load_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return nullptr;
  const unsigned char* data = bytes.data();
  const size_t size = bytes.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program p = clCreateProgramWithBinary(context_, 1, &device_, &size, &data, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (p) clReleaseProgram(p);
    return nullptr;
  }
  return p;
}

void ProgramCache::save_binary(cl_program program, const std::string& path) {
  // Best effort: a cache that cannot be written only costs a compile next time.
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0)
    return;
  std::vector<unsigned char> bytes(size);
  unsigned char* ptr = bytes.data();
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return;
  const std::string tmp = path + ".tmp" + std::to_string(static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
    if (!out) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace cltrain::ocl
