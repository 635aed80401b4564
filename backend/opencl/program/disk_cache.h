// The OpenCL backend's on-disk cache entries (program binaries and memory plans, in the
// directory cltrain_backend_config.cache_dir names). Each entry is one file:
//   magic (8 bytes, one per kind) | u32 container version | u32 zero | key (16 bytes) |
//   u64 payload bytes | payload | u64 FNV-1a checksum of everything before it
// written with save_file_atomic (temporary file, fsync, rename), so a reader sees a whole entry
// or none. A file that is truncated, has a flipped byte, another magic, version or key is never
// used: read_entry says why and the caller rebuilds the entry and writes it again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace cltrain::ocl {

// A 128-bit key: two FNV-1a 64 streams over the same bytes from different offset bases.
class KeyHash {
 public:
  KeyHash& bytes(const void* data, size_t n);
  KeyHash& str(const std::string& s);  // length first, so that "ab"+"c" != "a"+"bc"
  template <class T>
  KeyHash& value(const T& v) {
    return bytes(&v, sizeof v);
  }
  std::string hex() const;  // 32 hex digits
  uint64_t first() const { return a_; }
  uint64_t second() const { return b_; }

 private:
  uint64_t a_ = 0xcbf29ce484222325ull, b_ = 0x84222325cbf29ce4ull;
};

// Payloads: values appended as their bytes, and read back in the same order.
template <class T>
void append_value(std::vector<uint8_t>& out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

struct ByteReader {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  bool short_read = false;  // a get ran past the end (it returned zero)

  template <class T>
  T get() {
    T v{};
    if (size - at < sizeof v) {
      short_read = true;
      at = size;
      return v;
    }
    std::memcpy(&v, data + at, sizeof v);
    at += sizeof v;
    return v;
  }
};

enum class EntryRead {
  kLoaded,   // payload holds the entry's payload
  kMissing,  // no such file (or it cannot be opened)
  kInvalid,  // the file exists but is not a valid entry for this key; why says what is wrong
};

// magic: exactly 8 characters, e.g. "CLTPLAN1".
EntryRead read_entry(const std::string& path, const char* magic, const KeyHash& key, std::vector<uint8_t>* payload,
                     std::string* why);
// Throws std::runtime_error (one line) when the file cannot be written.
void write_entry(const std::string& path, const char* magic, const KeyHash& key, const std::vector<uint8_t>& payload);

// Keeping the directory bounded: reading an entry marks it used (its modification time becomes
// now), and trim_cache deletes the least recently used cltrain-ocl-*.bin entries of dir until
// those total at most max_bytes, never one used at or after keep_since (this prepare's). Other
// files are never touched; errors (an entry deleted meanwhile, a read-only directory) are
// ignored. Returns how many entries it deleted.
using CacheClock = std::filesystem::file_time_type::clock;
int trim_cache(const std::string& dir, uint64_t max_bytes, std::filesystem::file_time_type keep_since);
// The bound: CLTRAIN_OPENCL_CACHE_MAX_BYTES (0: none), else 512 MiB. *error: a value that is not a
// number (the bound is then the default).
uint64_t cache_max_bytes(std::string* error);

// Identifies this build of the plugin (a hash of the plugin's own file, which embeds the kernel
// sources and the planner): a cache entry made by another build is never looked up.
const std::string& plugin_build_id();

}  // namespace cltrain::ocl
