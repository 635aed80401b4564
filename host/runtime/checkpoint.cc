#include "checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "memory_plan.h"

namespace cltrain {
namespace {

constexpr uint16_t kMagic = 429;
constexpr uint8_t kSchema = 1;
constexpr size_t kHeaderBytes = 20;
constexpr size_t kTrailerBytes = 44;
constexpr char kTrailerMagic[4] = {'C', 'L', 'T', 'P'};

void put64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get64(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b[at + static_cast<size_t>(i)]) << (8 * i);
  return v;
}

void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b[at + i]) << (8 * i);
  return v;
}

// The bytes of a constant as the model file holds them (a Reshape's target shape before
// set_batch_size wrote the batch into it), else as the model holds them.
std::vector<uint8_t> constant_bytes(const Model& m, int32_t t) {
  const Tensor& tensor = m.tensors[static_cast<size_t>(t)];
  if (tensor.file_offset >= 0 && static_cast<uint64_t>(tensor.file_offset) + tensor.data.size() <= m.file.size())
    return std::vector<uint8_t>(m.file.begin() + tensor.file_offset,
                                m.file.begin() + tensor.file_offset + static_cast<int64_t>(tensor.data.size()));
  return tensor.data;
}

// A checkpoint's tensors: which model tensor each entry is, and whether this session trains it
// (then its values live on the backends and it has Adam state).
struct Entry {
  int32_t tensor;
  bool trained;
};

std::vector<Entry> onert_entries(const Model& m, const TrainingGraph& g) {
  std::vector<Entry> out;
  for (int32_t t : onert_checkpoint_order(m))
    out.push_back({t, std::find(g.weights.begin(), g.weights.end(), t) != g.weights.end()});
  return out;
}

std::vector<Entry> legacy_entries(const TrainingGraph& g) {
  std::vector<Entry> out;
  for (int32_t w : g.weights) out.push_back({w, true});
  return out;
}

uint64_t entry_bytes(const Model& m, const TrainingGraph& g, const Entry& e) {
  return e.trained ? tensor_bytes(g.tensors[static_cast<size_t>(e.tensor)])
                   : m.tensors[static_cast<size_t>(e.tensor)].data.size();
}

std::string entry_name(const Model& m, const Entry& e) { return m.tensors[static_cast<size_t>(e.tensor)].name; }

// The tensor a trained entry stands for in block `which` (0 the weight, 1 Adam's m, 2 its v); -1
// where it has no such state.
int32_t block_tensor(const TrainingGraph& g, const Entry& e, int which) {
  if (which == 0) return e.tensor;
  const auto it = g.adam_state.find(e.tensor);
  if (it == g.adam_state.end()) return -1;
  return which == 1 ? it->second.first : it->second.second;
}

// Appends a block: one offset per entry, then the entries' bytes (`which`: 0 the weights, 1 Adam's
// m, 2 its v; an entry without Adam state is empty there). Returns its offset.
uint32_t append_block(std::vector<uint8_t>& out, Session& s, const Model& m, const std::vector<Entry>& entries,
                      int which) {
  const TrainingGraph& g = s.graph();
  const size_t start = out.size();
  out.resize(start + 4 * entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    put32(out, start + 4 * i, static_cast<uint32_t>(out.size()));
    const Entry& e = entries[i];
    if (!e.trained) {
      if (which == 0) {
        const std::vector<uint8_t> bytes = constant_bytes(m, e.tensor);
        out.insert(out.end(), bytes.begin(), bytes.end());
      }
      continue;
    }
    const int32_t t = block_tensor(g, e, which);
    if (t < 0) continue;
    const auto values = s.read_persistent(t);
    const auto* p = reinterpret_cast<const uint8_t*>(values.data());
    out.insert(out.end(), p, p + values.size() * sizeof(float));  // host order: little-endian here
  }
  return static_cast<uint32_t>(start);
}

// Where each entry of the block at `start` lies ({offset, size}), checked against the file's end;
// "" or why the block is not laid out as the entries say.
std::string block_layout(const std::vector<uint8_t>& b, uint32_t start, uint32_t end, size_t count,
                         std::vector<std::pair<uint64_t, uint64_t>>* out) {
  out->clear();
  if (static_cast<uint64_t>(start) + 4 * count > b.size()) return "truncated (offsets past the end of the file)";
  for (size_t i = 0; i < count; ++i) {
    const uint64_t at = get32(b, start + 4 * i);
    const uint64_t next = i + 1 < count ? get32(b, start + 4 * (i + 1)) : end;
    if (next < at || next > b.size())
      return "truncated (tensor " + std::to_string(i) + " ends past the end of the file)";
    out->push_back({at, next - at});
  }
  return "";
}

