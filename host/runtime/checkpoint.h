// Checkpoints in onert's format, byte for byte as onert writes and reads them: every constant of
// the model, Adam's m and v, and where training was.
//
// Little-endian, packed: uint16 magic = 429; uint8 schema = 1; uint8 reserved; uint32 opt1_offset;
// uint32 opt2_offset; uint32 other_offset; uint32 length (number of tensors). Then a block of
// `length` uint32 absolute offsets followed by the tensors' raw bytes: every constant of the model
// (weights, and integer ones such as a Reshape's shape, as the file holds them) in onert's order
// (onert_checkpoint_order). For Adam, two more blocks of the same layout at opt1_offset (m) and
// opt2_offset (v), in which a constant without Adam state (not trained) is empty; for SGD
// opt1_offset = other_offset and opt2_offset = 0. At other_offset: uint32 cur_step, uint32
// cur_epoch (onert writes 0). Reading also takes the layout earlier cltrain builds wrote (the
// trained weights in model order) where only that one fits the file.
//
// Exported checkpoints (--export_checkpoint) are onert's bytes exactly. Periodic ones
// (--checkpoint_every) carry a trailer of 44 bytes after onert's end: "CLTP",
// uint32 version = 1, int64 batches (steps run, skipped ones included), int64 epoch_batches
// (those since the last whole epoch), float64 epoch_loss_sum (the losses of its applied steps),
// int64 skipped, and uint32 CRC-32 (IEEE) of every byte before it. A file with the trailer whose
// checksum does not match is refused as torn or corrupted; one without it (onert's) loads as before.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/model.h"
#include "session.h"

namespace cltrain {

// A checkpoint that cannot be read or does not fit the model; what() is one line.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where a training loop was, within an epoch (cltrain's trailer).
struct Progress {
  int64_t batches = 0;        // steps run since training began (skipped ones included)
  int64_t epoch_batches = 0;  // of them, since the last whole epoch
  double epoch_loss_sum = 0;  // the losses of the applied ones among those
  int64_t skipped = 0;        // steps not applied (on_nonfinite skip)
};

struct TrainingPosition {
  uint32_t step = 0;   // optimizer iterations done (Adam's t)
  uint32_t epoch = 0;  // epochs done
  bool has_progress = false;
  Progress progress;
};

// CRC-32 (IEEE 802.3, as zlib's crc32) of bytes.
uint32_t crc32_of(const uint8_t* data, size_t n);

// The model's constants in the order onert (0.1.0, its train backend) lists them in a checkpoint:
// the iteration order of the chain of hash maps its compiler fills (libstdc++'s unordered_map, as
// here). It depends on the graph alone (tensor count, constants, unused tensors, inputs, outputs).
std::vector<int32_t> onert_checkpoint_order(const Model& model);

// Serializes the session's weights (and Adam state) and model's other constants into checkpoint
// bytes. model: the one the session's graph was built from.
std::vector<uint8_t> make_checkpoint(Session& session, const Model& model, const TrainingPosition& position);

// Checks bytes against the session's model and loads them into it. Throws CheckpointError naming
// the first mismatch (magic, schema, tensor count, a tensor's size, truncation, a constant that
// differs from the model's while this session does not train it, missing Adam state). The
// session's optimizer iterations become the checkpoint's step.
TrainingPosition load_checkpoint(Session& session, const Model& model, const std::vector<uint8_t>& bytes,
                                 const std::string& what);

std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace cltrain
