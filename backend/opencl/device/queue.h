// The backend's in-order command queue as steps use it when they run: kernel launches sized for
// the device, copies and fills, each one counted and, with profiling on, timed (counters.h).
#pragma once

#include <cstdint>
#include <string>

#include "device/cl_headers.h"
#include "device/counters.h"
#include "device/device.h"
#include "program/kernel.h"

namespace cltrain::ocl {

// The work-group size for count work-items of k on device: 64 on GPUs; on CPU devices, where every
// group costs a few microseconds of scheduling (POCL), up to 1024, fewer when that leaves less than
// 4 groups per compute unit; never above what k and the device take.
size_t work_group_size(const DeviceInfo& device, const Kernel& k, uint64_t count);

class Queue {
 public:
  Queue(const DeviceInfo& device, Counters& counters) : device_(device), counters_(counters) {}

  cl_command_queue handle() const { return handle_; }
  // Set by create; set_profiling replaces it (OpenCL 1.2 cannot turn profiling on in a queue).
  void set_handle(cl_command_queue q) { handle_ = q; }
  const DeviceInfo& device() const { return device_; }
  Counters& counters() const { return counters_; }

  // count work-items, padded to whole work-groups (kernels check their bound) of
  // work_group_size.
  void launch_1d(const Kernel& k, uint64_t count) const;
  // The work-group size launch_1d uses for count work-items of k.
  size_t local_size(const Kernel& k, uint64_t count) const;
  // A 2-D range of (x, y) work-items, x padded to whole work-groups (kernels check their bound).
  void launch_2d(const Kernel& k, uint64_t x, uint64_t y) const;
  // groups work-groups of wg work-items each.
  void launch_groups(const Kernel& k, uint64_t groups, size_t wg) const;
  // An explicit range, as the kernel needs it.
  void launch(const Kernel& k, cl_uint dims, const size_t* global, const size_t* local) const;
  // Within one buffer; what names the step for an error.
  void copy(cl_mem buffer, size_t from, size_t to, size_t bytes, const std::string& what) const;
  void fill_zero(cl_mem buffer, size_t offset, size_t bytes, const std::string& what) const;

 private:
  const DeviceInfo& device_;
  Counters& counters_;
  cl_command_queue handle_ = nullptr;
};

}  // namespace cltrain::ocl
