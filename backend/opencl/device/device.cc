#include "device/device.h"

#include <algorithm>
#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "device/cl_error.h"
#include "device/driver_isolation.h"

namespace cltrain::ocl {
namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "?";
  std::string s(size, '\0');
  if (clGetPlatformInfo(p, what, size, &s[0], nullptr) != CL_SUCCESS) return "?";
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

// CLTRAIN_OPENCL_LIMITS="max_alloc=1G,local_mem=16K,work_group=256": tighter limits than the
// device reports (never looser), so that a test on POCL's generous ones runs the backend as a
// board's OpenCL would (each value a number with an optional K, M or G suffix; unknown names and
// bad numbers are ignored with nothing changed).
void apply_limits(DeviceInfo& d) {
  const char* env = std::getenv("CLTRAIN_OPENCL_LIMITS");
  if (!env) return;
  std::stringstream list(env);
  std::string item;
  while (std::getline(list, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    char* end = nullptr;
    unsigned long long v = std::strtoull(value.c_str(), &end, 10);
    if (end == value.c_str()) continue;
    const char unit = *end;
    v <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    if (v == 0) continue;
    if (name == "max_alloc") d.max_alloc = std::min<cl_ulong>(d.max_alloc, v);
    if (name == "local_mem") d.local_mem = std::min<cl_ulong>(d.local_mem, v);
    if (name == "work_group") d.max_work_group = std::min<size_t>(d.max_work_group, v);
  }
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "?";
  std::string s(size, '\0');
  if (clGetDeviceInfo(d, what, size, &s[0], nullptr) != CL_SUCCESS) return "?";
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  if (clGetDeviceInfo(d, what, sizeof(T), &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

// "POCL" for "Portable Computing Language", else the platform's name.
std::string short_platform_name(const std::string& name) {
  if (name == "Portable Computing Language") return "POCL";
  return name;
}

std::string bytes_text(cl_ulong b) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1);
  if (b >= (1ull << 30))
    s << (b >> 20) / 1024.0 << " GiB";
  else if (b >= (1ull << 20))
    s << (b >> 10) / 1024.0 << " MiB";
  else
    s << b / 1024.0 << " KiB";
  return s.str();
}

}  // namespace

Discovery discover_devices() {
  Discovery out;
  isolate_drivers_from_foreign_llvm();  // before the ICD loader opens any driver
  cl_uint num_platforms = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (err != CL_SUCCESS || num_platforms == 0) {
    out.none_reason = "no OpenCL platform found (clGetPlatformIDs: " +
                      cl_error_name(err == CL_SUCCESS ? CL_PLATFORM_NOT_FOUND_KHR : err) + ")";
    return out;
  }
  std::vector<cl_platform_id> platforms(num_platforms);
  err = clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  if (err != CL_SUCCESS) {
    out.none_reason = "no OpenCL platform found (clGetPlatformIDs: " + cl_error_name(err) + ")";
    return out;
  }
  cl_int last_device_err = CL_DEVICE_NOT_FOUND;
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
    if (err != CL_SUCCESS || n == 0) {
      last_device_err = err == CL_SUCCESS ? CL_DEVICE_NOT_FOUND : err;
      continue;
    }
    std::vector<cl_device_id> ids(n);
    if ((err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr)) != CL_SUCCESS) {
      last_device_err = err;
      continue;
    }
    const std::string pname = platform_string(p, CL_PLATFORM_NAME);
    for (cl_device_id id : ids) {
      DeviceInfo d;
      d.index = static_cast<int>(out.devices.size());
      d.platform = p;
      d.id = id;
      d.platform_name = pname;
      d.platform_short = short_platform_name(pname);
      d.name = device_string(id, CL_DEVICE_NAME);
      d.version = device_string(id, CL_DEVICE_VERSION);
      d.c_version = device_string(id, CL_DEVICE_OPENCL_C_VERSION);
      d.driver = device_string(id, CL_DRIVER_VERSION);
      d.type = device_value<cl_device_type>(id, CL_DEVICE_TYPE);
      d.compute_units = device_value<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
      d.native_float_width = device_value<cl_uint>(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
      d.max_work_group = device_value<size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
      d.global_mem = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
      d.local_mem = device_value<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE);
      d.max_alloc = device_value<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      d.base_addr_align_bits = device_value<cl_uint>(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN);
      d.single_fp_config = device_value<cl_device_fp_config>(id, CL_DEVICE_SINGLE_FP_CONFIG);
      apply_limits(d);
      out.devices.push_back(std::move(d));
    }
  }
  if (out.devices.empty()) {
    out.none_reason = "no OpenCL device found on " + std::to_string(num_platforms) +
                      " platform(s) (clGetDeviceIDs: " + cl_error_name(last_device_err) + ")";
  }
  return out;
}

int default_device_index(const std::vector<DeviceInfo>& devices) {
  for (const auto& d : devices)
    if (d.type & CL_DEVICE_TYPE_GPU) return d.index;
  return devices.empty() ? -1 : 0;
}

int select_device(const std::vector<DeviceInfo>& devices, int config_index) {
  const int count = static_cast<int>(devices.size());
  auto out_of_range = [&](long long index, const std::string& from) {
    fail(CLTRAIN_ERROR, "OpenCL device index " + std::to_string(index) + from +
                            " is out of range: " + std::to_string(count) + " device(s) found" +
                            (count > 0 ? " (indices 0.." + std::to_string(count - 1) + ")" : ""));
  };
  if (config_index >= 0) {
    if (config_index >= count) out_of_range(config_index, "");
    return config_index;
  }
  if (const char* env = std::getenv("CLTRAIN_OPENCL_DEVICE"); env && *env) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end == env || *end != '\0')
      fail(CLTRAIN_ERROR, std::string("CLTRAIN_OPENCL_DEVICE='") + env + "' is not a device index");
    if (v < 0 || v >= count) out_of_range(v, " (from CLTRAIN_OPENCL_DEVICE)");
    return static_cast<int>(v);
  }
  const int d = default_device_index(devices);
  if (d < 0) fail(CLTRAIN_UNAVAILABLE, "no OpenCL device found");
  return d;
}

std::string device_type_name(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "ACCELERATOR";
#ifdef CL_DEVICE_TYPE_CUSTOM
  if (type & CL_DEVICE_TYPE_CUSTOM) return "CUSTOM";
#endif
  return "OTHER";
}

std::string describe_device(const DeviceInfo& d, bool is_default) {
  std::ostringstream s;
  s << "[" << d.index << "] " << device_type_name(d.type) << " " << d.platform_short << ": " << d.name << " | "
    << d.compute_units << " compute units, max work-group " << d.max_work_group << ", global "
    << bytes_text(d.global_mem) << ", local " << bytes_text(d.local_mem) << ", max alloc " << bytes_text(d.max_alloc)
    << " | " << d.version << " | " << d.c_version << " | driver " << d.driver << (is_default ? " (default)" : "");
  return s.str();
}

std::string device_line(const DeviceInfo& d) {
  return d.platform_short + ": " + d.name + " (" + d.version + ", driver " + d.driver + ")";
}

}  // namespace cltrain::ocl
