// LoRA adapters as a file (--export_lora, --lora_from): safetensors, the format PEFT users already
// exchange: an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape
// and byte range, then the data. cltrain writes F32 tensors named "<weight>.lora_A.weight"
// ([rank, in]) and "<weight>.lora_B.weight" ([out, rank]), <weight> the FullyConnected weight
// tensor they adapt (which says the operator and its slot), and __metadata__ {"format":
// "cltrain-lora", "rank", "alpha"}.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cltrain {

struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

std::vector<uint8_t> safetensors_bytes(const std::vector<NamedTensor>& tensors,
                                       const std::map<std::string, std::string>& metadata);

// The F32 tensors of a safetensors file and its metadata; throws CheckpointError naming `what` and
// the first thing wrong (a header beyond the file, a byte range outside the data or overlapping
// another, a shape that does not match its bytes, a dtype other than F32).
std::vector<NamedTensor> parse_safetensors(const std::vector<uint8_t>& bytes, const std::string& what,
                                           std::map<std::string, std::string>* metadata);

}  // namespace cltrain
