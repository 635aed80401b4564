// Builder -> writer -> loader round trips, named models, set_batch_size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "graph/builtin_names.h"
#include "test_util.h"

namespace cltrain {
namespace {

using test::floats;

std::vector<int32_t> int32_values(const Tensor& t) {
  std::vector<int32_t> v(t.data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

void expect_same_model(const Model& a, const Model& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i));
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape);
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype);
    EXPECT_EQ(a.tensors[i].buffer, b.tensors[i].buffer);
    EXPECT_TRUE(a.tensors[i].data == b.tensors[i].data);
  }
  ASSERT_EQ(a.operators.size(), b.operators.size());
  for (size_t i = 0; i < a.operators.size(); ++i) {
    SCOPED_TRACE("operator " + std::to_string(i));
    EXPECT_EQ(a.operators[i].op, b.operators[i].op);
    EXPECT_EQ(a.operators[i].inputs, b.operators[i].inputs);
    EXPECT_EQ(a.operators[i].outputs, b.operators[i].outputs);
    EXPECT_EQ(0, std::memcmp(&a.operators[i].params, &b.operators[i].params, sizeof(cltrain_op_params)));
  }
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
}

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, Mlp) {
  const std::string fmt = GetParam();
  const Model built = make_named_model("mlp", 32);
  const std::vector<uint8_t> bytes = write_model(built, fmt);
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()) + 4, 4), fmt == "circle" ? "CIR0" : "TFL3");
  const Model loaded = load_model_from_memory(bytes, "mlp." + fmt);
  EXPECT_EQ(loaded.format, fmt);
  EXPECT_TRUE(loaded.file == bytes);
  expect_same_model(built, loaded);
  // Writing the loaded model again gives the same bytes.
  EXPECT_TRUE(write_model(loaded, fmt) == bytes);
}

TEST_P(RoundTrip, EveryOpWithReshape) {
  const Model built = test::tiny_model();
  const Model loaded = load_model_from_memory(write_model(built, GetParam()), "tiny");
  expect_same_model(built, loaded);
  // Reshape carries its INT32 shape operand [-1, 3] as the second input.
  const Operator& r = loaded.operators[1];
  ASSERT_EQ(r.op, CLTRAIN_OP_RESHAPE);
  ASSERT_EQ(r.inputs.size(), 2u);
  const Tensor& s = loaded.tensors[static_cast<size_t>(r.inputs[1])];
  EXPECT_EQ(s.dtype, CLTRAIN_INT32);
  EXPECT_EQ(s.shape, std::vector<int32_t>({2}));
  std::vector<int32_t> v(2);
  std::memcpy(v.data(), s.data.data(), 8);
  EXPECT_EQ(v, std::vector<int32_t>({-1, 3}));
}

// Every op with its options, and every named model: the loaded model equals the built one
// (params included: the loader derives axes_mask, pad_before/after, the concat axis and the
// depth multiplier exactly as the builder sets them), and writing it again gives the same bytes.
TEST_P(RoundTrip, EveryOp) {
  const std::string fmt = GetParam();
  std::vector<bool> seen(CLTRAIN_OP_COUNT);
  for (const Model& built : {test::every_op_model(), test::embedding_model()}) {
    const std::vector<uint8_t> bytes = write_model(built, fmt);
    const Model loaded = load_model_from_memory(bytes, "every-op." + fmt);
    expect_same_model(built, loaded);
    EXPECT_TRUE(write_model(loaded, fmt) == bytes);
    for (const Operator& op : loaded.operators) seen[static_cast<size_t>(op.op)] = true;
  }
  for (int32_t op = 0; op < CLTRAIN_OP_COUNT; ++op)
    if (find_op(op)->kind == CLTRAIN_KIND_MODEL && !find_op(op)->builtin_codes.empty()) {  // not a pass's fusion
      EXPECT_TRUE(seen[static_cast<size_t>(op)]) << cltrain_op_name(op);
    }
}

