#include "backend.h"
#include "cltrain/cltrain_cpu.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cltrain {

cltrain_backend_iface sized_iface(const cltrain_backend_iface& plugin) {
  cltrain_backend_iface own;
  cltrain_read_sized(&own, sizeof own, &plugin, plugin.struct_size);
  return own;
}

Backend::Backend(const cltrain_backend_iface& iface, cltrain_backend* obj, void* dl_handle)
    : iface_(iface), obj_(obj), dl_handle_(dl_handle), name_(iface.name ? iface.name : "?") {}

Backend::~Backend() {
  if (obj_ && iface_.destroy) iface_.destroy(obj_);
  if (dl_handle_) dlclose(dl_handle_);
}

void Backend::fail(const char* what, cltrain_status status) const {
  const char* msg = iface_.last_error ? iface_.last_error(obj_) : nullptr;
  std::ostringstream m;
  m << name_ << ": " << ((msg && *msg) ? msg : what);
  if (!(msg && *msg)) m << " failed (status " << static_cast<int>(status) << ")";
  throw BackendError(m.str());
}

std::string Backend::device_name() const {
  const char* d = iface_.device_name ? iface_.device_name(obj_) : nullptr;
  return d ? d : name_;
}

bool Backend::supports(const cltrain_graph_desc& graph, int32_t step, bool training) const {
  return iface_.supports(obj_, &graph, step, training ? 1 : 0) != 0;
}

bool Backend::supports(const std::vector<cltrain_tensor_desc>& tensors, const std::vector<cltrain_step_desc>& steps,
                       int32_t step, bool training) const {
  const cltrain_graph_desc g = graph_desc(tensors, steps, nullptr);
  return supports(g, step, training);
}

cltrain_graph_desc graph_desc(const std::vector<cltrain_tensor_desc>& tensors,
                              const std::vector<cltrain_step_desc>& steps, const uint8_t* assigned) {
  return cltrain_graph(tensors.data(), static_cast<int32_t>(tensors.size()), steps.data(),
                       static_cast<int32_t>(steps.size()), assigned);
}

namespace {

// Rows a backend returned, row_size bytes apart, as this build's structs.
template <class Row>
std::vector<Row> sized_rows(const void* rows, uint32_t row_size, int32_t n) {
  std::vector<Row> out(static_cast<size_t>(std::max<int32_t>(n, 0)));
  for (size_t i = 0; i < out.size(); ++i)
    cltrain_read_sized(&out[i], sizeof(Row), cltrain_element(rows, row_size, static_cast<int64_t>(i)), row_size);
  return out;
}

}  // namespace

cltrain_memory_report Backend::prepare(const cltrain_graph_desc& graph) {
  cltrain_memory_report report{};
  report.struct_size = sizeof(report);
  const cltrain_status s = iface_.prepare(obj_, &graph, &report);
  if (s != CLTRAIN_OK) fail("prepare", s);
  return report;
}

std::optional<cltrain_memory_report> Backend::plan(const cltrain_graph_desc& graph) {
  if (!iface_.plan) return std::nullopt;
  cltrain_memory_report report{};
  report.struct_size = sizeof(report);
  const cltrain_status s = iface_.plan(obj_, &graph, &report);
  if (s != CLTRAIN_OK) fail("plan", s);
  return report;
}

void Backend::run(const std::vector<int32_t>& steps, const cltrain_run_args& args) {
  if (steps.empty()) return;
  const cltrain_status s = iface_.run(obj_, steps.data(), static_cast<int32_t>(steps.size()), &args);
  if (s != CLTRAIN_OK) fail("run", s);
}

void Backend::write(int32_t tensor, const void* src, uint64_t bytes) {
  const cltrain_status s = iface_.write_tensor(obj_, tensor, src, bytes);
  if (s != CLTRAIN_OK) fail("write_tensor", s);
}

void Backend::read(int32_t tensor, void* dst, uint64_t bytes) {
  const cltrain_status s = iface_.read_tensor(obj_, tensor, dst, bytes);
  if (s != CLTRAIN_OK) fail("read_tensor", s);
}

