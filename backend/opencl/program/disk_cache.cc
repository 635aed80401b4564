#include "program/disk_cache.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "atomic_file.h"
#include "program/kernel_sources.h"

namespace cltrain::ocl {
namespace {

constexpr uint64_t kFnvPrime = 0x100000001b3ull;
constexpr uint32_t kContainerVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 16 + 8;  // magic, version, zero, key, payload size

uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

}  // namespace

KeyHash& KeyHash::bytes(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    a_ = (a_ ^ p[i]) * kFnvPrime;
    b_ = (b_ ^ p[i]) * kFnvPrime;
  }
  return *this;
}

KeyHash& KeyHash::str(const std::string& s) {
  value(static_cast<uint64_t>(s.size()));
  return bytes(s.data(), s.size());
}

std::string KeyHash::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a_),
                static_cast<unsigned long long>(b_));
  return buf;
}

EntryRead read_entry(const std::string& path, const char* magic, const KeyHash& key, std::vector<uint8_t>* payload,
                     std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return EntryRead::kMissing;
  const std::vector<uint8_t> f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto invalid = [&](const char* what) {
    *why = what;
    return EntryRead::kInvalid;
  };
  if (in.bad()) return invalid("cannot be read");
  if (f.size() < kHeaderBytes + 8) return invalid("is truncated");
  ByteReader r{f.data(), f.size()};
  r.at = 8;
  if (std::memcmp(f.data(), magic, 8) != 0) return invalid("is not this kind of cache entry");
  if (r.get<uint32_t>() != kContainerVersion || r.get<uint32_t>() != 0) return invalid("has another format version");
  const uint64_t key_first = r.get<uint64_t>(), key_second = r.get<uint64_t>();
  if (r.get<uint64_t>() != f.size() - kHeaderBytes - 8) return invalid("is truncated or has extra bytes");
  r.at = f.size() - 8;
  if (r.get<uint64_t>() != fnv1a(f.data(), f.size() - 8)) return invalid("fails its checksum");
  if (key_first != key.first() || key_second != key.second()) return invalid("was made for another key");
  payload->assign(f.begin() + kHeaderBytes, f.end() - 8);
  std::error_code ec;
  std::filesystem::last_write_time(path, CacheClock::now(), ec);  // used now (trim_cache keeps it longer)
  return EntryRead::kLoaded;
}

int trim_cache(const std::string& dir, uint64_t max_bytes, std::filesystem::file_time_type keep_since) {
  namespace fs = std::filesystem;
  struct Entry {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("cltrain-ocl-", 0) != 0 || name.size() < 4 || name.compare(name.size() - 4, 4, ".bin") != 0)
      continue;
    std::error_code e;
    const uint64_t bytes = it->file_size(e);
    const fs::file_time_type used = it->last_write_time(e);
    if (e || !it->is_regular_file(e)) continue;
    entries.push_back({it->path(), bytes, used});
    total += bytes;
  }
  if (total <= max_bytes) return 0;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  int deleted = 0;
  for (const Entry& e : entries) {
    if (total <= max_bytes || e.used >= keep_since) break;
    std::error_code rm;
    if (fs::remove(e.path, rm)) {
      total -= e.bytes;
      ++deleted;
    }
  }
  return deleted;
}

uint64_t cache_max_bytes(std::string* error) {
  constexpr uint64_t kDefault = 512ull << 20;
  const char* env = std::getenv("CLTRAIN_OPENCL_CACHE_MAX_BYTES");
  if (!env || !*env) return kDefault;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (end == env || *end != '\0') {
    if (error) *error = std::string("CLTRAIN_OPENCL_CACHE_MAX_BYTES='") + env + "' is not a number of bytes";
    return kDefault;
  }
  return v == 0 ? UINT64_MAX : v;
}

void write_entry(const std::string& path, const char* magic, const KeyHash& key, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f(magic, magic + 8);
  f.reserve(kHeaderBytes + payload.size() + 8);
  append_value(f, kContainerVersion);
  append_value(f, uint32_t{0});
  append_value(f, key.first());
  append_value(f, key.second());
  append_value(f, static_cast<uint64_t>(payload.size()));
  f.insert(f.end(), payload.begin(), payload.end());
  append_value(f, fnv1a(f.data(), f.size()));
  save_file_atomic(path, f);
}

const std::string& plugin_build_id() {
  static const std::string id = [] {
    KeyHash h;
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&plugin_build_id), &info) && info.dli_fname) {
      std::ifstream in(info.dli_fname, std::ios::binary);
      const std::vector<char> f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (in && !f.empty()) return "file:" + h.bytes(f.data(), f.size()).hex();
    }
    // Without the file: at least the kernel sources (a planner change then goes unnoticed, but
    // every loaded plan is still checked against the tensors it is used for).
    for (size_t i = 0; i < kKernelCount; ++i) h.str(kKernelSources[i]);
    return "sources:" + h.hex();
  }();
  return id;
}

}  // namespace cltrain::ocl