// A SLICE with its cuts in params only (what a SPLIT's output loads as) is written as the
// format's SLICE with a begin and size it makes; it reloads with the same cuts. One that cuts the
// batch axis loads, but fixes the batch.
TEST_P(RoundTrip, SlicePartsWriteTheirBeginAndSize) {
  for (const bool batch_cut : {false, true}) {
    ModelBuilder b(3);
    const int x = b.input({2, 6, 4});
    cltrain_op_params cut{};
    cut.pad_before[1] = 2, cut.pad_after[1] = 1, cut.pad_after[2] = 1, cut.pad_before[0] = batch_cut ? 1 : 0;
    b.output(b.op(CLTRAIN_OP_SLICE, {x}, cut, "part"));
    const Model built = b.build();
    ASSERT_EQ(built.operators[0].inputs.size(), 1u);
    EXPECT_EQ(built.tensors[static_cast<size_t>(built.outputs[0])].shape,
              (std::vector<int32_t>{batch_cut ? 1 : 2, 3, 3}));
    Model loaded = load_model_from_memory(write_model(built, GetParam()), "s");
    ASSERT_EQ(loaded.operators.size(), 1u);
    const Operator& op = loaded.operators[0];
    ASSERT_EQ(op.inputs.size(), 3u);  // x, begin, size
    EXPECT_EQ(int32_values(loaded.tensors[static_cast<size_t>(op.inputs[1])]),
              (std::vector<int32_t>{batch_cut ? 1 : 0, 2, 0}));
    EXPECT_EQ(int32_values(loaded.tensors[static_cast<size_t>(op.inputs[2])]),
              (std::vector<int32_t>{batch_cut ? 1 : -1, 3, 3}));  // all of the batch: -1
    EXPECT_EQ(0, std::memcmp(&op.params, &built.operators[0].params, sizeof(cltrain_op_params)));
    if (!batch_cut) {
      set_batch_size(loaded, 5);
      EXPECT_EQ(loaded.tensors[static_cast<size_t>(loaded.outputs[0])].shape, (std::vector<int32_t>{5, 3, 3}));
      continue;
    }
    try {
      set_batch_size(loaded, 5);
      ADD_FAILURE() << "a slice of the batch axis took another batch";
    } catch (const ModelError& e) {
      EXPECT_NE(
          std::string(e.what()).find("operator 0 (Slice): slices the batch axis, so the batch size cannot change"),
          std::string::npos)
          << e.what();
    }
  }
}