// Checks a block against the entries (sizes; `which` as in append_block): "" or the first mismatch.
std::string check_block(const std::vector<uint8_t>& b, const Model& m, const TrainingGraph& g,
                        const std::vector<Entry>& entries, uint32_t start, uint32_t end, int which, bool adam) {
  static const char* kBlock[] = {"weight", "Adam m", "Adam v"};
  std::vector<std::pair<uint64_t, uint64_t>> where;
  const std::string why = block_layout(b, start, end, entries.size(), &where);
  if (!why.empty()) return std::string(kBlock[which]) + " block " + why;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const bool has_state = e.trained && adam;
    const uint64_t want = which == 0 ? entry_bytes(m, g, e) : has_state ? entry_bytes(m, g, e) : 0;
    // Optimizer state of a constant this session does not train is not used (onert writes none
    // for its frozen weights, but a run that trained them has it).
    const bool unused_state = which > 0 && !has_state && where[i].second == entry_bytes(m, g, e);
    if (where[i].second != want && !unused_state) {
      if (which > 0 && where[i].second == 0)
        return "has no Adam state for '" + entry_name(m, e) +
               "', which this session trains (the run that wrote it trained fewer operators)";
      return std::string(kBlock[which]) + " tensor " + std::to_string(i) + " '" + entry_name(m, e) + "' holds " +
             std::to_string(where[i].second) + " bytes, the model needs " + std::to_string(want);
    }
  }
  return "";
}

// write false: checks the block's entries only (an untrained constant the model's, every trained
// value finite), so that a refused file changes nothing; write true: writes them.
void load_entries(Session& s, const Model& m, const std::vector<uint8_t>& b, const std::vector<Entry>& entries,
                  uint32_t start, int which, const std::string& what, bool write) {
  const TrainingGraph& g = s.graph();
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const uint64_t at = get32(b, start + 4 * i);
    if (!e.trained) {
      // A constant this session does not train: its weight entry must be the model's own (its
      // optimizer entries, empty or not, are not read).
      if (which > 0) continue;
      const std::vector<uint8_t> own = constant_bytes(m, e.tensor), now = m.tensors[static_cast<size_t>(e.tensor)].data;
      const bool same = std::equal(own.begin(), own.end(), b.begin() + static_cast<int64_t>(at)) ||
                        std::equal(now.begin(), now.end(), b.begin() + static_cast<int64_t>(at));
      if (!same)
        throw CheckpointError(what + ": '" + entry_name(m, e) +
                              "' differs from the model's, and this session does not train it (resume with the "
                              "operators that trained it: num_of_trainable_ops, train config)");
      continue;
    }
    const int32_t t = block_tensor(g, e, which);
    if (t < 0) continue;
    std::vector<float> values(tensor_bytes(g.tensors[static_cast<size_t>(t)]) / sizeof(float));
    std::memcpy(values.data(), b.data() + at, values.size() * sizeof(float));
    if (write) {
      s.write_persistent(t, values);
      continue;
    }
    for (size_t k = 0; k < values.size(); ++k)
      if (!std::isfinite(values[k]))
        throw CheckpointError(what + ": '" + entry_name(m, e) + "'" +
                              (which == 0   ? ""
                               : which == 1 ? " (Adam's m)"
                                            : " (Adam's v)") +
                              " holds " + (std::isnan(values[k]) ? "NaN" : "Inf") + " at element " + std::to_string(k));
  }
}

}  // namespace