void Backend::sync() {
  const cltrain_status s = iface_.sync(obj_);
  if (s != CLTRAIN_OK) fail("sync", s);
}

std::optional<cltrain_run_stats> Backend::stats() {
  if (!iface_.stats) return std::nullopt;
  cltrain_run_stats out{};
  out.struct_size = sizeof(out);
  const cltrain_status s = iface_.stats(obj_, &out);
  if (s != CLTRAIN_OK) fail("stats", s);
  return out;
}

void Backend::reset_stats() {
  if (!iface_.reset_stats) return;
  const cltrain_status s = iface_.reset_stats(obj_);
  if (s != CLTRAIN_OK) fail("reset_stats", s);
}

bool Backend::set_profiling(bool on) {
  if (!iface_.set_profiling || !iface_.profile) return false;
  const cltrain_status s = iface_.set_profiling(obj_, on ? 1 : 0);
  if (s == CLTRAIN_UNAVAILABLE) return false;
  if (s != CLTRAIN_OK) fail("set_profiling", s);
  return true;
}

std::vector<cltrain_private_tensor> Backend::plan_private() {
  if (!iface_.plan_private) return {};
  const void* rows = nullptr;
  uint32_t row_size = 0;
  int32_t n = 0;
  const cltrain_status s = iface_.plan_private(obj_, &rows, &row_size, &n);
  if (s != CLTRAIN_OK) fail("plan_private", s);
  if (n > 0 && (!rows || row_size == 0)) fail("plan_private (no rows)", CLTRAIN_ERROR);
  return sized_rows<cltrain_private_tensor>(rows, row_size, n);
}

std::optional<std::vector<cltrain_kernel_profile>> Backend::profile() {
  if (!iface_.profile) return std::nullopt;
  const void* rows = nullptr;
  uint32_t row_size = 0;
  int32_t n = 0;
  const cltrain_status s = iface_.profile(obj_, &rows, &row_size, &n);
  if (s != CLTRAIN_OK) fail("profile", s);
  if (n > 0 && (!rows || row_size == 0)) fail("profile (no rows)", CLTRAIN_ERROR);
  return sized_rows<cltrain_kernel_profile>(rows, row_size, n);
}

std::vector<int64_t> Backend::plan_offsets(int32_t num_tensors) {
  if (!iface_.plan_offsets) return {};
  std::vector<int64_t> offsets(static_cast<size_t>(num_tensors), -1);
  const cltrain_status s = iface_.plan_offsets(obj_, offsets.data(), num_tensors);
  if (s != CLTRAIN_OK) fail("plan_offsets", s);
  return offsets;
}

cltrain_backend_config default_backend_config() {
  cltrain_backend_config c{};
  c.struct_size = sizeof(c);
  c.device_index = -1;
  c.cache_dir = nullptr;
  return c;
}

// The library directory relative to an installed bin/ (set by host/runtime/CMakeLists.txt).
#ifndef CLTRAIN_BIN_TO_LIB
#define CLTRAIN_BIN_TO_LIB "../lib"
#endif

namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string executable_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  return dir_of(std::string(buf, static_cast<size_t>(n)));
}

// The directory of the file this code is in: libcltrain.so's, or the executable's when the
// runtime is linked into it.
std::string own_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&dir_of), &info) == 0 || !info.dli_fname) return executable_dir();
  char real[4096];
  if (!realpath(info.dli_fname, real)) return dir_of(info.dli_fname);
  return dir_of(real);
}

bool file_exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

