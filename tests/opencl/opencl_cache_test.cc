// The OpenCL plugin's cache directory (backend/opencl/plan_cache.h, disk_cache.h): a second
// prepare of the same graph takes the saved plan and the saved program binaries; a saved entry
// that is truncated, has a flipped byte, was made for another key or holds overlapping offsets
// is never used, and is rebuilt and written again; a cache that cannot be written costs nothing
// but the saving.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "plugin_fixture.h"

namespace {

using namespace cltrain_test;
using Bytes = std::vector<uint8_t>;

// The entry layout of disk_cache.h: a 40-byte header (magic, version, zero, key, payload size),
// the payload, an FNV-1a checksum of everything before it.
constexpr size_t kHeader = 40;
constexpr size_t kKeyAt = 16;

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void reseal(Bytes& f) {  // a valid checksum over changed contents
  const uint64_t h = fnv1a(f.data(), f.size() - 8);
  std::memcpy(f.data() + f.size() - 8, &h, 8);
}

bool sealed(const Bytes& f) {
  if (f.size() < kHeader + 8) return false;
  uint64_t h;
  std::memcpy(&h, f.data() + f.size() - 8, 8);
  return h == fnv1a(f.data(), f.size() - 8);
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::vector<std::string> files_with(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The offsets a plan entry stores (memory/plan_cache.cc's payload: alignment, pool, lower bound, the
// role count and peaks, the algorithm's name, the tensor count, then id, bytes, offset each).
size_t first_tensor_at(const Bytes& f) {
  size_t at = kHeader + 8 * 3;
  uint32_t roles, name_len;
  std::memcpy(&roles, f.data() + at, 4);
  at += 4 + 8 * roles;
  std::memcpy(&name_len, f.data() + at, 4);
  return at + 4 + name_len + 8;
}

void set_offset(Bytes& f, size_t tensor, uint64_t offset) {
  std::memcpy(f.data() + first_tensor_at(f) + tensor * 20 + 12, &offset, 8);
}

class OpenCLCache : public OpenCLPlugin {
 protected:
  void SetUp() override {
    OpenCLPlugin::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    char dir_template[] = "/tmp/cltrain_ocl_cache_XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
  }
  void TearDown() override {
    OpenCLPlugin::TearDown();
    backend_ = nullptr;
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  // x -> ReLU -> y -> ReLU -> z: x and z may share bytes, y overlaps both.
  static TinyGraph relu_chain(int n) {
    TinyGraph g;
    const int x = g.tensor("x", {n}, CLTRAIN_ROLE_NON_CONST);
    const int y = g.tensor("y", {n}, CLTRAIN_ROLE_NON_CONST);
    const int z = g.tensor("z", {n}, CLTRAIN_ROLE_NON_CONST);
    g.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_FORWARD, {x}, {y});
    g.step(CLTRAIN_OP_RELU, CLTRAIN_PHASE_FORWARD, {y}, {z});
    g.set_lifetimes({x}, {z});
    return g;
  }

  // A fresh backend on `cache`: prepares the chain, runs it, checks z, returns the offsets.
  std::vector<int64_t> prepare_and_run(const char* cache, int n = 16) {
    if (backend_) api_->destroy(backend_);
    backend_ = nullptr;
    EXPECT_EQ(create(-1, nullptr, cache), CLTRAIN_OK);
    if (!backend_) return {};
    const TinyGraph g = relu_chain(n);
    const cltrain_graph_desc desc = g.desc();
    EXPECT_EQ(api_->prepare(backend_, &desc, nullptr), CLTRAIN_OK) << api_->last_error(backend_);
    std::vector<float> in(n), out(n, -7.0f);
    for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 2 ? i : -i);
    const uint64_t bytes = static_cast<uint64_t>(n) * 4;
    EXPECT_EQ(api_->write_tensor(backend_, 0, in.data(), bytes), CLTRAIN_OK) << api_->last_error(backend_);
    const int32_t steps[] = {0, 1};
    EXPECT_EQ(api_->run(backend_, steps, 2, nullptr), CLTRAIN_OK) << api_->last_error(backend_);
    EXPECT_EQ(api_->read_tensor(backend_, 2, out.data(), bytes), CLTRAIN_OK) << api_->last_error(backend_);
    for (int i = 0; i < n; ++i) EXPECT_EQ(out[i], in[i] > 0 ? in[i] : 0.0f) << "z[" << i << "]";
    std::vector<int64_t> offsets(3, -2);
    EXPECT_EQ(api_->plan_offsets(backend_, offsets.data(), 3), CLTRAIN_OK);
    return offsets;
  }

  // The trace line prepare prints with CLTRAIN_OPENCL_TRACE (plan and program sources).
  std::string traced_prepare(std::vector<int64_t>* offsets) {
    setenv("CLTRAIN_OPENCL_TRACE", "1", 1);
    ::testing::internal::CaptureStderr();
    *offsets = prepare_and_run(dir_.c_str());
    api_->destroy(backend_);
    backend_ = nullptr;
    const std::string err = ::testing::internal::GetCapturedStderr();
    unsetenv("CLTRAIN_OPENCL_TRACE");
    return err;
  }

  std::string plan_file() {
    const auto plans = files_with(dir_, "cltrain-ocl-plan-");
    EXPECT_EQ(plans.size(), 1u);
    return plans.empty() ? std::string() : plans[0];
  }

  std::string dir_;
};

TEST_F(OpenCLCache, SecondPrepareLoadsThePlanAndTheBinaries) {
  std::vector<int64_t> first, second;
  const std::string err1 = traced_prepare(&first);
  EXPECT_NE(err1.find("plan computed"), std::string::npos) << err1;
  EXPECT_NE(err1.find(", saved to " + dir_), std::string::npos) << err1;
  EXPECT_NE(err1.find("0 loaded from the cache"), std::string::npos) << err1;
  EXPECT_FALSE(files_with(dir_, "cltrain-ocl-program-").empty());
  EXPECT_NE(first[0], first[1]);
  EXPECT_NE(first[1], first[2]);

  const std::string err2 = traced_prepare(&second);
  EXPECT_NE(err2.find("plan loaded from " + plan_file()), std::string::npos) << err2;
  EXPECT_NE(err2.find("programs: 0 built"), std::string::npos) << err2;
  EXPECT_EQ(second, first);
}

// A valid entry is used as it is: offsets written into it (and resealed) are the ones prepare
// takes, as long as they pass the plan check.
TEST_F(OpenCLCache, ValidSavedPlanIsTakenAsItIs) {
  const std::vector<int64_t> computed = prepare_and_run(dir_.c_str());
  Bytes f = read_bytes(plan_file());
  // x and z trade places with y: still no two live tensors share a byte.
  set_offset(f, 0, static_cast<uint64_t>(computed[1]));
  set_offset(f, 1, static_cast<uint64_t>(computed[0]));
  set_offset(f, 2, static_cast<uint64_t>(computed[1]));
  reseal(f);
  write_bytes(plan_file(), f);
  const std::vector<int64_t> loaded = prepare_and_run(dir_.c_str());
  EXPECT_EQ(loaded, (std::vector<int64_t>{computed[1], computed[0], computed[1]}));
}

TEST_F(OpenCLCache, neg_CorruptOrStalePlanIsRebuilt) {
  const std::vector<int64_t> computed = prepare_and_run(dir_.c_str());
  const std::string path = plan_file();
  const Bytes good = read_bytes(path);
  ASSERT_TRUE(sealed(good));

  // The plan of another graph (another size of x, y, z) under this graph's name.
  char other_template[] = "/tmp/cltrain_ocl_cache_XXXXXX";
  ASSERT_NE(mkdtemp(other_template), nullptr);
  const std::string other_dir = other_template;
  prepare_and_run(other_dir.c_str(), 40);
  const auto other_plans = files_with(other_dir, "cltrain-ocl-plan-");
  ASSERT_EQ(other_plans.size(), 1u);
  const Bytes other = read_bytes(other_plans[0]);
  std::system(("rm -rf " + other_dir).c_str());

  std::vector<std::pair<std::string, Bytes>> bad;
  bad.emplace_back("truncated", Bytes(good.begin(), good.begin() + static_cast<long>(good.size() / 2)));
  bad.emplace_back("empty", Bytes());
  Bytes flipped = good;
  flipped[first_tensor_at(good) + 12] ^= 0x40;  // an offset, checksum left as it was
  bad.emplace_back("flipped byte", flipped);
  Bytes key = good;
  key[kKeyAt] ^= 1;
  reseal(key);
  bad.emplace_back("another key", key);
  bad.emplace_back("another graph's plan", other);
  Bytes overlap = good;  // y on top of x while both live, resealed
  set_offset(overlap, 1, static_cast<uint64_t>(computed[0]));
  reseal(overlap);
  bad.emplace_back("overlapping offsets", overlap);

  for (const auto& [what, bytes] : bad) {
    SCOPED_TRACE(what);
    write_bytes(path, bytes);
    EXPECT_EQ(prepare_and_run(dir_.c_str()), computed);
    EXPECT_EQ(read_bytes(path), good) << "the entry was not rewritten";
  }
}

TEST_F(OpenCLCache, neg_CorruptProgramBinaryIsRebuilt) {
  prepare_and_run(dir_.c_str());
  const auto programs = files_with(dir_, "cltrain-ocl-program-");
  ASSERT_FALSE(programs.empty());
  const std::string n = std::to_string(programs.size());
  for (const char* why : {"is truncated", "fails its checksum"}) {
    SCOPED_TRACE(why);
    for (const std::string& p : programs) {
      Bytes f = read_bytes(p);
      if (why[0] == 'i')
        f.resize(f.size() - 100);
      else
        f[f.size() / 2] ^= 0x10;  // a flipped byte in the middle of the binary
      write_bytes(p, f);
    }
    std::vector<int64_t> offsets;
    const std::string err = traced_prepare(&offsets);
    EXPECT_NE(err.find(why), std::string::npos) << err;
    EXPECT_NE(err.find("programs: " + n + " built, 0 loaded"), std::string::npos) << err;
    for (const std::string& p : programs) EXPECT_TRUE(sealed(read_bytes(p))) << p << " was not rewritten";
    const std::string again = traced_prepare(&offsets);
    EXPECT_NE(again.find("programs: 0 built, " + n + " loaded"), std::string::npos) << again;
  }
}

// POCL's binary of a build that raced another process's build of the same program lacks the
// program.bc of POCL's cache folder, and POCL aborts on loading it (seen under ctest -j2): such an
// entry, checksum and all, is never handed to the driver, but rebuilt and written whole again.
TEST_F(OpenCLCache, neg_PoclBinaryWithoutItsBitcodeIsRebuilt) {
  prepare_and_run(dir_.c_str());
  const auto programs = files_with(dir_, "cltrain-ocl-program-");
  ASSERT_FALSE(programs.empty());
  const std::string bitcode = "program.bc";
  auto find = [&](auto& f) { return std::search(f.begin(), f.end(), bitcode.begin(), bitcode.end()); };
  for (const std::string& p : programs) {
    Bytes f = read_bytes(p);
    if (std::memcmp(f.data() + kHeader, "poclbin", 7) != 0) GTEST_SKIP() << "not POCL's binary format";
    for (auto it = find(f); it != f.end(); it = find(f)) std::memcpy(&*it + bitcode.size() - 2, "xx", 2);
    reseal(f);
    write_bytes(p, f);
  }
  std::vector<int64_t> offsets;
  const std::string err = traced_prepare(&offsets);
  EXPECT_NE(err.find("without its program.bc"), std::string::npos) << err;
  EXPECT_NE(err.find("programs: " + std::to_string(programs.size()) + " built, 0 loaded"), std::string::npos) << err;
  for (const std::string& p : programs) {
    const Bytes f = read_bytes(p);
    EXPECT_TRUE(sealed(f) && find(f) != f.end()) << p << " was not rewritten whole";
  }
}

TEST_F(OpenCLCache, neg_UnwritableCacheDirectoryStillPrepares) {
  // Root ignores permission bits, and nothing can create files in /proc.
  const std::string ro = geteuid() == 0 ? std::string("/proc/self") : dir_;
  if (ro == dir_) {
    ASSERT_EQ(chmod(dir_.c_str(), 0555), 0);
  }
  std::vector<int64_t> first = prepare_and_run(ro.c_str());
  std::vector<int64_t> second = prepare_and_run("/nonexistent/cltrain/cache");
  EXPECT_EQ(first, second);
  EXPECT_EQ(first, prepare_and_run(nullptr));
  if (ro == dir_) {
    EXPECT_TRUE(files_with(dir_, "cltrain-ocl-").empty());
    chmod(dir_.c_str(), 0755);
  }
}

// The directory stays under CLTRAIN_OPENCL_CACHE_MAX_BYTES: entries of other graphs go, least
// recently used first (an entry a prepare reads counts as used then), this prepare's stay, and
// files that are not cltrain entries are never touched.
TEST_F(OpenCLCache, LeastRecentlyUsedEntriesGoWhenTheDirectoryIsOverItsBound) {
  namespace fs = std::filesystem;
  std::vector<int64_t> offsets;
  prepare_and_run(dir_.c_str());
  const std::vector<std::string> own = files_with(dir_, "cltrain-ocl-");
  ASSERT_FALSE(own.empty());
  uint64_t own_bytes = 0;
  for (const std::string& f : own) own_bytes += fs::file_size(f);

  // This graph's entries made long ago (the next prepare reads them), three other entries made
  // after them, and a file of someone else's, all 100 KB.
  const auto now = fs::file_time_type::clock::now();
  for (const std::string& f : own) fs::last_write_time(f, now - std::chrono::hours(24 * 10));
  const Bytes kb100(100 << 10, 7);
  const std::string old1 = dir_ + "/cltrain-ocl-program-00000000000000000000000000000001.bin";
  const std::string old2 = dir_ + "/cltrain-ocl-program-00000000000000000000000000000002.bin";
  const std::string old3 = dir_ + "/cltrain-ocl-plan-00000000000000000000000000000003.bin";
  const std::string other = dir_ + "/notes.txt";
  int age = 4;
  for (const std::string& f : {old1, old2, old3, other}) {
    write_bytes(f, kb100);
    fs::last_write_time(f, now - std::chrono::hours(24 * age--));
  }
  setenv("CLTRAIN_OPENCL_CACHE_MAX_BYTES", std::to_string(own_bytes + (150 << 10)).c_str(), 1);
  offsets = prepare_and_run(dir_.c_str());
  EXPECT_FALSE(fs::exists(old1)) << "the least recently used entry was kept";
  EXPECT_FALSE(fs::exists(old2)) << "the cache is still over its bound";
  EXPECT_TRUE(fs::exists(old3)) << "an entry went though the cache was within its bound";
  EXPECT_TRUE(fs::exists(other)) << "a file that is not a cltrain entry was deleted";
  for (const std::string& f : own) EXPECT_TRUE(fs::exists(f)) << f << ": an entry this prepare read was deleted";

  // A bound below this graph's own entries deletes every other entry and none of these.
  setenv("CLTRAIN_OPENCL_CACHE_MAX_BYTES", "1", 1);
  prepare_and_run(dir_.c_str());
  unsetenv("CLTRAIN_OPENCL_CACHE_MAX_BYTES");
  EXPECT_FALSE(fs::exists(old3));
  EXPECT_TRUE(fs::exists(other));
  for (const std::string& f : own) EXPECT_TRUE(fs::exists(f)) << f;
}

// A bound that is not a number of bytes: one warning line naming it, and the default bound.
TEST_F(OpenCLCache, neg_CacheBoundThatIsNotANumberWarnsAndKeepsTheDefault) {
  setenv("CLTRAIN_OPENCL_CACHE_MAX_BYTES", "1G", 1);
  ::testing::internal::CaptureStderr();
  const std::vector<int64_t> offsets = prepare_and_run(dir_.c_str());
  const std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("CLTRAIN_OPENCL_CACHE_MAX_BYTES");
  EXPECT_NE(err.find("CLTRAIN_OPENCL_CACHE_MAX_BYTES='1G' is not a number of bytes"), std::string::npos) << err;
  EXPECT_NE(err.find("under " + std::to_string(512ull << 20) + " bytes"), std::string::npos) << err;
  EXPECT_FALSE(files_with(dir_, "cltrain-ocl-plan-").empty()) << "the entries went under the default bound";
  EXPECT_EQ(offsets.size(), 3u);
}

}  // namespace
