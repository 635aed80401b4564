// CLBlast parameters per device: CLBlast's own database has no entry for some devices (POCL's
// CPU device among them), and its defaults run the convolution-sized GEMMs several times slower
// than parameters chosen for the device. Changing the parameters never changes the order of the
// fma chain of an output element (CLBlast does not split k), only the speed.
#pragma once

#include <cstdint>
#include <string>

#include "device/device.h"

namespace cltrain::ocl {

// Overrides CLBlast's Xgemm parameters for this device (process-wide in CLBlast) where this
// file knows better ones, or where CLTRAIN_CLBLAST_XGEMM="VWM=8 VWN=8 ..." (every Xgemm
// parameter) and CLTRAIN_CLBLAST_MIN_INDIRECT=<n> say so. Returns what was applied ("" for
// nothing); throws Error for malformed environment values or parameters CLBlast refuses.
std::string apply_gemm_tuning(const DeviceInfo& device);

// The GEMM tile of CLBlast's Xgemm kernel on this device (the larger of MWG and NWG; 64 if
// CLBlast does not say): GEMM dimensions that are multiples of it spare CLBlast copies.
uint64_t gemm_tile(const DeviceInfo& device);

}  // namespace cltrain::ocl
