// What the export and circle+ tests share: the models they run on, new weights and the check that
// only those changed, and files whose buffers lie after the flatbuffer.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/export.h"
#include "ops/op_descriptor.h"
#include "test_util.h"

namespace cltrain {
namespace test {

// The models the tests run on: every op (convolutions, int32 operands) and the plain MLP.
inline std::vector<std::pair<std::string, Model>> models() {
  return {{"every-op", test::every_op_model()}, {"mlp", make_named_model("mlp", 2)}};
}

// New values for every float constant that may be a weight (not FILL's value, a fixed one): old
// * -0.5 + k / 1024 (exact in float), all different.
inline std::map<int32_t, std::vector<float>> new_weights(const Model& m) {
  std::vector<bool> fixed(m.tensors.size(), false);
  for (const Operator& op : m.operators)
    if (find_op(op.op)->fixed_constants)
      for (int32_t t : op.inputs)
        if (t >= 0) fixed[static_cast<size_t>(t)] = true;
  std::map<int32_t, std::vector<float>> w;
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const Tensor& x = m.tensors[t];
    if (!x.is_constant() || x.dtype != CLTRAIN_FLOAT32 || fixed[t]) continue;
    std::vector<float> v = test::floats(x);
    for (size_t k = 0; k < v.size(); ++k) v[k] = v[k] * -0.5f + static_cast<float>(k % 4096) / 1024.0f;
    w[static_cast<int32_t>(t)] = std::move(v);
  }
  return w;
}

// b's tensors, operators and metadata equal a's, except for the data of the tensors in w,
// which must equal w's values.
inline void expect_same_except_weights(const Model& a, const Model& b, const std::map<int32_t, std::vector<float>>& w) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i));
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape);
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype);
    auto it = w.find(static_cast<int32_t>(i));
    if (it != w.end()) {
      EXPECT_TRUE(test::floats(b.tensors[i]) == it->second);
    } else {
      EXPECT_TRUE(a.tensors[i].data == b.tensors[i].data);
    }
  }
  ASSERT_EQ(a.operators.size(), b.operators.size());
  for (size_t i = 0; i < a.operators.size(); ++i) {
    EXPECT_EQ(a.operators[i].op, b.operators[i].op);
    EXPECT_EQ(a.operators[i].inputs, b.operators[i].inputs);
    EXPECT_EQ(a.operators[i].outputs, b.operators[i].outputs);
    EXPECT_EQ(0, std::memcmp(&a.operators[i].params, &b.operators[i].params, sizeof(cltrain_op_params)));
  }
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
}

// Moves the data of every non-empty buffer after the flatbuffer (offset/size, 16-byte aligned),
// as writers do for models over 2 GiB.
inline std::vector<uint8_t> move_buffers_outside(const std::vector<uint8_t>& bytes) {
  std::vector<std::vector<uint8_t>> data;
  auto edit = [&](uint64_t start, bool placeholder) {
    return test::edit_raw(bytes, [&](fb::ModelT& m) {
      data.assign(m.buffers.size(), {});
      uint64_t pos = start;
      for (size_t b = 0; b < m.buffers.size(); ++b) {
        if (m.buffers[b]->data.empty()) continue;
        data[b] = std::move(m.buffers[b]->data);
        m.buffers[b]->data.clear();
        m.buffers[b]->offset = placeholder ? 2 : pos;
        m.buffers[b]->size = data[b].size();
        pos = (pos + data[b].size() + 15) / 16 * 16;
      }
    });
  };
  const size_t fb_size = edit(0, true).size();
  const uint64_t start = (fb_size + 15) / 16 * 16;
  std::vector<uint8_t> file = edit(start, false);
  EXPECT_EQ(file.size(), fb_size);
  for (const auto& d : data) {
    if (d.empty()) continue;
    file.resize((file.size() + 15) / 16 * 16, 0);
    file.insert(file.end(), d.begin(), d.end());
  }
  return file;
}

// Number of buffers whose data lies outside the flatbuffer.
inline size_t outside_buffers(const std::vector<uint8_t>& bytes) {
  size_t n = 0;
  for (const fb::Buffer* b : *fb::GetModel(bytes.data())->buffers())
    n += (!b->data() || b->data()->size() == 0) && b->offset() > 1;
  return n;
}

// bytes with extra buffers (the given contents) and metadata entries pointing to them.
inline std::vector<uint8_t> with_metadata(const std::vector<uint8_t>& bytes,
                                          const std::vector<std::pair<std::string, std::vector<uint8_t>>>& entries) {
  return test::edit_raw(bytes, [&](fb::ModelT& m) {
    for (const auto& [name, data] : entries) {
      auto buf = std::make_unique<fb::BufferT>();
      buf->data = data;
      auto md = std::make_unique<fb::MetadataT>();
      md->name = name;
      md->buffer = static_cast<uint32_t>(m.buffers.size());
      m.buffers.push_back(std::move(buf));
      m.metadata.push_back(std::move(md));
    }
  });
}

// The smallest file offset of any tensor's data.
inline size_t first_data_offset(const Model& m) {
  size_t first = m.file.size();
  for (const Tensor& t : m.tensors)
    if (t.file_offset >= 0) first = std::min(first, static_cast<size_t>(t.file_offset));
  return first;
}

// Bytes of all constant tensors.
inline size_t parameter_and_operand_bytes(const Model& m) {
  size_t n = 0;
  for (const Tensor& t : m.tensors) n += t.data.size();
  return n;
}

inline std::string ident(const std::vector<uint8_t>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()) + 4, 4);
}

}  // namespace test
}  // namespace cltrain
