// Helpers for the model tests: a tiny model, and raw edits of serialized models through the
// flatbuffers object API (for defects that write_model cannot express).
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "circle_generated.h"
#include "model/builder.h"
#include "model/model.h"

namespace cltrain {
namespace test {

// input [2,4] -> FullyConnected 3 (ReLU) -> Reshape [-1,3] -> Softmax: every op we support.
inline Model tiny_model() {
  ModelBuilder b(7);
  int x = b.input({2, 4}, "input");
  x = b.fully_connected(x, 3, CLTRAIN_ACT_RELU, true, "fc");
  x = b.reshape(x, {-1, 3}, "flat");
  x = b.relu(x);
  x = b.softmax(x, 1.0f, "out");
  b.output(x);
  return b.build();
}

// Unpacks bytes, applies edit, and packs again with the identifier of the original.
inline std::vector<uint8_t> edit_raw(const std::vector<uint8_t>& bytes,
                                     const std::function<void(fb::ModelT&)>& edit) {
  auto m = fb::UnPackModel(bytes.data());
  edit(*m);
  flatbuffers::FlatBufferBuilder fbb;
  const std::string ident(reinterpret_cast<const char*>(bytes.data()) + 4, 4);
  fbb.Finish(fb::Model::Pack(fbb, m.get()), ident.c_str());
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

// The ModelError message of loading bytes, or "" if it loaded.
inline std::string load_error(const std::vector<uint8_t>& bytes, const std::string& what = "m.circle") {
  try {
    load_model_from_memory(bytes, what);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

inline std::vector<float> floats(const Tensor& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace test
}  // namespace cltrain