std::vector<int32_t> onert_checkpoint_order(const Model& m) {
  // onert keeps operands in std::unordered_map<OperandIndex, ...> (libstdc++; the hash of an index
  // is its value), and each stage of its compiler fills a new map by iterating the previous one.
  // The checkpoint lists the train backend's constants in the iteration order of the last map, so
  // the same chain of maps, filled the same way, gives that order here (the same libstdc++).
  using Map = std::unordered_map<uint32_t, char>;
  auto keys = [](const Map& map) {
    std::vector<uint32_t> k;
    for (const auto& kv : map) k.push_back(kv.first);
    return k;
  };
  auto copy_of = [&](const Map& map) {
    Map out;
    for (uint32_t k : keys(map)) out.emplace(k, 0);
    return out;
  };
  const uint32_t n = static_cast<uint32_t>(m.tensors.size());
  // The loader: operand i is tensor i; then operands no operator uses, and not model inputs or
  // outputs, are erased.
  Map operands;
  for (uint32_t i = 0; i < n; ++i) operands.emplace(i, 0);
  std::vector<bool> used(n, false);
  auto use = [&](int32_t t) {
    if (t >= 0 && static_cast<uint32_t>(t) < n) used[static_cast<size_t>(t)] = true;
  };
  for (int32_t t : m.inputs) use(t);
  for (int32_t t : m.outputs) use(t);
  std::vector<bool> computed(n, false);  // outputs of the file's shape operators: not constants there
  for (const Operator& op : m.operators) {
    for (int32_t t : op.inputs) use(t);
    for (int32_t t : op.outputs) use(t);
  }
  for (const ShapeOperator& op : m.shape_ops) {
    for (int32_t t : op.inputs) use(t);
    for (int32_t t : op.outputs) {
      use(t);
      if (t >= 0 && static_cast<uint32_t>(t) < n) computed[static_cast<size_t>(t)] = true;
    }
  }
  for (uint32_t k : keys(operands))
    if (!used[k]) operands.erase(k);
  // The trainable graph's copy, with the expected output (a new input) and the loss added.
  Map trainable = copy_of(operands);
  uint32_t next = n;
  const uint32_t expected = next++;
  trainable.emplace(expected, 0);
  trainable.emplace(next++, 0);
  // The lowered graph's copy, with one new operand per graph input (the expected output among
  // them) and per output: the results of the permutations that move them between backends; the
  // inputs, and the output side's results, belong to the builtin backend.
  Map lowered = copy_of(trainable);
  std::vector<uint32_t> builtin(m.inputs.begin(), m.inputs.end());
  builtin.push_back(expected);
  const std::vector<uint32_t> inputs = builtin;
  for (uint32_t k : keys(lowered)) {
    const bool input = std::find(inputs.begin(), inputs.end(), k) != inputs.end();
    const bool output = std::find(m.outputs.begin(), m.outputs.end(), static_cast<int32_t>(k)) != m.outputs.end();
    if (output) builtin.push_back(next);
    if (input || output) lowered.emplace(next++, 0);
  }
  // The train backend's part of the graph, the executor's copy of it, and its registry of
  // constants ("trainable tensors": every constant, of any type).
  Map part;
  for (uint32_t k : keys(lowered))
    if (std::find(builtin.begin(), builtin.end(), k) == builtin.end()) part.emplace(k, 0);
  Map registry;
  for (uint32_t k : keys(copy_of(part)))
    if (k < n && m.tensors[k].is_constant() && !computed[k]) registry[k] = 0;
  std::vector<int32_t> order;
  for (uint32_t k : keys(registry)) order.push_back(static_cast<int32_t>(k));
  return order;
}

std::vector<uint8_t> make_checkpoint(Session& s, const Model& m, const TrainingPosition& pos) {
  const TrainingGraph& g = s.graph();
  const std::vector<Entry> entries = onert_entries(m, g);
  std::vector<uint8_t> out(kHeaderBytes, 0);
  out[0] = static_cast<uint8_t>(kMagic & 0xff);
  out[1] = static_cast<uint8_t>(kMagic >> 8);
  out[2] = kSchema;
  append_block(out, s, m, entries, 0);
  const bool adam = !g.adam_state.empty();
  // As onert: opt1 is where the optimizer blocks start (the training position for SGD), opt2 is
  // 0 without a second block.
  const uint32_t opt1 = adam ? append_block(out, s, m, entries, 1) : static_cast<uint32_t>(out.size());
  const uint32_t opt2 = adam ? append_block(out, s, m, entries, 2) : 0;
  const uint32_t other = static_cast<uint32_t>(out.size());
  out.resize(out.size() + 8);
  put32(out, other, pos.step);
  put32(out, other + 4, pos.epoch);
  put32(out, 4, opt1);
  put32(out, 8, opt2);
  put32(out, 12, other);
  put32(out, 16, static_cast<uint32_t>(entries.size()));
  if (pos.has_progress) {
    const size_t at = out.size();
    out.resize(at + kTrailerBytes);
    std::memcpy(out.data() + at, kTrailerMagic, 4);
    put32(out, at + 4, 1);
    put64(out, at + 8, static_cast<uint64_t>(pos.progress.batches));
    put64(out, at + 16, static_cast<uint64_t>(pos.progress.epoch_batches));
    uint64_t bits;
    std::memcpy(&bits, &pos.progress.epoch_loss_sum, 8);
    put64(out, at + 24, bits);
    put64(out, at + 32, static_cast<uint64_t>(pos.progress.skipped));
    put32(out, at + 40, crc32_of(out.data(), at + 40));
  }
  return out;
}

