// export_with_weights: the same file with new weights, in place or with buffers after the
// flatbuffer; shared buffers; what it refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "circle_traininfo_generated.h"
#include "export_util.h"

namespace cltrain {
namespace {

using namespace test;
using ::testing::HasSubstr;
namespace ft = fbtrain;

// ---------------------------------------------------------------------------------------------
// export_with_weights

class ExportWeights : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportWeights, SameLayoutOnlyWeightsChange) {
  const std::string fmt = GetParam();
  for (const auto& [name, built] : models()) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = write_model(built, fmt);
    const Model loaded = load_model_from_memory(bytes, name + "." + fmt);
    const auto w = new_weights(loaded);
    ASSERT_FALSE(w.empty());
    const std::vector<uint8_t> out = export_with_weights(loaded, w);
    ASSERT_EQ(out.size(), bytes.size());
    EXPECT_EQ(ident(out), ident(bytes));
    // Every byte outside the listed tensors' data is the same.
    std::vector<bool> weight_byte(bytes.size(), false);
    for (const auto& [t, v] : w) {
      const Tensor& x = loaded.tensors[static_cast<size_t>(t)];
      ASSERT_GE(x.file_offset, 0);
      for (size_t k = 0; k < x.data.size(); ++k) weight_byte[static_cast<size_t>(x.file_offset) + k] = true;
    }
    size_t changed = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (!weight_byte[i]) {
        EXPECT_EQ(out[i], bytes[i]) << "byte " << i;
      }
      changed += out[i] != bytes[i];
    }
    EXPECT_GT(changed, 0u);
    const Model again = load_model_from_memory(out, "out." + fmt);
    EXPECT_EQ(again.format, fmt);
    expect_same_except_weights(loaded, again, w);
    for (size_t i = 0; i < loaded.tensors.size(); ++i)
      EXPECT_EQ(again.tensors[i].file_offset, loaded.tensors[i].file_offset);
  }
}

TEST_P(ExportWeights, SomeTensorsOnly) {
  const Model loaded = load_model_from_memory(write_model(make_named_model("mlp", 2), GetParam()), "mlp");
  auto all = new_weights(loaded);
  std::map<int32_t, std::vector<float>> w;
  w.insert(*all.begin());
  const Model again = load_model_from_memory(export_with_weights(loaded, w), "out");
  expect_same_except_weights(loaded, again, w);
  // No weights at all: the file itself.
  EXPECT_TRUE(export_with_weights(loaded, {}) == loaded.file);
}

TEST_P(ExportWeights, BuffersOutsideTheFlatbuffer) {
  const std::string fmt = GetParam();
  const std::vector<uint8_t> bytes = move_buffers_outside(write_model(test::every_op_model(), fmt));
  const Model loaded = load_model_from_memory(bytes, "big." + fmt);
  EXPECT_GT(outside_buffers(bytes), 4u);
  const Model inside = load_model_from_memory(write_model(test::every_op_model(), fmt), "small");
  for (size_t i = 0; i < loaded.tensors.size(); ++i) EXPECT_TRUE(loaded.tensors[i].data == inside.tensors[i].data);
  const auto w = new_weights(loaded);
  const std::vector<uint8_t> out = export_with_weights(loaded, w);
  ASSERT_EQ(out.size(), bytes.size());
  EXPECT_EQ(outside_buffers(out), outside_buffers(bytes));
  // The flatbuffer part is untouched; only data after it changed.
  const size_t first_data = first_data_offset(loaded);
  EXPECT_GT(first_data, 0u);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(first_data), out.begin()));
  expect_same_except_weights(loaded, load_model_from_memory(out, "out"), w);
}

INSTANTIATE_TEST_SUITE_P(Formats, ExportWeights, ::testing::Values("circle", "tflite"));

TEST(ExportWeights, BuiltInMemoryWritesTheModel) {
  const Model built = make_named_model("cnn-tiny", 2);
  ASSERT_TRUE(built.file.empty());
  const auto w = new_weights(built);
  const std::vector<uint8_t> out = export_with_weights(built, w);
  Model expected = built;
  for (const auto& [t, v] : w) {
    std::vector<uint8_t>& d = expected.tensors[static_cast<size_t>(t)].data;
    std::memcpy(d.data(), v.data(), d.size());
  }
  EXPECT_TRUE(out == write_model(expected, "circle"));
  expect_same_except_weights(built, load_model_from_memory(out, "out"), w);
}

