#include "lora_file.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "checkpoint.h"

namespace cltrain {

std::vector<uint8_t> safetensors_bytes(const std::vector<NamedTensor>& tensors,
                                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    const uint64_t bytes = t.values.size() * 4;
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';  // the data 8-byte aligned, as the format recommends
  std::vector<uint8_t> out(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(text.size() >> (8 * i));
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t* data = out.data() + 8 + text.size();
  for (const NamedTensor& t : tensors) {
    for (float v : t.values) {  // little-endian F32
      uint32_t u;
      std::memcpy(&u, &v, 4);
      for (int i = 0; i < 4; ++i) *data++ = static_cast<uint8_t>(u >> (8 * i));
    }
  }
  return out;
}

std::vector<NamedTensor> parse_safetensors(const std::vector<uint8_t>& bytes, const std::string& what,
                                           std::map<std::string, std::string>* metadata) {
  auto fail = [&](const std::string& why) { throw CheckpointError(what + ": " + why); };
  if (bytes.size() < 8) fail("is " + std::to_string(bytes.size()) + " bytes, too short for a safetensors file");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes[static_cast<size_t>(i)]) << (8 * i);
  if (n > bytes.size() - 8) fail("header of " + std::to_string(n) + " bytes runs past the end of the file");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception&) {
    fail("header is not JSON (not a safetensors file?)");
  }
  if (!header.is_object()) fail("header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - n;
  const uint8_t* data = bytes.data() + 8 + n;
  std::vector<NamedTensor> out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("__metadata__ is not an object");
      for (const auto& [k, v] : entry.items())
        if (metadata && v.is_string()) (*metadata)[k] = v.get<std::string>();
      continue;
    }
    const std::string label = "tensor '" + name + "'";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
      fail(label + " lacks dtype, shape or data_offsets");
    if (entry["dtype"] != "F32") fail(label + " is " + entry["dtype"].dump() + ", not F32");
    const nlohmann::json& shape = entry["shape"];
    const nlohmann::json& range = entry["data_offsets"];
    if (!shape.is_array() || !range.is_array() || range.size() != 2 || !range[0].is_number_unsigned() ||
        !range[1].is_number_unsigned())
      fail(label + ": shape or data_offsets malformed");
    NamedTensor t;
    t.name = name;
    uint64_t elements = 1;
    for (const nlohmann::json& d : shape) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (1ull << 31)) fail(label + ": a dimension is not a size");
      t.shape.push_back(d.get<int64_t>());
      elements *= d.get<uint64_t>();
      if (elements > data_size) fail(label + ": shape " + shape.dump() + " is larger than the file's data");
    }
    const uint64_t begin = range[0].get<uint64_t>(), end = range[1].get<uint64_t>();
    if (begin > end || end > data_size) fail(label + ": bytes " + range.dump() + " lie outside the data");
    if (end - begin != elements * 4)
      fail(label + ": " + std::to_string(end - begin) + " bytes for shape " + shape.dump() + " of F32");
    ranges.push_back({begin, end});
    t.values.resize(elements);
    for (uint64_t i = 0; i < elements; ++i) {
      uint32_t u = 0;
      for (int b = 0; b < 4; ++b) u |= static_cast<uint32_t>(data[begin + 4 * i + static_cast<uint64_t>(b)]) << (8 * b);
      std::memcpy(&t.values[i], &u, 4);
    }
    out.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) fail("two tensors' bytes overlap");
  return out;
}

}  // namespace cltrain