uint32_t crc32_of(const uint8_t* data, size_t n) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ data[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

// onert's layout of b (load_checkpoint less cltrain's trailer).
static TrainingPosition load_onert_layout(Session& s, const Model& m, const std::vector<uint8_t>& b,
                                          const std::string& what);

TrainingPosition load_checkpoint(Session& s, const Model& m, const std::vector<uint8_t>& whole,
                                 const std::string& what) {
  // cltrain's trailer: checked first, then left out of what onert's layout reads.
  Progress progress;
  bool has_progress = false;
  const size_t n = whole.size();
  if (n >= kHeaderBytes + kTrailerBytes && std::memcmp(whole.data() + n - kTrailerBytes, kTrailerMagic, 4) == 0) {
    const size_t at = n - kTrailerBytes;
    if (get32(whole, at + 40) != crc32_of(whole.data(), at + 40))
      throw CheckpointError(what + ": checksum mismatch: the file is torn or corrupted");
    if (get32(whole, at + 4) != 1)
      throw CheckpointError(what + ": cltrain trailer version " + std::to_string(get32(whole, at + 4)) +
                            " is not supported");
    progress.batches = static_cast<int64_t>(get64(whole, at + 8));
    progress.epoch_batches = static_cast<int64_t>(get64(whole, at + 16));
    const uint64_t bits = get64(whole, at + 24);
    std::memcpy(&progress.epoch_loss_sum, &bits, 8);
    progress.skipped = static_cast<int64_t>(get64(whole, at + 32));
    if (progress.batches < 0 || progress.epoch_batches < 0 || progress.epoch_batches > progress.batches ||
        progress.skipped < 0 || !std::isfinite(progress.epoch_loss_sum))
      throw CheckpointError(what + ": its training progress is not consistent");
    has_progress = true;
  }
  const std::vector<uint8_t> stripped =
      has_progress ? std::vector<uint8_t>(whole.begin(), whole.end() - static_cast<long>(kTrailerBytes))
                   : std::vector<uint8_t>();
  const std::vector<uint8_t>& b = has_progress ? stripped : whole;
  TrainingPosition pos = load_onert_layout(s, m, b, what);
  pos.has_progress = has_progress;
  pos.progress = progress;
  return pos;
}

static TrainingPosition load_onert_layout(Session& s, const Model& m, const std::vector<uint8_t>& b,
                                          const std::string& what) {
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
  const bool adam = !g.adam_state.empty();
  if (adam != (opt1 != 0 && opt2 != 0))
    throw CheckpointError(what + (adam ? ": has no Adam state, and the optimizer is Adam"
                                       : ": has optimizer state, and the optimizer is not Adam"));
  if (static_cast<uint64_t>(other) + 8 > b.size()) throw CheckpointError(what + ": truncated (no training position)");
  const uint32_t weights_end = adam ? opt1 : other;
  // onert's layout (every constant, in its order); else that of cltrain before it wrote onert's
  // (the trained weights in model order), where only that one fits.
  const std::vector<Entry> onert = onert_entries(m, g), legacy = legacy_entries(g);
  auto fits = [&](const std::vector<Entry>& entries) {
    if (length != entries.size())
      return std::string("holds ") + std::to_string(length) + " tensors; the model has " +
             std::to_string(onert.size()) + " constants (onert's layout) and trains " +
             std::to_string(g.weights.size()) + " weights";
    std::string why = check_block(b, m, g, entries, kHeaderBytes, weights_end, 0, adam);
    if (why.empty() && adam) why = check_block(b, m, g, entries, opt1, opt2, 1, adam);
    if (why.empty() && adam) why = check_block(b, m, g, entries, opt2, other, 2, adam);
    return why;
  };
  const std::string onert_why = fits(onert);
  const std::vector<Entry>* entries = &onert;
  if (!onert_why.empty()) {
    if (!fits(legacy).empty()) throw CheckpointError(what + ": " + onert_why);
    entries = &legacy;
  }
  for (bool write : {false, true}) {  // everything checked before anything is written
    load_entries(s, m, b, *entries, kHeaderBytes, 0, what, write);
    if (adam) {
      load_entries(s, m, b, *entries, opt1, 1, what, write);
      load_entries(s, m, b, *entries, opt2, 2, what, write);
    }
  }
  TrainingPosition pos;
  pos.step = get32(b, other);
  pos.epoch = get32(b, other + 4);
  s.set_iterations(pos.step);  // the optimizer goes on from the checkpoint's step
  return pos;
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
