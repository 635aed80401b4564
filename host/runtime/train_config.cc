#include "train_config.h"

#include "checkpoint.h"

namespace cltrain {

std::vector<int32_t> parse_train_config(const std::vector<uint8_t>& b, int32_t num_operators, const std::string& what) {
  if (b.size() < 8)
    throw ModelError(what + ": truncated training configuration (" + std::to_string(b.size()) + " bytes)");
  const uint16_t magic = static_cast<uint16_t>(b[0] | (b[1] << 8));
  if (magic != 29)
    throw ModelError(what + ": not a training configuration (magic " + std::to_string(magic) + ", expected 29)");
  if (b[2] != 1)
    throw ModelError(what + ": training configuration schema " + std::to_string(b[2]) + " is not supported");
  const uint32_t count = b[4] | (b[5] << 8) | (b[6] << 16) | (static_cast<uint32_t>(b[7]) << 24);
  if (b.size() != 8 + 3ull * count)
    throw ModelError(what + ": training configuration of " + std::to_string(count) + " entries should be " +
                     std::to_string(8 + 3ull * count) + " bytes, not " + std::to_string(b.size()));
  std::vector<int32_t> ranks(static_cast<size_t>(num_operators), kRankNone);
  for (uint32_t i = 0; i < count; ++i) {
    const uint16_t op = static_cast<uint16_t>(b[8 + 2 * i] | (b[9 + 2 * i] << 8));
    const uint8_t rank = b[8 + 2 * count + i];
    if (op >= num_operators)
      throw ModelError(what + ": entry " + std::to_string(i) + " names operator " + std::to_string(op) +
                       ", the model has " + std::to_string(num_operators) + " operators");
    if (rank > 3)
      throw ModelError(what + ": entry " + std::to_string(i) + " has rank type " + std::to_string(rank) +
                       " (0-3 are defined)");
    static const int32_t kRanks[] = {kRankAll, kRankOnlyBias, kRankUpperHalf, kRankLowerHalf};
    ranks[op] = kRanks[rank];
  }
  return ranks;
}

std::vector<int32_t> read_train_config(const std::string& path, int32_t num_operators) {
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file_bytes(path);
  } catch (const CheckpointError&) {
    throw ModelError(path + ": cannot open training configuration");
  }
  return parse_train_config(bytes, num_operators, path);
}

std::vector<uint8_t> make_train_config(const std::vector<std::pair<uint16_t, uint8_t>>& entries) {
  const uint32_t n = static_cast<uint32_t>(entries.size());
  std::vector<uint8_t> b = {29,
                            0,
                            1,
                            0,
                            static_cast<uint8_t>(n),
                            static_cast<uint8_t>(n >> 8),
                            static_cast<uint8_t>(n >> 16),
                            static_cast<uint8_t>(n >> 24)};
  for (const auto& e : entries) {
    b.push_back(static_cast<uint8_t>(e.first));
    b.push_back(static_cast<uint8_t>(e.first >> 8));
  }
  for (const auto& e : entries) b.push_back(e.second);
  return b;
}

}  // namespace cltrain
