// Builds OpenCL programs from the embedded kernel families, once per (family, options) and
// context. Each program is numerics.h (FP_CONTRACT OFF, clt_exp/clt_log), common.cl and the
// family's source, compiled as OpenCL C 1.2 with the device options (correctly rounded divide and
// sqrt where the device offers them) and the op instance's -D definitions. With a cache
// directory, program binaries are also kept on disk (disk_cache.h entries, checksummed), keyed
// by source, options, device, driver and a format version; an entry that is missing, corrupt or
// refused by the driver is compiled again and rewritten.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>

#include "device/cl_headers.h"
#include "program/disk_cache.h"

namespace cltrain::ocl {

// The build options of every program on a device: "-cl-std=CL1.2", plus
// "-cl-fp32-correctly-rounded-divide-sqrt" when CL_DEVICE_SINGLE_FP_CONFIG has
// CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (the numerics of cltrain_backend.h round / and sqrt exactly).
std::string program_options(cl_device_fp_config single_fp_config);

class ProgramCache {
 public:
  // device_options: build options every program of this device gets (program_options()).
  ProgramCache(cl_context context, cl_device_id device, std::string device_key, std::string cache_dir,
               std::string device_options);
  ~ProgramCache();
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;

  // A new kernel object (the caller releases it) from the program for (family, options).
  cl_kernel create_kernel(const std::string& family, const std::string& options, const char* kernel_name);

  int programs_built() const { return built_; }                    // compiled from source
  int programs_loaded() const { return loaded_; }                  // loaded from the disk cache
  int entries_rejected() const { return rejected_; }               // disk cache entries found invalid and rebuilt
  int programs_from_source() const { return source_only_built_; }  // of families kept out of the cache
  int builds_retried() const { return retried_; }                  // failed without a compile error, built again
  // Programs of this family are never saved to (nor loaded from) the cache directory: each
  // process builds them from source. For kernels whose binaries cost the driver far more to
  // produce than a rebuild costs (gemm.cl on POCL: see backend.cc).
  void keep_source_only(const std::string& family) { source_only_.insert(family); }
  // With trace on, each rejected entry and each failed write is one line on stderr.
  void set_trace(bool on) { trace_ = on; }

 private:
  cl_program get_program(const std::string& family, const std::string& options);
  cl_program load_binary(const std::string& path, const KeyHash& key);
  void save_binary(cl_program program, const std::string& path, const KeyHash& key);
  void note_rejected(const std::string& path, const std::string& why);

  cl_context context_;
  cl_device_id device_;
  std::string device_key_;  // device name, version and driver: part of the disk cache key
  std::string cache_dir_;
  std::string device_options_;
  std::map<std::pair<std::string, std::string>, cl_program> programs_;
  static constexpr int kBuildAttempts = 3;
  int built_ = 0, loaded_ = 0, rejected_ = 0, source_only_built_ = 0, retried_ = 0;
  std::set<std::string> source_only_;
  bool trace_ = false;
};

}  // namespace cltrain::ocl
