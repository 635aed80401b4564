// OpenCL platform and device discovery, device selection and the probe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/cl_headers.h"

namespace cltrain::ocl {

struct DeviceInfo {
  int index = -1;  // position over all platforms' devices: what device selection counts
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string platform_name, platform_short, name, version, c_version, driver;
  cl_device_type type = 0;
  cl_uint compute_units = 0;
  cl_uint native_float_width = 0;  // CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT
  size_t max_work_group = 0;
  cl_ulong global_mem = 0, local_mem = 0, max_alloc = 0;
  cl_uint base_addr_align_bits = 0;          // CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bits
  cl_device_fp_config single_fp_config = 0;  // CL_DEVICE_SINGLE_FP_CONFIG
};

struct Discovery {
  std::vector<DeviceInfo> devices;  // every device of every platform, in platform order
  std::string none_reason;          // why devices is empty
};

// Never throws for a missing ICD, platform or device: those leave devices empty with a reason.
Discovery discover_devices();

// The device create() uses without an explicit index: the first GPU, else the first device.
int default_device_index(const std::vector<DeviceInfo>& devices);

// config_index >= 0 wins, then env CLTRAIN_OPENCL_DEVICE, then the default. Throws Error
// (CLTRAIN_ERROR) naming how many devices exist when the index is out of range.
int select_device(const std::vector<DeviceInfo>& devices, int config_index);

// "GPU", "CPU", "ACCELERATOR", ...
std::string device_type_name(cl_device_type type);

// One line per device for list_devices.
std::string describe_device(const DeviceInfo& d, bool is_default);

// "POCL: pthread-haswell-AMD EPYC (OpenCL 3.0 PoCL ..., driver 3.1+debian)"
std::string device_line(const DeviceInfo& d);

}  // namespace cltrain::ocl