// Converters may store identical constants once: two tensors, one buffer.
std::vector<uint8_t> shared_bias_model() {
  ModelBuilder b(3);
  const int x = b.input({2, 4});
  const int y1 = b.fully_connected(x, 4, CLTRAIN_ACT_RELU, true, "fc1");
  const int y2 = b.fully_connected(y1, 4, CLTRAIN_ACT_NONE, true, "fc2");
  b.output(y2);
  const Model m = b.build();
  const int32_t bias1 = test::find_tensor(m, "fc1/bias"), bias2 = test::find_tensor(m, "fc2/bias");
  return test::edit_raw(write_model(m, "tflite"), [&](fb::ModelT& fm) {
    fm.subgraphs[0]->tensors[static_cast<size_t>(bias2)]->buffer =
        fm.subgraphs[0]->tensors[static_cast<size_t>(bias1)]->buffer;
  });
}

TEST(ExportWeights, SharedBufferSameValues) {
  const Model m = load_model_from_memory(shared_bias_model(), "shared.tflite");
  const int32_t b1 = test::find_tensor(m, "fc1/bias"), b2 = test::find_tensor(m, "fc2/bias");
  ASSERT_EQ(m.tensors[static_cast<size_t>(b1)].file_offset, m.tensors[static_cast<size_t>(b2)].file_offset);
  const std::vector<float> v = {1, 2, 3, 4};
  const Model again = load_model_from_memory(export_with_weights(m, {{b1, v}, {b2, v}}), "out");
  EXPECT_TRUE(test::floats(again.tensors[static_cast<size_t>(b1)]) == v);
  EXPECT_TRUE(test::floats(again.tensors[static_cast<size_t>(b2)]) == v);
  // Unchanged values for one of them are fine too (zeros: the biases' initial values).
  EXPECT_NO_THROW(export_with_weights(m, {{b1, {0, 0, 0, 0}}}));
}

std::string export_error(const Model& m, const std::map<int32_t, std::vector<float>>& w) {
  try {
    export_with_weights(m, w);
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  return "";
}

TEST(ExportWeights, neg_SharedBufferDifferentValues) {
  const Model m = load_model_from_memory(shared_bias_model(), "shared.tflite");
  const int32_t b1 = test::find_tensor(m, "fc1/bias"), b2 = test::find_tensor(m, "fc2/bias");
  const std::string msg = export_error(m, {{b1, {1, 2, 3, 4}}, {b2, {1, 2, 3, 5}}});
  EXPECT_THAT(msg,
              HasSubstr("shared.tflite: cannot export weights: tensor " + std::to_string(b1) + " 'fc1/bias' shares"));
  EXPECT_THAT(msg, HasSubstr("'fc2/bias', which would get other values"));
  EXPECT_THAT(export_error(m, {{b2, {1, 2, 3, 4}}}), HasSubstr("'fc2/bias' shares its bytes in the file"));
}

TEST(ExportWeights, neg_WrongSize) {
  for (const char* fmt : {"circle", "tflite"}) {
    const Model m = load_model_from_memory(write_model(make_named_model("mlp", 2), fmt), "mlp.circle");
    const int32_t t = test::find_tensor(m, "fc1/weights");
    ASSERT_GE(t, 0);
    std::vector<float> v(m.tensors[static_cast<size_t>(t)].elements() - 1, 0.5f);
    EXPECT_EQ(export_error(m, {{t, v}}), "mlp.circle: cannot export weights: tensor " + std::to_string(t) +
                                             " 'fc1/weights': 100351 values given, shape [128,784] holds 100352");
    v.resize(v.size() + 2);
    EXPECT_THAT(export_error(m, {{t, v}}), HasSubstr("100353 values given"));
    EXPECT_THAT(export_error(m, {{t, {}}}), HasSubstr("0 values given"));
  }
  // The in-memory path checks the same.
  const Model built = make_named_model("mlp", 2);
  EXPECT_THAT(export_error(built, {{test::find_tensor(built, "fc2/bias"), {1, 2}}}),
              HasSubstr("model: cannot export weights: tensor"));
}

TEST(ExportWeights, neg_NotAFloatConstant) {
  const Model m = load_model_from_memory(write_model(test::tiny_model(), "circle"), "tiny.circle");
  const int32_t shape = test::find_tensor(m, "flat/shape");
  ASSERT_GE(shape, 0) << "tiny model's reshape operand";
  EXPECT_THAT(export_error(m, {{shape, {1, 2}}}),
              HasSubstr("'flat/shape' is not a float32 constant (an int32 constant)"));
  EXPECT_THAT(export_error(m, {{0, {1, 2, 3, 4, 5, 6, 7, 8}}}),
              HasSubstr("tensor 0 'input' is not a float32 constant (it has no data in the model)"));
  EXPECT_EQ(export_error(m, {{-1, {}}}),
            "tiny.circle: cannot export weights: tensor index -1 out of range (model has " +
                std::to_string(m.tensors.size()) + " tensors)");
  EXPECT_THAT(export_error(m, {{static_cast<int32_t>(m.tensors.size()), {}}}), HasSubstr("out of range"));
}

}  // namespace
}  // namespace cltrain
