// Errors inside the OpenCL backend: one exception type that carries a cltrain_status and a
// one-line message, and checks that turn OpenCL error codes into such messages:
//   "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (backend/opencl/launch.cc:123, kernel fc_bias_act)"
// Exceptions never leave the plugin: every ABI entry point catches them (backend.cc).
#pragma once

#include <stdexcept>
#include <string>

#include "cltrain/cltrain_backend.h"
#include "device/cl_headers.h"

namespace cltrain::ocl {

class Error : public std::runtime_error {
 public:
  Error(cltrain_status status, const std::string& message, cl_int cl_code = CL_SUCCESS)
      : std::runtime_error(message), status_(status), cl_code_(cl_code) {}
  cltrain_status status() const { return status_; }
  cl_int cl_code() const { return cl_code_; }  // CL_SUCCESS unless an OpenCL call failed

 private:
  cltrain_status status_;
  cl_int cl_code_;
};

[[noreturn]] void fail(cltrain_status status, const std::string& message);

// "CL_INVALID_VALUE", or "CL error -9999" for a code it does not know.
std::string cl_error_name(cl_int code);

// True for codes that mean the device or host ran out of memory.
bool is_allocation_error(cl_int code);

// "backend/opencl/launch.cc:123" from __FILE__ and __LINE__.
std::string source_location(const char* file, int line);

// Throws Error(CLTRAIN_ERROR, or CLTRAIN_OUT_OF_MEMORY for allocation errors) when err != CL_SUCCESS.
void check_cl(cl_int err, const char* call, const char* file, int line, const std::string& detail);

}  // namespace cltrain::ocl

// CLT_CHECK(err, "clCreateBuffer", "pool") for calls that report through an errcode_ret.
#define CLT_CHECK(err, call, detail) ::cltrain::ocl::check_cl((err), (call), __FILE__, __LINE__, (detail))
// CLT_CALL(clFinish, (queue), "") for calls that return their error code.
#define CLT_CALL(fn, args, detail) ::cltrain::ocl::check_cl(fn args, #fn, __FILE__, __LINE__, (detail))
