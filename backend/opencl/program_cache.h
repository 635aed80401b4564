// Builds OpenCL programs from the embedded kernel families, once per (family, options) and
// context. Each program is common.cl followed by the family's source, compiled as OpenCL C 1.2
// with the op instance's -D definitions. With a cache directory, program binaries are also kept
// on disk, keyed by source, options, device, driver and a format version; any cache failure falls
// back to compiling.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "cl_headers.h"

namespace cltrain::ocl {

class ProgramCache {
 public:
  ProgramCache(cl_context context, cl_device_id device, std::string device_key, std::string cache_dir);
  ~ProgramCache();
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;

  // A new kernel object (the caller releases it) from the program for (family, options).
  cl_kernel create_kernel(const std::string& family, const std::string& options, const char* kernel_name);

  int programs_built() const { return built_; }      // compiled from source
  int programs_loaded() const { return loaded_; }    // loaded from the disk cache

 private:
  cl_program get_program(const std::string& family, const std::string& options);
  cl_program load_binary(const std::string& path);
  void save_binary(cl_program program, const std::string& path);

  cl_context context_;
  cl_device_id device_;
  std::string device_key_;  // device name, version and driver: part of the disk cache key
  std::string cache_dir_;
  std::map<std::pair<std::string, std::string>, cl_program> programs_;
  int built_ = 0, loaded_ = 0;
};

}  // namespace cltrain::ocl
