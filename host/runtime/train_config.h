// onert-micro's per-operator training configuration file (training-configure-tool's format):
// uint16 magic = 29, uint8 schema = 1, uint8 reserved, uint32 count, then count uint16 operator
// indices, then count uint8 rank types (0 ALL, 1 ONLY_BIAS, 2 UP_1_2_PART, 3 LOWER_1_2_PART).
// Little-endian.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training_graph.h"

namespace cltrain {

// Reads a configuration file into per-operator ranks for a model of num_operators operators
// (kRankNone for the unlisted). Throws ModelError with one line.
std::vector<int32_t> read_train_config(const std::string& path, int32_t num_operators);
std::vector<int32_t> parse_train_config(const std::vector<uint8_t>& bytes, int32_t num_operators,
                                        const std::string& what);
std::vector<uint8_t> make_train_config(const std::vector<std::pair<uint16_t, uint8_t>>& entries);

}  // namespace cltrain
