#include "dataset.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <memory>

namespace cltrain {
namespace {

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// Reads a whole file, gunzipping it when it is gzip (zlib reads plain files as they are).
std::vector<uint8_t> read_maybe_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw DataError(path + ": cannot open");
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof(buf));
    if (n < 0) {
      int code = 0;
      const std::string msg = gzerror(f, &code);
      gzclose(f);
      throw DataError(path + ": cannot read (" + msg + ")");
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  gzclose(f);
  return out;
}

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t(b[at]) << 24) | (uint32_t(b[at + 1]) << 16) | (uint32_t(b[at + 2]) << 8) | b[at + 3];
}

std::string find_idx(const std::string& dir, const std::string& stem) {
  for (const std::string& p : {dir + "/" + stem, dir + "/" + stem + ".gz"})
    if (exists(p)) return p;
  throw DataError("Fashion-MNIST file " + stem + "[.gz] not found in " + dir +
                  " (install dataset-fashion-mnist or pass --data fashion-mnist:DIR)");
}

}  // namespace

Dataset Dataset::split_tail(uint64_t count) {
  Dataset tail;
  tail.input_size = input_size;
  tail.expected_size = expected_size;
  const uint64_t keep = size() - std::min(count, size());
  tail.inputs.assign(inputs.begin() + static_cast<long>(keep * input_size), inputs.end());
  tail.expected.assign(expected.begin() + static_cast<long>(keep * expected_size), expected.end());
  truncate(keep);
  return tail;
}

void Dataset::truncate(uint64_t count) {
  if (count >= size()) return;
  inputs.resize(count * input_size);
  expected.resize(count * expected_size);
}

Dataset load_fashion_mnist(const std::string& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string img_path = find_idx(dir, prefix + "-images-idx3-ubyte");
  const std::string lbl_path = find_idx(dir, prefix + "-labels-idx1-ubyte");
  const auto img = read_maybe_gz(img_path);
  const auto lbl = read_maybe_gz(lbl_path);
  if (img.size() < 16 || be32(img, 0) != 2051) throw DataError(img_path + ": not an idx3 image file");
  if (lbl.size() < 8 || be32(lbl, 0) != 2049) throw DataError(lbl_path + ": not an idx1 label file");
  const uint64_t n = be32(img, 4), rows = be32(img, 8), cols = be32(img, 12);
  if (img.size() != 16 + n * rows * cols)
    throw DataError(img_path + ": holds " + std::to_string(img.size() - 16) + " pixel bytes, header says " +
                    std::to_string(n) + "x" + std::to_string(rows) + "x" + std::to_string(cols));
  if (be32(lbl, 4) != n || lbl.size() != 8 + n)
    throw DataError(lbl_path + ": label count does not match the " + std::to_string(n) + " images");
  Dataset d;
  d.input_size = rows * cols;
  d.expected_size = 10;
  d.inputs.resize(n * rows * cols);
  for (uint64_t i = 0; i < d.inputs.size(); ++i) d.inputs[i] = img[16 + i] / 255.0f;
  d.expected.assign(n * 10, 0.0f);
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t label = lbl[8 + i];
    if (label > 9)
      throw DataError(lbl_path + ": label " + std::to_string(label) + " of sample " + std::to_string(i) +
                      " is not in 0..9");
    d.expected[i * 10 + label] = 1.0f;
  }
  return d;
}

namespace {
// int32: the samples are int32 ids, kept as their bits in the floats (no finiteness to check).
std::vector<float> read_floats(const std::string& path, uint64_t sample, const char* what, bool int32 = false) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw DataError(std::string(what) + " file " + path + " is not a regular file" +
                    (S_ISDIR(st.st_mode) ? " (a directory)" : ""));
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw DataError(std::string(what) + " file " + path + ": cannot open");
  std::fseek(f.get(), 0, SEEK_END);
  const long size = std::ftell(f.get());
  std::fseek(f.get(), 0, SEEK_SET);
  if (size <= 0) throw DataError(std::string(what) + " file " + path + " is empty");
  const uint64_t sample_bytes = sample * sizeof(float);
  if (static_cast<uint64_t>(size) % sample_bytes != 0)
    throw DataError(std::string(what) + " file " + path + " has " + std::to_string(size) +
                    " bytes, not a multiple of the sample size (" + std::to_string(sample) +
                    (int32 ? " int32 = " : " float32 = ") + std::to_string(sample_bytes) + " bytes)");
  std::vector<float> v(static_cast<size_t>(size) / sizeof(float));
  if (std::fread(v.data(), 1, static_cast<size_t>(size), f.get()) != static_cast<size_t>(size))
    throw DataError(std::string(what) + " file " + path + ": short read");
  for (size_t i = 0; i < v.size() && !int32; ++i)
    if (!std::isfinite(v[i]))
      throw DataError(std::string(what) + " file " + path + ": sample " + std::to_string(i / sample) + " holds " +
                      (std::isnan(v[i]) ? "NaN" : "Inf") + " at element " + std::to_string(i % sample));
  return v;
}
}  // namespace

Dataset load_raw(const std::string& input_file, uint64_t input_size, const std::string& expected_file,
                 uint64_t expected_size, bool int32_input) {
  Dataset d;
  d.input_size = input_size;
  d.expected_size = expected_size;
  d.inputs = read_floats(input_file, input_size, "input", int32_input);
  d.expected = read_floats(expected_file, expected_size, "expected");
  const uint64_t ni = d.inputs.size() / input_size, ne = d.expected.size() / expected_size;
  if (ni != ne)
    throw DataError("input file " + input_file + " has " + std::to_string(ni) + " samples but expected file " +
                    expected_file + " has " + std::to_string(ne));
  return d;
}

}  // namespace cltrain
