// The host's view of a backend: a plugin (or the built-in CPU backend) behind the C ABI,
// wrapped so that failures become exceptions inside the host.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"

namespace cltrain {

// A backend failed; what() is one line: "opencl: <the backend's message>".
struct BackendError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The host's copy of a plugin's function table: the members the plugin's struct_size covers, the
// others NULL (cltrain_backend.h's growth rules).
cltrain_backend_iface sized_iface(const cltrain_backend_iface& plugin);

class Backend {
 public:
  // iface: the host's copy (sized_iface) of the plugin's table.
  Backend(const cltrain_backend_iface& iface, cltrain_backend* obj, void* dl_handle);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  const std::string& name() const { return name_; }
  std::string device_name() const;
  const cltrain_backend_iface* iface() const { return &iface_; }
  cltrain_backend* object() const { return obj_; }

  // Whether the backend can run step `step` of the graph (for training: its backward too).
  bool supports(const cltrain_graph_desc& graph, int32_t step, bool training) const;
  bool supports(const std::vector<cltrain_tensor_desc>& tensors, const std::vector<cltrain_step_desc>& steps,
                int32_t step, bool training) const;
  cltrain_memory_report prepare(const cltrain_graph_desc& graph);
  // The plan prepare would make (with each step's least kernel scratch), nothing allocated or
  // built; nullopt if the backend cannot plan without preparing.
  std::optional<cltrain_memory_report> plan(const cltrain_graph_desc& graph);
  void run(const std::vector<int32_t>& steps, const cltrain_run_args& args);
  void write(int32_t tensor, const void* src, uint64_t bytes);
  void read(int32_t tensor, void* dst, uint64_t bytes);
  void sync();
  // Byte offset of each tensor in this backend's pool, -1 where not planned; empty if the
  // backend does not say.
  std::vector<int64_t> plan_offsets(int32_t num_tensors);
  // The backend's private tensors (kernel scratch) in its plan; empty if it has none or does not say.
  std::vector<cltrain_private_tensor> plan_private();

  // What the backend did since create or the last reset_stats; nullopt if it does not say.
  std::optional<cltrain_run_stats> stats();
  void reset_stats();  // nothing if the backend has no stats
  // Turns timing of each step's device work on or off; false if the backend cannot time.
  bool set_profiling(bool on);
  // Device time per step since the last reset_stats; nullopt if the backend cannot time.
  std::optional<std::vector<cltrain_kernel_profile>> profile();

 private:
  [[noreturn]] void fail(const char* what, cltrain_status status) const;

  cltrain_backend_iface iface_;
  cltrain_backend* obj_;
  void* dl_handle_;
  std::string name_;
};

// Where plugins are looked for: each directory of CLTRAIN_BACKEND_PATH (':'-separated), then the
// directory of libcltrain (or of the executable the runtime is linked into), the executable's
// directory, and ../lib from it (an installed bin/cltrain).
std::vector<std::string> plugin_search_dirs();

// Opens a backend by name ("cpu" or a plugin libcltrain_<name>.so). Returns nullptr and sets
// *why to one line when the backend cannot be used here (missing plugin, failed load, an ABI
// version outside [CLTRAIN_BACKEND_ABI_OLDEST, CLTRAIN_BACKEND_ABI_VERSION], a function table
// without the required functions, no device, failed create).
std::unique_ptr<Backend> open_backend(const std::string& name, const cltrain_backend_config& config, std::string* why);

// Why the host cannot use a plugin's function table (an ABI version outside the range it serves, a
// table too short for the required functions, one of them NULL), or "" when it can.
std::string unusable_iface(const cltrain_backend_iface& iface);

// Opens a plugin from an explicit file (used by open_backend and by tests).
std::unique_ptr<Backend> open_plugin_file(const std::string& path, const cltrain_backend_config& config,
                                          std::string* why);

// The device list of a backend (list_devices), or why it has none.
std::string list_backend_devices(const std::string& name, std::string* why);

cltrain_backend_config default_backend_config();

// A graph descriptor over the host's tables (element sizes this build's).
cltrain_graph_desc graph_desc(const std::vector<cltrain_tensor_desc>& tensors,
                              const std::vector<cltrain_step_desc>& steps, const uint8_t* assigned);

}  // namespace cltrain