TEST_P(RoundTrip, NamedModels) {
  const std::string fmt = GetParam();
  for (const std::string& name : named_models()) {
    SCOPED_TRACE(name);
    const Model built = make_named_model(name, name == "mobilenetv2" ? 1 : 4);
    const std::vector<uint8_t> bytes = write_model(built, fmt);
    const Model loaded = load_model_from_memory(bytes, name + "." + fmt);
    expect_same_model(built, loaded);
    EXPECT_TRUE(write_model(loaded, fmt) == bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTrip, ::testing::Values("circle", "tflite"));

TEST(Model, MlpLayout) {
  const Model m = make_named_model("mlp", 32);
  EXPECT_EQ(count_parameters(m), 101770u);
  ASSERT_EQ(m.operators.size(), 3u);
  EXPECT_EQ(m.operators[0].op, CLTRAIN_OP_FULLY_CONNECTED);
  EXPECT_EQ(m.operators[0].params.activation, CLTRAIN_ACT_RELU);
  EXPECT_EQ(m.operators[1].op, CLTRAIN_OP_FULLY_CONNECTED);
  EXPECT_EQ(m.operators[1].params.activation, CLTRAIN_ACT_NONE);
  EXPECT_EQ(m.operators[2].op, CLTRAIN_OP_SOFTMAX);
  EXPECT_EQ(m.operators[2].params.beta, 1.0f);
  const std::vector<std::string> names = {"input",       "fc1/weights", "fc1/bias", "fc1",
                                          "fc2/weights", "fc2/bias",    "fc2",      "softmax"};
  ASSERT_EQ(m.tensors.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(m.tensors[i].name, names[i]);
  EXPECT_EQ(m.tensors[0].shape, std::vector<int32_t>({32, 784}));
  EXPECT_EQ(m.tensors[1].shape, std::vector<int32_t>({128, 784}));
  EXPECT_EQ(m.tensors[7].shape, std::vector<int32_t>({32, 10}));
  EXPECT_EQ(m.inputs, std::vector<int32_t>({0}));
  EXPECT_EQ(m.outputs, std::vector<int32_t>({7}));
}

TEST(Model, GlorotUniformWeightsZeroBias) {
  const Model m = make_named_model("mlp", 1);
  const struct {
    size_t w, b;
    double fan_in, fan_out;
  } layers[] = {{1, 2, 784, 128}, {4, 5, 128, 10}};
  for (const auto& l : layers) {
    const double limit = std::sqrt(6.0 / (l.fan_in + l.fan_out));
    const std::vector<float> w = floats(m.tensors[l.w]);
    double sum = 0, max_abs = 0;
    for (float v : w) {
      ASSERT_GE(v, -limit);
      ASSERT_LE(v, limit);
      sum += v;
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(v)));
    }
    EXPECT_GT(max_abs, 0.9 * limit);                     // spread over the whole range
    EXPECT_LT(std::fabs(sum / w.size()), 0.05 * limit);  // centred
    for (float v : floats(m.tensors[l.b])) EXPECT_EQ(v, 0.0f);
  }
  // Fixed seed: same model twice; another seed differs.
  EXPECT_TRUE(make_named_model("mlp", 1).tensors[1].data == m.tensors[1].data);
  ModelBuilder other(43);
  other.fully_connected(other.input({1, 784}), 128, CLTRAIN_ACT_RELU);
  EXPECT_FALSE(other.build().tensors[1].data == m.tensors[1].data);
}

TEST(Model, SetBatchSize) {
  Model m = test::tiny_model();
  set_batch_size(m, 5);
  for (const Tensor& t : m.tensors) {
    if (t.is_constant()) continue;
    EXPECT_EQ(t.shape[0], 5) << t.name;
  }
  EXPECT_EQ(m.tensors[1].shape, std::vector<int32_t>({3, 4}));  // weights untouched
  // The -1 of the reshape target stays; a concrete batch there follows the new batch.
  ModelBuilder b;
  int x = b.input({4, 2, 3});
  x = b.reshape(x, {4, 6});
  b.output(b.softmax(x));
  Model rm = b.build();
  set_batch_size(rm, 9);
  int32_t first;
  std::memcpy(&first, rm.tensors[1].data.data(), 4);
  EXPECT_EQ(first, 9);
  EXPECT_EQ(rm.tensors[2].shape, std::vector<int32_t>({9, 6}));
  // Still a valid model after the change.
  EXPECT_NO_THROW(load_model_from_memory(write_model(rm, "circle"), "r"));
}

TEST(Model, NamedModelsAndBuiltinNames) {
  EXPECT_EQ(named_models(), std::vector<std::string>({"mlp", "mnist-kaggle", "mobilenetv2", "branched", "cnn-tiny"}));
  EXPECT_STREQ(builtin_op_name(3), "CONV_2D");
  EXPECT_STREQ(builtin_op_name(92), "SQUARE");
  EXPECT_STREQ(builtin_op_name(161), "RIGHT_SHIFT");
  EXPECT_STREQ(builtin_op_name(-2), "INSTANCE_NORM");
  EXPECT_EQ(builtin_op_name(5000), nullptr);
  EXPECT_EQ(find_builtin(9)->op, CLTRAIN_OP_FULLY_CONNECTED);
  EXPECT_EQ(find_op(CLTRAIN_OP_SOFTMAX)->builtin_codes, std::vector<int32_t>{25});
  EXPECT_TRUE(find_op(CLTRAIN_OP_LOSS_MSE)->builtin_codes.empty());
  EXPECT_EQ(find_builtin(77), nullptr);  // SHAPE
}

TEST(Model, SaveAndLoadFile) {
  const std::string path = ::testing::TempDir() + "/cltrain_model_test_mlp.circle";
  const std::vector<uint8_t> bytes = write_model(make_named_model("mlp", 2), "circle");
  save_file_atomic(path, bytes);
  const Model m = load_model(path);
  EXPECT_EQ(m.format, "circle");
  EXPECT_TRUE(m.file == bytes);
  std::remove(path.c_str());
}

// Buffers of models over 2 GiB sit after the flatbuffer, addressed by offset and size.
TEST(Model, BufferDataOutsideFlatbuffer) {
  const Model tiny = test::tiny_model();
  const std::vector<uint8_t> bytes = write_model(tiny, "tflite");
  const uint32_t b = static_cast<uint32_t>(tiny.tensors[1].buffer);  // fc/weights
  std::vector<uint8_t> data;
  auto move_out = [&](uint64_t offset) {
    return test::edit_raw(bytes, [&](fb::ModelT& m) {
      data = m.buffers[b]->data;
      m.buffers[b]->data.clear();
      m.buffers[b]->offset = offset;
      m.buffers[b]->size = data.size();
    });
  };
  const std::vector<uint8_t> probe = move_out(2);
  const uint64_t offset = (probe.size() + 15) / 16 * 16;
  std::vector<uint8_t> file = move_out(offset);
  ASSERT_EQ(file.size(), probe.size());
  file.resize(offset);
  file.insert(file.end(), data.begin(), data.end());
  const Model m = load_model_from_memory(file, "big.tflite");
  EXPECT_TRUE(m.tensors[1].data == tiny.tensors[1].data);
}

// Files from older converters set only the byte-sized deprecated_builtin_code.
TEST(ModelCompat, OldStyleOperatorCodes) {
  const std::vector<uint8_t> b = test::edit_raw(write_model(make_named_model("mlp", 2), "tflite"), [](fb::ModelT& m) {
    for (auto& oc : m.operator_codes) oc->builtin_code = 0;
  });
  const Model m = load_model_from_memory(b, "old.tflite");
  EXPECT_EQ(m.operators[0].op, CLTRAIN_OP_FULLY_CONNECTED);
  EXPECT_EQ(m.operators[2].op, CLTRAIN_OP_SOFTMAX);
}

// Newer converters give every tensor a buffer of its own, empty for activations.
TEST(ModelCompat, EmptyBufferPerTensor) {
  const Model built = make_named_model("mlp", 2);
  const std::vector<uint8_t> b = test::edit_raw(write_model(built, "tflite"), [](fb::ModelT& m) {
    for (auto& t : m.subgraphs[0]->tensors) {
      if (t->buffer != 0) continue;
      t->buffer = static_cast<uint32_t>(m.buffers.size());
      m.buffers.push_back(std::make_unique<fb::BufferT>());
    }
  });
  const Model m = load_model_from_memory(b, "new.tflite");
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    EXPECT_EQ(m.tensors[i].buffer, built.tensors[i].buffer);  // 0 where there is no data
    EXPECT_TRUE(m.tensors[i].data == built.tensors[i].data);
  }
}

// circle's own operators have negative codes, with 127 in the byte field.
TEST(ModelCompat, neg_CircleOnlyOperator) {
  const std::vector<uint8_t> b = test::edit_raw(write_model(make_named_model("mlp", 2), "circle"), [](fb::ModelT& m) {
    m.operator_codes[1]->deprecated_builtin_code = 127;
    m.operator_codes[1]->builtin_code = -2;
  });
  EXPECT_EQ(test::load_error(b), "m.circle: operator 2: INSTANCE_NORM (builtin -2) is not supported");
}

}  // namespace
}  // namespace cltrain
