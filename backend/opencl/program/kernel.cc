#include "program/kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "device/cl_error.h"

namespace cltrain::ocl {

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

void set_arg(const Kernel& k, cl_uint index, size_t size, const void* value) {
  CLT_CALL(clSetKernelArg, (k.handle, index, size, value), "kernel " + k.name + " argument " + std::to_string(index));
}

Kernels::~Kernels() {
  for (cl_kernel k : kernels_) clReleaseKernel(k);
}

Kernel Kernels::make(const std::string& family, const Defines& defs, const char* name) {
  Kernel k;
  k.name = name;
  k.handle = programs_.create_kernel(family, defs.str(), name);
  kernels_.push_back(k.handle);  // owned from here on
  CLT_CALL(clGetKernelWorkGroupInfo,
           (k.handle, device_, CL_KERNEL_WORK_GROUP_SIZE, sizeof k.max_local, &k.max_local, nullptr),
           "kernel " + k.name);
  k.max_local = std::max<size_t>(k.max_local, 1);
  return k;
}

}  // namespace cltrain::ocl
