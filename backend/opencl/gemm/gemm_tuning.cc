#include "gemm/gemm_tuning.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include <clblast.h>

#include "device/cl_error.h"

namespace cltrain::ocl {
namespace {

using Params = std::unordered_map<std::string, size_t>;

struct Tuning {
  const char* platform;  // DeviceInfo::platform_short
  cl_device_type type;
  const char* xgemm;    // every Xgemm parameter
  size_t min_indirect;  // GemmRoutine XGEMM_MIN_INDIRECT_SIZE: m n k below its cube go direct
};

// POCL on x86 CPUs (AVX2): 8x8 register tiles of float8, 16x32 tiles of 8 work-items per group
// (many groups for the small outputs of dW), k unrolled 16 times, no local memory; the indirect
// kernel for all but tiny products (CLBlast's default sends everything below 896^3 to the direct
// kernel, at a quarter of the speed). Chosen by CPU time over the GEMMs of mnist-kaggle's
// convolutions on a 2-core EPYC: about 125 ms of CPU per step's convolution GEMMs, against 250
// with 32x32 tiles of 16 work-items and over 700 with CLBlast's defaults.
const Tuning kTunings[] = {
    {"POCL", CL_DEVICE_TYPE_CPU,
     "GEMMK=0 KREG=1 KWG=16 KWI=16 MDIMA=2 MDIMC=2 MWG=16 NDIMB=4 NDIMC=4 NWG=32 SA=0 SB=0 STRM=0 STRN=0 VWM=8 VWN=8",
     64},
};

Params parse(const std::string& text, const std::string& where) {
  Params p;
  std::istringstream in(text);
  std::string kv;
  while (in >> kv) {
    const size_t eq = kv.find('=');
    char* end = nullptr;
    const unsigned long long v = eq == std::string::npos ? 0 : std::strtoull(kv.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || end == kv.c_str() + eq + 1 || *end != '\0')
      fail(CLTRAIN_ERROR, where + ": '" + kv + "' is not NAME=number");
    p[kv.substr(0, eq)] = static_cast<size_t>(v);
  }
  return p;
}

void override_params(const DeviceInfo& d, const char* kernel, const Params& p, const std::string& where) {
  const clblast::StatusCode st = clblast::OverrideParameters(d.id, kernel, clblast::Precision::kSingle, p);
  if (st != clblast::StatusCode::kSuccess)
    fail(CLTRAIN_ERROR, "clblast::OverrideParameters(" + std::string(kernel) + ") refused " + where + " (status " +
                            std::to_string(static_cast<int>(st)) + ")");
}

}  // namespace

std::string apply_gemm_tuning(const DeviceInfo& d) {
  std::string xgemm, applied;
  size_t min_indirect = 0;
  for (const Tuning& t : kTunings)
    if (d.platform_short == t.platform && (d.type & t.type)) {
      xgemm = t.xgemm;
      min_indirect = t.min_indirect;
    }
  if (const char* env = std::getenv("CLTRAIN_CLBLAST_XGEMM"); env && *env) xgemm = env;
  if (const char* env = std::getenv("CLTRAIN_CLBLAST_MIN_INDIRECT"); env && *env) {
    char* end = nullptr;
    min_indirect = std::strtoull(env, &end, 10);
    if (end == env || *end != '\0' || min_indirect == 0)
      fail(CLTRAIN_ERROR, std::string("CLTRAIN_CLBLAST_MIN_INDIRECT='") + env + "' is not a positive number");
  }
  if (!xgemm.empty()) {
    override_params(d, "Xgemm", parse(xgemm, "Xgemm parameters"), "'" + xgemm + "'");
    applied = "Xgemm " + xgemm;
  }
  if (min_indirect > 0) {
    override_params(d, "GemmRoutine", Params{{"XGEMM_MIN_INDIRECT_SIZE", min_indirect}},
                    "XGEMM_MIN_INDIRECT_SIZE=" + std::to_string(min_indirect));
    applied += (applied.empty() ? "" : ", ") + std::string("XGEMM_MIN_INDIRECT_SIZE=") + std::to_string(min_indirect);
  }
  return applied;
}

uint64_t gemm_tile(const DeviceInfo& d) {
  Params p;
  if (clblast::RetrieveParameters(d.id, "Xgemm", clblast::Precision::kSingle, p) != clblast::StatusCode::kSuccess)
    return 64;
  const uint64_t tile = std::max<uint64_t>(p.count("MWG") ? p["MWG"] : 0, p.count("NWG") ? p["NWG"] : 0);
  return tile > 0 ? tile : 64;
}

}  // namespace cltrain::ocl
