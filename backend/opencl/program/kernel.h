// Kernel objects of one op instance: its -D definitions, creation from the program cache (the
// backend owns and releases every kernel it made), and argument setting.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/cl_headers.h"
#include "program/program_cache.h"

namespace cltrain::ocl {

// Compile-time definitions of one op instance: "-DN=32 -DM=10 -DBETA=0x1p+0f".
class Defines {
 public:
  Defines& set(const char* name, long long value);
  Defines& set_float(const char* name, float value);  // exact, as a hex float literal
  Defines& append(const std::string& definitions);    // "-DA=1 -DB=2" as they are
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

// A kernel object of one step; its Kernels releases it.
struct Kernel {
  cl_kernel handle = nullptr;
  std::string name;
  size_t max_local = 1;  // CL_KERNEL_WORK_GROUP_SIZE
  explicit operator bool() const { return handle != nullptr; }
};

void set_arg(const Kernel& k, cl_uint index, size_t size, const void* value);

template <class... A>
void set_args(const Kernel& k, const A&... args) {
  cl_uint i = 0;
  (set_arg(k, i++, sizeof(A), &args), ...);
}

// The kernels of one backend: made from its programs, released together.
class Kernels {
 public:
  Kernels(ProgramCache& programs, cl_device_id device) : programs_(programs), device_(device) {}
  ~Kernels();
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;

  Kernel make(const std::string& family, const Defines& defs, const char* name);

 private:
  ProgramCache& programs_;
  cl_device_id device_;
  std::vector<cl_kernel> kernels_;
};

}  // namespace cltrain::ocl
