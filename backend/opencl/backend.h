// The backend object behind the opaque cltrain_backend handle: what each part of the plugin keeps,
// by job (device/, program/, gemm/, memory/), and what prepare leaves for run().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"
#include "device/cl_headers.h"
#include "device/counters.h"
#include "device/device.h"
#include "device/queue.h"
#include "gemm/gemm.h"
#include "memory/plan_cache.h"
#include "memory/pool.h"
#include "ops/op.h"
#include "program/kernel.h"
#include "program/program_cache.h"

namespace cltrain::ocl {

// CLTRAIN_OPENCL_OP_FILTER: ops whose name matches are refused, so that tests can force fallback.
struct OpFilter {
  bool active = false;
  std::regex re;
  std::string error;  // set when the pattern is not a valid regular expression (then inactive)
  bool blocks(int op) const;
  static OpFilter from_env();
};

// write_tensor's copy of the host's data for one tensor: reused by every write of that tensor,
// and not overwritten before the previous transfer from it has completed (done).
struct StagedWrite {
  std::vector<uint8_t> bytes;
  cl_event done = nullptr;
};

}  // namespace cltrain::ocl

struct cltrain_backend {
  // device/: the device, its context and queue, what the plugin counts.
  cltrain::ocl::DeviceInfo device;
  std::string device_line;
  std::string device_key;  // device name, version and driver: part of every cache key
  cl_context context = nullptr;
  cl_command_queue_properties queue_properties = 0;  // as created (CLTRAIN_OPENCL_PROFILE)
  cltrain::ocl::Counters counters;
  cltrain::ocl::Queue queue{device, counters};

  // program/: programs built (and cached on disk under cache_dir), the kernels made from them.
  std::string cache_dir;  // cltrain_backend_config.cache_dir ("" for none): binaries and saved plans
  std::unique_ptr<cltrain::ocl::ProgramCache> programs;
  std::unique_ptr<cltrain::ocl::Kernels> kernels;

  // gemm/: the engine of the device's matrix products.
  cltrain::ocl::GemmEngine gemm;

  // memory/: the pool and its plan.
  cltrain::ocl::Pool pool;
  cltrain::ocl::PlanCache plans;  // where saved plans are kept; what prepare did with them
  // Bounds of one step's kernel scratch (im2col panels): prepare gives each step what it can take
  // without raising the pool's peak, between scratch_floor and scratch_cap.
  // CLTRAIN_OPENCL_SCRATCH_BYTES fixes both; else the cap is min(8 MiB, CL_DEVICE_MAX_MEM_ALLOC_SIZE
  // / 8) and the floor min(256 KiB, cap). Set by create.
  uint64_t scratch_cap = 8u << 20, scratch_floor = 256u << 10;
  uint64_t memory_budget = 0;  // the host's (cltrain_backend_config); nonzero: lean kernels allowed
  bool lean = false;           // this prepare takes the lean kernels (prepare.cc)
  int plan_asks = 0;           // times this prepare asked an op family for a step's plan (prepare.cc)

  cltrain::ocl::OpFilter filter;
  std::string last_error;

  // Set by prepare: the graph's steps, and per global step what run() enqueues (empty where the
  // step is not assigned here).
  bool prepared = false;
  bool planned_dry = false;  // the last plan() succeeded: b.pool holds its plan, without a buffer
  std::vector<cltrain_step_desc> steps;
  std::vector<uint8_t> assigned;
  std::vector<cltrain::ocl::StepRun> runs;
  std::vector<cltrain_private_tensor> private_rows;     // plan_private's answer
  std::vector<cltrain_kernel_profile> profile_rows;     // profile's answer
  std::map<int32_t, cltrain::ocl::StagedWrite> staged;  // per tensor the host writes

  // CLTRAIN_OPENCL_TRACE: run() waits for each step and adds its wall time here (per global
  // step); destroy prints the totals to stderr.
  bool trace = false;
  std::vector<double> trace_ms;
  std::vector<int64_t> trace_runs;

  cltrain_backend();
  cltrain_backend(const cltrain_backend&) = delete;
  cltrain_backend& operator=(const cltrain_backend&) = delete;
  ~cltrain_backend();
};

namespace cltrain::ocl {
using Backend = ::cltrain_backend;
}
