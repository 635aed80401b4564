#include "device/queue.h"

#include <algorithm>

#include "device/cl_error.h"

namespace cltrain::ocl {

size_t work_group_size(const DeviceInfo& device, const Kernel& k, uint64_t count) {
  size_t want = 64;
  if (device.type & CL_DEVICE_TYPE_CPU) {
    const uint64_t per_unit = count / (4 * std::max<uint64_t>(device.compute_units, 1));
    want = 1;
    while (want * 2 <= 1024 && want * 2 <= per_unit) want *= 2;
  }
  return std::max<size_t>(1, std::min<size_t>({want, k.max_local, device.max_work_group}));
}

size_t Queue::local_size(const Kernel& k, uint64_t count) const { return work_group_size(device_, k, count); }

void Queue::launch(const Kernel& k, cl_uint dims, const size_t* global, const size_t* local) const {
  CLT_CALL(clEnqueueNDRangeKernel, (handle_, k.handle, dims, nullptr, global, local, 0, nullptr, nullptr),
           "kernel " + k.name);
}

void Queue::launch_1d(const Kernel& k, uint64_t count) const {
  if (count == 0) return;
  const size_t local = local_size(k, count);
  const size_t global = (count + local - 1) / local * local;
  launch(k, 1, &global, &local);
}

void Queue::launch_2d(const Kernel& k, uint64_t x, uint64_t y) const {
  if (x == 0 || y == 0) return;
  const size_t lx = local_size(k, x * y);
  const size_t global[2] = {(x + lx - 1) / lx * lx, y};
  const size_t local[2] = {lx, 1};
  launch(k, 2, global, local);
}

void Queue::launch_groups(const Kernel& k, uint64_t groups, size_t wg) const {
  if (groups == 0) return;
  const size_t global = groups * wg;
  launch(k, 1, &global, &wg);
}

void Queue::copy(cl_mem buffer, size_t from, size_t to, size_t bytes, const std::string& what) const {
  CLT_CALL(clEnqueueCopyBuffer, (handle_, buffer, buffer, from, to, bytes, 0, nullptr, nullptr), what);
}

void Queue::fill_zero(cl_mem buffer, size_t offset, size_t bytes, const std::string& what) const {
  const float zero = 0.0f;
  CLT_CALL(clEnqueueFillBuffer, (handle_, buffer, &zero, sizeof zero, offset, bytes, 0, nullptr, nullptr), what);
}

}  // namespace cltrain::ocl
