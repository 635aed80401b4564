// The backend object behind the opaque cltrain_backend handle, and the view of one step that the
// op families check and generate kernels from.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "cl_headers.h"
#include "gemm_native.h"
#include "cltrain/cltrain_backend.h"
#include "counters.h"
#include "device.h"
#include "program_cache.h"

namespace cltrain::ocl {

// What run() enqueues for one prepared step.
using StepRun = std::function<void(const cltrain_run_args* args)>;

// CLTRAIN_OPENCL_OP_FILTER: ops whose name matches are refused, so that tests can force fallback.
struct OpFilter {
  bool active = false;
  std::regex re;
  std::string error;  // set when the pattern is not a valid regular expression (then inactive)
  bool blocks(int op) const;
  static OpFilter from_env();
};

// One step and the tensors it refers to: the whole table, or (in supports()) only the step's own
// tensors by id.
struct StepView {
  const cltrain_step_desc& step;
  const cltrain_tensor_desc* tensors;
  int32_t index;  // global step index; -1 in supports()
  const std::map<int32_t, cltrain_tensor_desc>* step_tensors = nullptr;  // instead of tensors

  int32_t in(int i) const { return i < step.num_inputs ? step.inputs[i] : -1; }
  int32_t out(int i) const { return i < step.num_outputs ? step.outputs[i] : -1; }
  const cltrain_tensor_desc& tensor(int32_t id) const { return step_tensors ? step_tensors->at(id) : tensors[id]; }
  uint64_t count(int32_t id) const;  // elements
  std::string what() const;          // "step 5 (FullyConnected backward)"
};

std::string phase_name(int32_t phase);

// write_tensor's copy of the host's data for one tensor: reused by every write of that tensor,
// and not overwritten before the previous transfer from it has completed (done).
struct StagedWrite {
  std::vector<uint8_t> bytes;
  cl_event done = nullptr;
};

}  // namespace cltrain::ocl

struct cltrain_backend {
  cltrain::ocl::DeviceInfo device;
  std::string device_line;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_command_queue_properties queue_properties = 0;  // as created (CLTRAIN_OPENCL_PROFILE)
  std::unique_ptr<cltrain::ocl::ProgramCache> programs;
  cltrain::ocl::OpFilter filter;
  std::string last_error;
  // cltrain_backend_config.cache_dir ("" for none): program binaries and saved plans live there.
  std::string cache_dir;
  std::string device_key;  // device name, version and driver: part of every cache key

  // Set by prepare.
  bool prepared = false;
  // The host's tensors (copies; name and data pointers cleared), then the backend's private
  // tensors (kernel scratch, CLTRAIN_ROLE_LAYER_SCOPE) from index num_host_tensors on.
  std::vector<cltrain_tensor_desc> tensors;
  int32_t num_host_tensors = 0;
  std::vector<std::string> tensor_names;
  std::vector<int64_t> offsets;              // byte offset in the pool, -1 where not planned here
  std::vector<std::vector<int32_t>> step_scratch;  // per global step: its private tensors, in order
  std::vector<cltrain_private_tensor> private_rows;  // plan_private's answer
  std::map<int32_t, cl_mem> sub_buffers;     // whole-tensor views of the pool for CLBlast
  std::vector<cltrain_step_desc> steps;
  std::vector<uint8_t> assigned;
  std::vector<cltrain::ocl::StepRun> runs;   // per global step; empty where not assigned
  cl_mem pool = nullptr;
  uint64_t pool_bytes = 0;
  uint64_t alignment = 64;
  std::vector<cl_kernel> kernels;            // every kernel object the steps use
  std::string plan_source;     // "loaded from PATH", "computed (ALGORITHM), saved to PATH", ...
  int cache_rejected = 0;      // saved plans found corrupt or stale (and rebuilt) by prepare
  // Bound of one step's kernel scratch (im2col panels), for the step being prepared: what the
  // step can take without raising the pool's peak (live_scratch_budget), between scratch_floor
  // and scratch_cap. CLTRAIN_OPENCL_SCRATCH_BYTES fixes all three; else the cap is
  // min(8 MiB, CL_DEVICE_MAX_MEM_ALLOC_SIZE / 8) and the floor min(256 KiB, cap). Set by create.
  uint64_t scratch_budget = 8u << 20;
  uint64_t scratch_cap = 8u << 20, scratch_floor = 2u << 20;
  uint64_t gemm_tile = 64;  // CLBlast's Xgemm tile on this device (gemm_tuning.h); set by create
  // GEMMs run kernels/gemm.cl rather than CLBlast (gemm_native.h: CPU devices, or
  // CLTRAIN_OPENCL_GEMM), with its sizes from the device's local memory; set by create.
  bool native_gemm = false;
  cltrain::ocl::NativeLimits gemm_limits;
  // CLTRAIN_OPENCL_TRACE: run() waits for each step and adds its wall time here (per global
  // step); destroy prints the totals to stderr.
  bool trace = false;
  std::vector<double> trace_ms;
  std::vector<int64_t> trace_runs;

  // What the ABI's stats and profile report (counters.h); current_step is the step run() is
  // enqueueing, -1 outside run().
  // launches: kernels, copies, fills (counters.cc) and CLBlast's kernels (launch.cc, run_gemm);
  // bytes: clEnqueueWrite/ReadBuffer; waits: blocking transfers, clFinish, clWaitForEvents;
  // buffer_allocations: clCreateBuffer/SubBuffer; program_builds: clBuildProgram.
  cltrain_run_stats counters{};
  int32_t current_step = -1;
  bool profiling = false;                         // set_profiling: time every command's events
  std::vector<cltrain::ocl::TimedCommand> timed;  // enqueued, device time not yet collected
  std::vector<cltrain::ocl::StepTime> step_times; // index step + 1 (0: the host's transfers)
  std::vector<cltrain_kernel_profile> profile_rows;
  std::map<int32_t, cltrain::ocl::StagedWrite> staged;  // per tensor the host writes

  cltrain_backend() = default;
  cltrain_backend(const cltrain_backend&) = delete;
  cltrain_backend& operator=(const cltrain_backend&) = delete;
  ~cltrain_backend();

  std::string tensor_label(int32_t id) const;  // "tensor 3 'dense/W'"
};

namespace cltrain::ocl {
using Backend = ::cltrain_backend;
}