std::unique_ptr<Backend> create_from_iface(const cltrain_backend_iface& iface, void* handle,
                                           const cltrain_backend_config& config, std::string* why) {
  const std::string name = iface.name ? iface.name : "?";
  char err[512] = {0};
  if (iface.probe) {
    const cltrain_status s = iface.probe(err, sizeof(err));
    if (s != CLTRAIN_OK) {
      *why = name + " backend not available: " + (err[0] ? err : "probe failed");
      if (handle) dlclose(handle);
      return nullptr;
    }
  }
  cltrain_backend* obj = nullptr;
  err[0] = 0;
  const cltrain_status s = iface.create(&config, &obj, err, sizeof(err));
  if (s != CLTRAIN_OK || !obj) {
    *why = name + " backend not available: " + (err[0] ? err : "create failed");
    if (handle) dlclose(handle);
    return nullptr;
  }
  return std::make_unique<Backend>(iface, obj, handle);
}

}  // namespace

std::string unusable_iface(const cltrain_backend_iface& iface) {
  if (iface.abi_version < CLTRAIN_BACKEND_ABI_OLDEST || iface.abi_version > CLTRAIN_BACKEND_ABI_VERSION) {
    std::ostringstream m;
    m << "has ABI version " << iface.abi_version << "; this cltrain serves version"
      << (CLTRAIN_BACKEND_ABI_OLDEST == CLTRAIN_BACKEND_ABI_VERSION ? " " : "s ") << CLTRAIN_BACKEND_ABI_OLDEST;
    if (CLTRAIN_BACKEND_ABI_OLDEST != CLTRAIN_BACKEND_ABI_VERSION) m << " to " << CLTRAIN_BACKEND_ABI_VERSION;
    return m.str();
  }
  // The required functions run from create to last_error.
  const size_t required = offsetof(cltrain_backend_iface, last_error) + sizeof iface.last_error;
  if (iface.struct_size < required)
    return "has a function table of " + std::to_string(iface.struct_size) + " bytes, shorter than the " +
           std::to_string(required) + " that the required functions of ABI version " +
           std::to_string(iface.abi_version) + " take";
  const cltrain_backend_iface own = sized_iface(iface);
  if (!own.create || !own.destroy || !own.supports || !own.prepare || !own.run || !own.write_tensor ||
      !own.read_tensor || !own.sync || !own.last_error)
    return "lacks a required function";
  return {};
}

std::vector<std::string> plugin_search_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("CLTRAIN_BACKEND_PATH")) {
    std::string s(env);
    size_t start = 0;
    while (start <= s.size()) {
      const size_t colon = s.find(':', start);
      const std::string d = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty()) dirs.push_back(d);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  // Next to libcltrain (or the executable it is linked into), next to the executable, and the
  // lib directory beside an installed bin/.
  for (const std::string& d : {own_dir(), executable_dir(), executable_dir() + "/" CLTRAIN_BIN_TO_LIB})
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  return dirs;
}

namespace {

#if defined(__x86_64__)
constexpr uint16_t kOwnMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kOwnMachine = EM_AARCH64;
#else
constexpr uint16_t kOwnMachine = EM_NONE;  // not checked
#endif

// Why a plugin file is not a whole shared library for this machine ("" if it is): dlopen maps
// its segments as the headers say, and touching a page past the end of a truncated file is SIGBUS,
// which no error handling can catch. So the headers and every loaded segment must lie in the file.
std::string not_a_whole_library(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot be opened";
  f.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(f.tellg());
  f.seekg(0);
  Elf64_Ehdr eh{};
  if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return "is not an ELF file";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN) return "is not a 64-bit shared library";
  if (kOwnMachine != EM_NONE && eh.e_machine != kOwnMachine)
    return "is built for another machine (ELF machine " + std::to_string(eh.e_machine) + ", this one is " +
           std::to_string(kOwnMachine) + ")";
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size ||
      eh.e_phnum > (size - eh.e_phoff) / sizeof(Elf64_Phdr))
    return "is truncated or damaged (its program headers lie outside its " + std::to_string(size) + " bytes)";
  f.seekg(static_cast<std::streamoff>(eh.e_phoff));
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    if (!f.read(reinterpret_cast<char*>(&ph), sizeof ph)) return "cannot be read";
    if (ph.p_type == PT_LOAD && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset))
      return "is truncated (a segment ends at byte " + std::to_string(ph.p_offset + ph.p_filesz) + ", the file has " +
             std::to_string(size) + ")";
  }
  return {};
}

