#include "checkpoint.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "memory_plan.h"

namespace cltrain {
namespace {

constexpr uint16_t kMagic = 429;
constexpr uint8_t kSchema = 1;
constexpr size_t kHeaderBytes = 20;

void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b[at + i]) << (8 * i);
  return v;
}

// Appends a block: `tensors.size()` offsets, then the tensors' bytes. Returns its offset.
uint32_t append_block(std::vector<uint8_t>& out, Session& s, const std::vector<int32_t>& tensors) {
  const size_t start = out.size();
  out.resize(start + 4 * tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto values = s.read_persistent(tensors[i]);
    put32(out, start + 4 * i, static_cast<uint32_t>(out.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(values.data());
    out.insert(out.end(), p, p + values.size() * sizeof(float));  // host order: little-endian here
  }
  return static_cast<uint32_t>(start);
}

void load_block(Session& s, const std::vector<uint8_t>& b, uint32_t start, uint32_t end,
                const std::vector<int32_t>& tensors, const std::string& what, const char* block) {
  const auto& g = s.graph();
  if (static_cast<uint64_t>(start) + 4 * tensors.size() > b.size())
    throw CheckpointError(what + ": truncated (" + block + " offsets past the end of the file)");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& d = g.tensors[static_cast<size_t>(tensors[i])];
    const uint64_t bytes = tensor_bytes(d);
    const uint64_t at = get32(b, start + 4 * i);
    const uint64_t next = i + 1 < tensors.size() ? get32(b, start + 4 * (i + 1)) : end;
    if (at + bytes > b.size())
      throw CheckpointError(what + ": truncated (" + block + " tensor " + std::to_string(i) + " '" + d.name +
                            "' ends past the end of the file)");
    if (next < at || next - at != bytes)
      throw CheckpointError(what + ": " + block + " tensor " + std::to_string(i) + " '" + d.name + "' holds " +
                            std::to_string(next < at ? 0 : next - at) + " bytes, the model needs " +
                            std::to_string(bytes));
    std::vector<float> values(bytes / sizeof(float));
    std::memcpy(values.data(), b.data() + at, bytes);
    s.write_persistent(tensors[i], values);
  }
}

std::vector<int32_t> adam_part(const TrainingGraph& g, int which) {
  std::vector<int32_t> out;
  for (int32_t w : g.weights) {
    const auto it = g.adam_state.find(w);
    if (it != g.adam_state.end()) out.push_back(which == 0 ? it->second.first : it->second.second);
  }
  return out;
}

}  // namespace

std::vector<uint8_t> make_checkpoint(Session& s, const TrainingPosition& pos) {
  const TrainingGraph& g = s.graph();
  std::vector<uint8_t> out(kHeaderBytes, 0);
  out[0] = static_cast<uint8_t>(kMagic & 0xff);
  out[1] = static_cast<uint8_t>(kMagic >> 8);
  out[2] = kSchema;
  append_block(out, s, g.weights);
  const bool adam = !g.adam_state.empty();
  const uint32_t opt1 = adam ? append_block(out, s, adam_part(g, 0)) : 0;
  const uint32_t opt2 = adam ? append_block(out, s, adam_part(g, 1)) : 0;
  const uint32_t other = static_cast<uint32_t>(out.size());
  out.resize(out.size() + 8);
  put32(out, other, pos.step);
  put32(out, other + 4, pos.epoch);
  put32(out, 4, opt1);
  put32(out, 8, opt2);
  put32(out, 12, other);
  put32(out, 16, static_cast<uint32_t>(g.weights.size()));
  return out;
}

TrainingPosition load_checkpoint(Session& s, const std::vector<uint8_t>& b, const std::string& what) {
  const TrainingGraph& g = s.graph();
  if (b.size() < kHeaderBytes)
    throw CheckpointError(what + ": truncated (" + std::to_string(b.size()) + " bytes, no header)");
  const uint16_t magic = static_cast<uint16_t>(b[0] | (b[1] << 8));
  if (magic != kMagic)
    throw CheckpointError(what + ": not a checkpoint (magic " + std::to_string(magic) + ", expected " +
                          std::to_string(kMagic) + ")");
  if (b[2] != kSchema)
    throw CheckpointError(what + ": checkpoint schema " + std::to_string(b[2]) + " is not supported");
  const uint32_t opt1 = get32(b, 4), opt2 = get32(b, 8), other = get32(b, 12), length = get32(b, 16);
  if (length != g.weights.size())
    throw CheckpointError(what + ": holds " + std::to_string(length) + " trainable tensors, the model trains " +
                          std::to_string(g.weights.size()));
  const bool adam = !g.adam_state.empty();
  if (adam != (opt1 != 0 && opt2 != 0))
    throw CheckpointError(what + (adam ? ": has no Adam state, and the optimizer is Adam"
                                       : ": has optimizer state, and the optimizer is not Adam"));
  if (static_cast<uint64_t>(other) + 8 > b.size()) throw CheckpointError(what + ": truncated (no training position)");
  load_block(s, b, kHeaderBytes, adam ? opt1 : other, g.weights, what, "weight");
  if (adam) {
    load_block(s, b, opt1, opt2, adam_part(g, 0), what, "Adam m");
    load_block(s, b, opt2, other, adam_part(g, 1), what, "Adam v");
  }
  return {get32(b, other), get32(b, other + 4)};
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw CheckpointError(path + ": cannot open");
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f.get())) > 0) out.insert(out.end(), buf, buf + n);
  return out;
}

}  // namespace cltrain
