#include "device/driver_isolation.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define CLTRAIN_NO_DEEPBIND 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define CLTRAIN_NO_DEEPBIND 1
#endif
#endif

namespace cltrain::ocl {
namespace {

// llvm::cl::Option::addArgument(): what every LLVM's option registration calls first.
constexpr const char* kLlvmOptionSymbol = "_ZN4llvm2cl6Option11addArgumentEv";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!line.empty() && blank(line.back())) line.pop_back();
  line.erase(line.begin(), std::find_if(line.begin(), line.end(), [&](char c) { return !blank(c); }));
  return line;
}

// The vendor libraries the ICD loader will open, as ocl-icd and the Khronos loader find them:
// OCL_ICD_FILENAMES (libraries, ':'-separated), else the .icd files of OCL_ICD_VENDORS (a directory
// or one file), else of /etc/OpenCL/vendors.
std::vector<std::string> vendor_libraries() {
  std::vector<std::string> libs;
  if (const char* names = std::getenv("OCL_ICD_FILENAMES"); names && *names) {
    std::string s(names);
    for (size_t start = 0; start <= s.size();) {
      const size_t colon = s.find(':', start);
      const std::string lib = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!lib.empty()) libs.push_back(lib);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    return libs;
  }
  std::string where = "/etc/OpenCL/vendors";
  if (const char* v = std::getenv("OCL_ICD_VENDORS"); v && *v) where = v;
  if (ends_with(where, ".icd")) {
    libs.push_back(first_line(where));
    return libs;
  }
  DIR* dir = opendir(where.c_str());
  if (!dir) return libs;
  std::vector<std::string> files;
  while (const dirent* e = readdir(dir))
    if (ends_with(e->d_name, ".icd")) files.push_back(where + "/" + e->d_name);
  closedir(dir);
  std::sort(files.begin(), files.end());
  for (const std::string& f : files)
    if (std::string lib = first_line(f); !lib.empty()) libs.push_back(lib);
  return libs;
}

std::string isolate_once() {
#ifdef CLTRAIN_NO_DEEPBIND
  return "";
#else
  if (!dlsym(RTLD_DEFAULT, kLlvmOptionSymbol)) return "";  // no LLVM in the global scope
  std::string done;
  for (const std::string& lib : vendor_libraries()) {
    if (dlopen(lib.c_str(), RTLD_NOW | RTLD_NOLOAD)) continue;  // loaded already, bound as it was
    // Kept open for the process's life: the ICD loader's own dlopen then finds it loaded.
    if (dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)) done += (done.empty() ? "" : " ") + lib;
  }
  return done.empty() ? "" : "opened with their own LLVM first (RTLD_DEEPBIND): " + done;
#endif
}

}  // namespace

std::string isolate_drivers_from_foreign_llvm() {
  static std::once_flag once;
  static std::string what;
  std::call_once(once, [] { what = isolate_once(); });
  return what;
}

}  // namespace cltrain::ocl
