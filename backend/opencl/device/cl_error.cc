#include "device/cl_error.h"

#include <cstring>

namespace cltrain::ocl {

void fail(cltrain_status status, const std::string& message) { throw Error(status, message); }

std::string cl_error_name(cl_int code) {
  switch (code) {
#define CLT_NAME(c) \
  case c: return #c;
    CLT_NAME(CL_SUCCESS)
    CLT_NAME(CL_DEVICE_NOT_FOUND)
    CLT_NAME(CL_DEVICE_NOT_AVAILABLE)
    CLT_NAME(CL_COMPILER_NOT_AVAILABLE)
    CLT_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    CLT_NAME(CL_OUT_OF_RESOURCES)
    CLT_NAME(CL_OUT_OF_HOST_MEMORY)
    CLT_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
    CLT_NAME(CL_MEM_COPY_OVERLAP)
    CLT_NAME(CL_IMAGE_FORMAT_MISMATCH)
    CLT_NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    CLT_NAME(CL_BUILD_PROGRAM_FAILURE)
    CLT_NAME(CL_MAP_FAILURE)
    CLT_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    CLT_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    CLT_NAME(CL_COMPILE_PROGRAM_FAILURE)
    CLT_NAME(CL_LINKER_NOT_AVAILABLE)
    CLT_NAME(CL_LINK_PROGRAM_FAILURE)
    CLT_NAME(CL_DEVICE_PARTITION_FAILED)
    CLT_NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    CLT_NAME(CL_INVALID_VALUE)
    CLT_NAME(CL_INVALID_DEVICE_TYPE)
    CLT_NAME(CL_INVALID_PLATFORM)
    CLT_NAME(CL_INVALID_DEVICE)
    CLT_NAME(CL_INVALID_CONTEXT)
    CLT_NAME(CL_INVALID_QUEUE_PROPERTIES)
    CLT_NAME(CL_INVALID_COMMAND_QUEUE)
    CLT_NAME(CL_INVALID_HOST_PTR)
    CLT_NAME(CL_INVALID_MEM_OBJECT)
    CLT_NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    CLT_NAME(CL_INVALID_IMAGE_SIZE)
    CLT_NAME(CL_INVALID_SAMPLER)
    CLT_NAME(CL_INVALID_BINARY)
    CLT_NAME(CL_INVALID_BUILD_OPTIONS)
    CLT_NAME(CL_INVALID_PROGRAM)
    CLT_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
    CLT_NAME(CL_INVALID_KERNEL_NAME)
    CLT_NAME(CL_INVALID_KERNEL_DEFINITION)
    CLT_NAME(CL_INVALID_KERNEL)
    CLT_NAME(CL_INVALID_ARG_INDEX)
    CLT_NAME(CL_INVALID_ARG_VALUE)
    CLT_NAME(CL_INVALID_ARG_SIZE)
    CLT_NAME(CL_INVALID_KERNEL_ARGS)
    CLT_NAME(CL_INVALID_WORK_DIMENSION)
    CLT_NAME(CL_INVALID_WORK_GROUP_SIZE)
    CLT_NAME(CL_INVALID_WORK_ITEM_SIZE)
    CLT_NAME(CL_INVALID_GLOBAL_OFFSET)
    CLT_NAME(CL_INVALID_EVENT_WAIT_LIST)
    CLT_NAME(CL_INVALID_EVENT)
    CLT_NAME(CL_INVALID_OPERATION)
    CLT_NAME(CL_INVALID_GL_OBJECT)
    CLT_NAME(CL_INVALID_BUFFER_SIZE)
    CLT_NAME(CL_INVALID_MIP_LEVEL)
    CLT_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    CLT_NAME(CL_INVALID_PROPERTY)
    CLT_NAME(CL_INVALID_IMAGE_DESCRIPTOR)
    CLT_NAME(CL_INVALID_COMPILER_OPTIONS)
    CLT_NAME(CL_INVALID_LINKER_OPTIONS)
    CLT_NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
    CLT_NAME(CL_PLATFORM_NOT_FOUND_KHR)
#undef CLT_NAME
    default: return "CL error " + std::to_string(code);
  }
}

bool is_allocation_error(cl_int code) {
  return code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_HOST_MEMORY || code == CL_OUT_OF_RESOURCES ||
         code == CL_INVALID_BUFFER_SIZE;
}

std::string source_location(const char* file, int line) {
  // Keep the path from the project's top folder ("backend/opencl/x.cc"), not the build machine's.
  std::string path = file ? file : "?";
  const size_t at = path.rfind("backend/opencl/");
  if (at != std::string::npos) path = path.substr(at);
  return path + ":" + std::to_string(line);
}

void check_cl(cl_int err, const char* call, const char* file, int line, const std::string& detail) {
  if (err == CL_SUCCESS) return;
  std::string msg = std::string(call) + ": " + cl_error_name(err) + " (" + source_location(file, line);
  if (!detail.empty()) msg += ", " + detail;
  msg += ")";
  // CL_OUT_OF_RESOURCES also reports crashed kernels on some drivers, so only the unambiguous
  // codes become CLTRAIN_OUT_OF_MEMORY here; allocation sites map the rest themselves.
  const bool oom = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY;
  throw Error(oom ? CLTRAIN_OUT_OF_MEMORY : CLTRAIN_ERROR, msg, err);
}

}  // namespace cltrain::ocl
