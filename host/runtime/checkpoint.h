// Checkpoints in onert's format: the trained weights, Adam's m and v, and where training was.
//
// Little-endian, packed: uint16 magic = 429; uint8 schema = 1; uint8 reserved; uint32 opt1_offset;
// uint32 opt2_offset; uint32 other_offset; uint32 length (number of trainable tensors). Then a
// block of `length` uint32 absolute offsets followed by the tensors' raw bytes (weights, in model
// order). For Adam, two more blocks of the same layout at opt1_offset (m) and opt2_offset (v);
// without optimizer state both offsets are 0. At other_offset: uint32 cur_step, uint32 cur_epoch.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "session.h"

namespace cltrain {

// A checkpoint that cannot be read or does not fit the model; what() is one line.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TrainingPosition {
  uint32_t step = 0;   // optimizer iterations done (Adam's t)
  uint32_t epoch = 0;  // epochs done
};

// Serializes the session's trainable weights (and Adam state) into checkpoint bytes.
std::vector<uint8_t> make_checkpoint(Session& session, const TrainingPosition& position);

// Checks bytes against the session's model and loads them into it. Throws CheckpointError naming
// the first mismatch (magic, schema, tensor count, a tensor's size, truncation).
TrainingPosition load_checkpoint(Session& session, const std::vector<uint8_t>& bytes, const std::string& what);

std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace cltrain