// dlopen after the check above; nullptr with *why on failure.
void* load_plugin(const std::string& path, std::string* why) {
  if (const std::string bad = not_a_whole_library(path); !bad.empty()) {
    *why = "cannot load backend plugin " + path + ": it " + bad;
    return nullptr;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    *why = "cannot load backend plugin " + path + ": " + (e ? e : "dlopen failed");
  }
  return handle;
}

}  // namespace

std::unique_ptr<Backend> open_plugin_file(const std::string& path, const cltrain_backend_config& config,
                                          std::string* why) {
  void* handle = load_plugin(path, why);
  if (!handle) return nullptr;
  auto entry = reinterpret_cast<cltrain_backend_entry_fn>(dlsym(handle, CLTRAIN_BACKEND_ENTRY_SYMBOL));
  if (!entry) {
    *why = "backend plugin " + path + " has no " CLTRAIN_BACKEND_ENTRY_SYMBOL " symbol";
    dlclose(handle);
    return nullptr;
  }
  const cltrain_backend_iface* iface = entry();
  if (!iface) {
    *why = "backend plugin " + path + " returned no interface";
    dlclose(handle);
    return nullptr;
  }
  const std::string problem = unusable_iface(*iface);
  if (!problem.empty()) {
    *why = "backend plugin " + path + " " + problem;
    dlclose(handle);
    return nullptr;
  }
  return create_from_iface(sized_iface(*iface), handle, config, why);
}

std::unique_ptr<Backend> open_backend(const std::string& name, const cltrain_backend_config& config, std::string* why) {
  if (name == "cpu") return create_from_iface(sized_iface(*cltrain_cpu_backend_iface()), nullptr, config, why);
  const std::string file = "libcltrain_" + name + ".so";
  for (const auto& dir : plugin_search_dirs()) {
    const std::string path = dir + "/" + file;
    if (file_exists(path)) return open_plugin_file(path, config, why);
  }
  *why = "backend plugin " + file + " not found (looked in CLTRAIN_BACKEND_PATH and " + executable_dir() + ")";
  return nullptr;
}

std::string list_backend_devices(const std::string& name, std::string* why) {
  cltrain_backend_iface iface{};
  void* handle = nullptr;
  if (name == "cpu") {
    iface = sized_iface(*cltrain_cpu_backend_iface());
  } else {
    const std::string file = "libcltrain_" + name + ".so";
    bool found = false;
    for (const auto& dir : plugin_search_dirs()) {
      const std::string path = dir + "/" + file;
      if (!file_exists(path)) continue;
      handle = load_plugin(path, why);
      if (!handle) return {};
      auto entry = reinterpret_cast<cltrain_backend_entry_fn>(dlsym(handle, CLTRAIN_BACKEND_ENTRY_SYMBOL));
      const cltrain_backend_iface* plugin = entry ? entry() : nullptr;
      const std::string problem = plugin ? unusable_iface(*plugin) : "has no usable " CLTRAIN_BACKEND_ENTRY_SYMBOL;
      if (!problem.empty()) {
        *why = "backend plugin " + path + " " + problem;
        dlclose(handle);
        return {};
      }
      iface = sized_iface(*plugin);
      found = true;
      break;
    }
    if (!found) {
      *why = "backend plugin " + file + " not found";
      return {};
    }
  }
  std::string out;
  if (!iface.list_devices) {
    out = std::string(iface.name) + ": (no device list)\n";
  } else {
    std::vector<char> buf(1 << 16, 0);
    if (iface.list_devices(buf.data(), buf.size()) != CLTRAIN_OK) {
      *why = std::string(iface.name) + ": " + buf.data();
      if (handle) dlclose(handle);
      return {};
    }
    out = buf.data();
  }
  if (handle) dlclose(handle);
  return out;
}

}  // namespace cltrain
