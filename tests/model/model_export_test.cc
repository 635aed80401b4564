// export_with_weights, circle+ training info (read_training_info, export_circleplus) and the
// loader's metadata and file offsets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "circle_traininfo_generated.h"
#include "model/export.h"
#include "test_util.h"

namespace cltrain {
namespace {

using ::testing::HasSubstr;
namespace ft = fbtrain;

// The models the tests run on: every op (convolutions, int32 operands) and the plain MLP.
std::vector<std::pair<std::string, Model>> models() {
  return {{"every-op", test::every_op_model()}, {"mlp", make_named_model("mlp", 2)}};
}

// New values for every float constant: old * -0.5 + k / 1024 (exact in float), all different.
std::map<int32_t, std::vector<float>> new_weights(const Model& m) {
  std::map<int32_t, std::vector<float>> w;
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const Tensor& x = m.tensors[t];
    if (!x.is_constant() || x.dtype != CLTRAIN_FLOAT32) continue;
    std::vector<float> v = test::floats(x);
    for (size_t k = 0; k < v.size(); ++k) v[k] = v[k] * -0.5f + static_cast<float>(k % 4096) / 1024.0f;
    w[static_cast<int32_t>(t)] = std::move(v);
  }
  return w;
}

// b's tensors, operators and metadata equal a's, except for the data of the tensors in w,
// which must equal w's values.
void expect_same_except_weights(const Model& a, const Model& b, const std::map<int32_t, std::vector<float>>& w) {
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
std::vector<uint8_t> move_buffers_outside(const std::vector<uint8_t>& bytes) {
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
size_t outside_buffers(const std::vector<uint8_t>& bytes) {
  size_t n = 0;
  for (const fb::Buffer* b : *fb::GetModel(bytes.data())->buffers())
    n += (!b->data() || b->data()->size() == 0) && b->offset() > 1;
  return n;
}

// bytes with extra buffers (the given contents) and metadata entries pointing to them.
std::vector<uint8_t> with_metadata(const std::vector<uint8_t>& bytes,
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
size_t first_data_offset(const Model& m) {
  size_t first = m.file.size();
  for (const Tensor& t : m.tensors)
    if (t.file_offset >= 0) first = std::min(first, static_cast<size_t>(t.file_offset));
  return first;
}

// Bytes of all constant tensors.
size_t parameter_and_operand_bytes(const Model& m) {
  size_t n = 0;
  for (const Tensor& t : m.tensors) n += t.data.size();
  return n;
}

std::string ident(const std::vector<uint8_t>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()) + 4, 4);
}

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
    for (size_t i = 0; i < loaded.tensors.size(); ++i) EXPECT_EQ(again.tensors[i].file_offset, loaded.tensors[i].file_offset);
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
    fm.subgraphs[0]->tensors[static_cast<size_t>(bias2)]->buffer = fm.subgraphs[0]->tensors[static_cast<size_t>(bias1)]->buffer;
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
  EXPECT_THAT(msg, HasSubstr("shared.tflite: cannot export weights: tensor " + std::to_string(b1) + " 'fc1/bias' shares"));
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
  EXPECT_THAT(export_error(m, {{shape, {1, 2}}}), HasSubstr("'flat/shape' is not a float32 constant (an int32 constant)"));
  EXPECT_THAT(export_error(m, {{0, {1, 2, 3, 4, 5, 6, 7, 8}}}),
              HasSubstr("tensor 0 'input' is not a float32 constant (it has no data in the model)"));
  EXPECT_EQ(export_error(m, {{-1, {}}}), "tiny.circle: cannot export weights: tensor index -1 out of range (model has " +
                                              std::to_string(m.tensors.size()) + " tensors)");
  EXPECT_THAT(export_error(m, {{static_cast<int32_t>(m.tensors.size()), {}}}), HasSubstr("out of range"));
}

// ---------------------------------------------------------------------------------------------
// Training info

std::vector<TrainingInfo> sample_infos(size_t num_ops) {
  std::vector<TrainingInfo> v;
  TrainingInfo sgd;
  sgd.optimizer = TrainingInfo::kSgd;
  sgd.learning_rate = 0.01f;
  sgd.loss = TrainingInfo::kMeanSquaredError;
  sgd.epochs = 5;
  sgd.batch_size = 32;
  v.push_back(sgd);
  TrainingInfo adam;
  adam.optimizer = TrainingInfo::kAdam;
  adam.learning_rate = 0.001f;
  adam.beta1 = 0.8f;
  adam.beta2 = 0.99f;
  adam.epsilon = 1e-6f;
  adam.loss = TrainingInfo::kCategoricalCrossentropy;
  adam.from_logits = true;
  adam.reduction = TrainingInfo::kSum;
  adam.epochs = 1;
  adam.batch_size = 2;
  adam.trainable_ops = {static_cast<int32_t>(num_ops) - 1, 0};
  v.push_back(adam);
  TrainingInfo zeros;  // values equal to the schema's defaults must survive
  zeros.optimizer = TrainingInfo::kAdam;
  zeros.learning_rate = 0;
  zeros.beta1 = zeros.beta2 = zeros.epsilon = 0;
  zeros.loss = TrainingInfo::kSparseCategoricalCrossentropy;
  v.push_back(zeros);
  return v;
}

class CirclePlus : public ::testing::TestWithParam<std::string> {};

TEST_P(CirclePlus, RoundTrip) {
  const std::string fmt = GetParam();
  for (const auto& [name, built] : models()) {
    SCOPED_TRACE(name);
    const Model loaded = load_model_from_memory(write_model(built, fmt), name + "." + fmt);
    EXPECT_FALSE(read_training_info(loaded).has_value());
    const auto w = new_weights(loaded);
    for (const TrainingInfo& info : sample_infos(loaded.operators.size())) {
      const std::vector<uint8_t> out = export_circleplus(loaded, w, info);
      EXPECT_EQ(ident(out), "CIR0");
      const Model again = load_model_from_memory(out, "plus.circle");
      EXPECT_EQ(again.format, "circle");
      expect_same_except_weights(loaded, again, w);
      const auto read = read_training_info(again);
      ASSERT_TRUE(read.has_value());
      EXPECT_TRUE(*read == info);
      ASSERT_EQ(again.metadata.size(), 1u);
      EXPECT_EQ(again.metadata[0].name, "CIRCLE_TRAINING");
      EXPECT_TRUE(again.metadata[0].data == serialize_training_info(info, loaded.operators.size()));

      // Exporting the circle+ model again: weights in place, the training info kept as it is.
      const auto w2 = new_weights(again);
      const Model third = load_model_from_memory(export_with_weights(again, w2), "third.circle");
      EXPECT_TRUE(*read_training_info(third) == info);
      expect_same_except_weights(again, third, w2);
    }
  }
}

TEST_P(CirclePlus, ReplacesTheTrainingInfoAndKeepsOtherMetadata) {
  const std::vector<uint8_t> bytes =
      with_metadata(write_model(make_named_model("mlp", 2), GetParam()),
                    {{"min_runtime_version", {'1', '.', '5', '.', '0', 0}}, {"CONVERSION_METADATA", {1, 2, 3}}});
  const Model loaded = load_model_from_memory(bytes, "m");
  ASSERT_EQ(loaded.metadata.size(), 2u);
  EXPECT_EQ(loaded.metadata[1].name, "CONVERSION_METADATA");
  EXPECT_TRUE(loaded.metadata[1].data == std::vector<uint8_t>({1, 2, 3}));
  const auto infos = sample_infos(loaded.operators.size());
  const Model first = load_model_from_memory(export_circleplus(loaded, {}, infos[0]), "first");
  const Model second = load_model_from_memory(export_circleplus(first, {}, infos[1]), "second");
  for (const Model* m : {&first, &second}) {
    ASSERT_EQ(m->metadata.size(), 3u);
    EXPECT_EQ(m->metadata[0].name, "min_runtime_version");
    EXPECT_TRUE(m->metadata[0].data == loaded.metadata[0].data);
    EXPECT_TRUE(m->metadata[1].data == loaded.metadata[1].data);
  }
  EXPECT_TRUE(*read_training_info(first) == infos[0]);
  EXPECT_TRUE(*read_training_info(second) == infos[1]);
  // The old entry's buffer was its own: reused, no new buffer.
  EXPECT_EQ(fb::GetModel(second.file.data())->buffers()->size(), fb::GetModel(first.file.data())->buffers()->size());
  EXPECT_EQ(second.metadata[2].buffer, first.metadata[2].buffer);
  // Weights untouched.
  expect_same_except_weights(loaded, second, {});
}

TEST_P(CirclePlus, BuffersOutsideTheFlatbufferStayOutside) {
  const std::vector<uint8_t> bytes = move_buffers_outside(write_model(test::every_op_model(), GetParam()));
  const Model loaded = load_model_from_memory(bytes, "big");
  const auto w = new_weights(loaded);
  const TrainingInfo info = sample_infos(loaded.operators.size())[1];
  const std::vector<uint8_t> out = export_circleplus(loaded, w, info);
  EXPECT_EQ(outside_buffers(out), outside_buffers(bytes));
  const Model again = load_model_from_memory(out, "out");
  expect_same_except_weights(loaded, again, w);
  EXPECT_TRUE(*read_training_info(again) == info);
  // All constant data after the flatbuffer, 16-byte aligned, and the file ends with the last.
  const size_t first = first_data_offset(again);
  size_t end = 0;
  for (const Tensor& t : again.tensors) {
    if (t.file_offset < 0) continue;
    EXPECT_EQ(t.file_offset % 16, 0);
    end = std::max(end, static_cast<size_t>(t.file_offset) + t.data.size());
  }
  EXPECT_EQ(end, out.size());
  EXPECT_LE(first, out.size() - parameter_and_operand_bytes(again));
}

INSTANTIATE_TEST_SUITE_P(Formats, CirclePlus, ::testing::Values("circle", "tflite"));

TEST(CirclePlus, BuiltInMemory) {
  const Model built = make_named_model("cnn-tiny", 2);
  const auto w = new_weights(built);
  const TrainingInfo info = sample_infos(built.operators.size())[0];
  const Model again = load_model_from_memory(export_circleplus(built, w, info), "out");
  expect_same_except_weights(built, again, w);
  EXPECT_TRUE(*read_training_info(again) == info);
}

// An SGD entry reads back with the Adam fields at their defaults; onert's Adam entries carry
// only the learning rate (and epochs = 0).
TEST(CirclePlus, DefaultsForFieldsNotStored) {
  const Model base = load_model_from_memory(write_model(test::tiny_model(), "circle"), "t");
  flatbuffers::FlatBufferBuilder fbb;
  const auto opt = ft::CreateAdamOptions(fbb, 0.005f).Union();
  const auto loss = ft::CreateCategoricalCrossentropyOptions(fbb).Union();
  std::vector<int32_t> ops = {1, 2};
  fbb.Finish(ft::CreateModelTrainingDirect(fbb, 0, ft::Optimizer::ADAM, ft::OptimizerOptions::AdamOptions, opt,
                                           ft::LossFn::CATEGORICAL_CROSSENTROPY,
                                           ft::LossFnOptions::CategoricalCrossentropyOptions, loss, 0, 16,
                                           ft::LossReductionType::SumOverBatchSize, &ops),
             ft::ModelTrainingIdentifier());
  const std::vector<uint8_t> tr(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  const Model m = load_model_from_memory(with_metadata(base.file, {{"CIRCLE_TRAINING", tr}}), "onert.circle");
  const TrainingInfo info = *read_training_info(m);
  TrainingInfo want;
  want.optimizer = TrainingInfo::kAdam;
  want.learning_rate = 0.005f;
  want.loss = TrainingInfo::kCategoricalCrossentropy;
  want.batch_size = 16;
  want.trainable_ops = {1, 2};
  EXPECT_TRUE(info == want);
  EXPECT_EQ(info.beta1, 0.9f);
  EXPECT_EQ(info.beta2, 0.999f);
  EXPECT_EQ(info.epsilon, 1e-7f);
  EXPECT_EQ(info.epochs, 0);

  TrainingInfo sgd;
  sgd.optimizer = TrainingInfo::kSgd;
  sgd.beta1 = 0.5f;  // not an SGD field: not stored
  const Model s = load_model_from_memory(export_circleplus(base, {}, sgd), "sgd.circle");
  EXPECT_EQ(read_training_info(s)->beta1, 0.9f);
}

// The message of read_training_info on bytes as the CIRCLE_TRAINING buffer of the tiny model.
std::string training_info_error(const std::vector<uint8_t>& tr) {
  const std::vector<uint8_t> base = write_model(test::tiny_model(), "circle");
  Model m;
  try {
    m = load_model_from_memory(with_metadata(base, {{"CIRCLE_TRAINING", tr}}), "m.circle");
  } catch (const ModelError& e) {
    return std::string("load failed: ") + e.what();
  }
  try {
    read_training_info(m);
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a ModelError: " << e.what();
  }
  return "";
}

const char kInvalid[] = "m.circle: CIRCLE_TRAINING metadata is not a valid training-info flatbuffer (";

std::vector<uint8_t> valid_training_info() {
  return serialize_training_info(sample_infos(4)[1], 4);
}

TEST(CirclePlus, neg_TrainingInfoRandomBytes) {
  std::mt19937 rng(5);
  for (size_t n : {8, 13, 64, 300}) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    b[4] = 'C', b[5] = 'T', b[6] = 'R', b[7] = '0';  // past the identifier check
    const std::string msg = training_info_error(b);
    EXPECT_EQ(msg, std::string(kInvalid) + "flatbuffer verification failed)") << n;
  }
  std::vector<uint8_t> b(64);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  EXPECT_THAT(training_info_error(b), HasSubstr(std::string(kInvalid) + "identifier '"));
}

TEST(CirclePlus, neg_TrainingInfoWrongIdentifier) {
  std::vector<uint8_t> b = valid_training_info();
  std::memcpy(b.data() + 4, "CTR1", 4);
  EXPECT_EQ(training_info_error(b), std::string(kInvalid) + "identifier 'CTR1', expected 'CTR0')");
  // A whole circle model where the training info should be.
  EXPECT_EQ(training_info_error(write_model(test::tiny_model(), "circle")),
            std::string(kInvalid) + "identifier 'CIR0', expected 'CTR0')");
  b[4] = 1;
  EXPECT_EQ(training_info_error(b), std::string(kInvalid) + "identifier '\\x01TR1', expected 'CTR0')");
}

TEST(CirclePlus, neg_TrainingInfoTruncated) {
  const std::vector<uint8_t> full = valid_training_info();
  EXPECT_EQ(training_info_error(full), "");
  for (size_t n = 8; n < full.size(); ++n)
    EXPECT_EQ(training_info_error(std::vector<uint8_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n))),
              std::string(kInvalid) + "flatbuffer verification failed)")
        << n;
  EXPECT_EQ(training_info_error({'a', 'b', 'c'}), std::string(kInvalid) + "only 3 bytes)");
  // An entry pointing to an empty buffer.
  EXPECT_THAT(training_info_error({}), HasSubstr(std::string(kInvalid) + "buffer "));
  EXPECT_THAT(training_info_error({}), HasSubstr(" is empty)"));
}

// A ModelTraining flatbuffer built by hand, for contents the verifier accepts.
std::vector<uint8_t> raw_info(int8_t optimizer, ft::OptimizerOptions opt_type, int8_t loss, ft::LossFnOptions loss_type,
                              int8_t reduction, std::vector<int32_t> ops, int32_t epochs = 1) {
  flatbuffers::FlatBufferBuilder fbb;
  flatbuffers::Offset<void> opt = opt_type == ft::OptimizerOptions::SGDOptions ? ft::CreateSGDOptions(fbb, 0.1f).Union()
                                  : opt_type == ft::OptimizerOptions::AdamOptions
                                      ? ft::CreateAdamOptions(fbb, 0.1f).Union()
                                      : flatbuffers::Offset<void>();
  flatbuffers::Offset<void> lo;
  if (loss_type == ft::LossFnOptions::MeanSquaredErrorOptions) lo = ft::CreateMeanSquaredErrorOptions(fbb).Union();
  if (loss_type == ft::LossFnOptions::CategoricalCrossentropyOptions)
    lo = ft::CreateCategoricalCrossentropyOptions(fbb, true).Union();
  fbb.Finish(ft::CreateModelTrainingDirect(fbb, 0, static_cast<ft::Optimizer>(optimizer), opt_type, opt,
                                           static_cast<ft::LossFn>(loss), loss_type, lo, epochs, 8,
                                           static_cast<ft::LossReductionType>(reduction), &ops),
             ft::ModelTrainingIdentifier());
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

TEST(CirclePlus, neg_TrainingInfoUnusableContents) {
  using O = ft::OptimizerOptions;
  using L = ft::LossFnOptions;
  const std::string p = "m.circle: CIRCLE_TRAINING metadata: ";
  EXPECT_EQ(training_info_error(raw_info(0, O::SGDOptions, 2, L::MeanSquaredErrorOptions, 0, {0})), "");
  EXPECT_EQ(training_info_error(raw_info(0, O::SGDOptions, 2, L::NONE, 1, {})), "");
  EXPECT_EQ(training_info_error(raw_info(7, O::SGDOptions, 2, L::NONE, 0, {})),
            p + "optimizer 7 is unknown (SGD = 0, ADAM = 1)");
  EXPECT_THAT(training_info_error(raw_info(0, O::SGDOptions, 3, L::NONE, 0, {})), HasSubstr(p + "loss 3 is unknown"));
  EXPECT_EQ(training_info_error(raw_info(0, O::SGDOptions, 2, L::NONE, 2, {})),
            p + "loss reduction 2 is unknown (SumOverBatchSize = 0, Sum = 1)");
  EXPECT_EQ(training_info_error(raw_info(1, O::SGDOptions, 2, L::NONE, 0, {})),
            p + "optimizer ADAM needs AdamOptions, found SGDOptions");
  EXPECT_EQ(training_info_error(raw_info(0, O::NONE, 2, L::NONE, 0, {})), p + "optimizer SGD needs SGDOptions, found none");
  EXPECT_EQ(training_info_error(raw_info(0, O::SGDOptions, 2, L::CategoricalCrossentropyOptions, 0, {})),
            p + "loss MEAN_SQUARED_ERROR with CategoricalCrossentropyOptions");
  EXPECT_EQ(training_info_error(raw_info(0, O::SGDOptions, 2, L::NONE, 0, {0, 4})),
            p + "trainable op 1: operator index 4 out of range (model has 4 operators)");
  EXPECT_THAT(training_info_error(raw_info(0, O::SGDOptions, 2, L::NONE, 0, {-1})), HasSubstr("operator index -1"));
  EXPECT_EQ(training_info_error(raw_info(0, O::SGDOptions, 2, L::NONE, 0, {}, -3)), p + "epochs -3 is negative");
}

TEST(CirclePlus, neg_ExportInvalidInfo) {
  const Model m = load_model_from_memory(write_model(test::tiny_model(), "circle"), "tiny.circle");
  TrainingInfo info;
  info.loss = 9;
  try {
    export_circleplus(m, {}, info);
    FAIL() << "exported an unknown loss";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tiny.circle: cannot export circle+: training info: loss 9 is unknown"));
  }
  info = TrainingInfo{};
  info.trainable_ops = {4};
  EXPECT_THROW(export_circleplus(m, {}, info), ModelError);
  // Bad weights are reported as export_with_weights does.
  info.trainable_ops = {};
  EXPECT_THROW(export_circleplus(m, {{0, {1}}}, info), ModelError);
}

// ---------------------------------------------------------------------------------------------
// The loader's side

TEST(ModelLoad, neg_MetadataBufferOutOfRange) {
  const std::vector<uint8_t> b = test::edit_raw(write_model(test::tiny_model(), "circle"), [](fb::ModelT& m) {
    auto md = std::make_unique<fb::MetadataT>();
    md->name = "CIRCLE_TRAINING";
    md->buffer = 99;
    m.metadata.push_back(std::move(md));
  });
  EXPECT_THAT(test::load_error(b), HasSubstr("m.circle: metadata 0 'CIRCLE_TRAINING': buffer index 99 out of range"));
}

TEST(ModelLoad, FileOffsetsPointAtTheData) {
  for (const char* fmt : {"circle", "tflite"}) {
    const Model m = load_model_from_memory(write_model(test::every_op_model(), fmt), "m");
    EXPECT_EQ(m.source, "m");
    for (const Tensor& t : m.tensors) {
      if (!t.is_constant()) {
        EXPECT_EQ(t.file_offset, -1);
        continue;
      }
      ASSERT_GE(t.file_offset, 0);
      EXPECT_EQ(t.file_offset % 16, 0);  // Buffer.data is 16-byte aligned
      EXPECT_EQ(0, std::memcmp(m.file.data() + t.file_offset, t.data.data(), t.data.size()));  // little-endian host
    }
  }
  EXPECT_EQ(test::tiny_model().tensors[1].file_offset, -1);
}

// Damaged circle+ files: loading and reading the training info give ModelError or succeed.
TEST(ModelFuzz, neg_CirclePlusChangeEveryByte) {
  const Model base = load_model_from_memory(write_model(test::tiny_model(), "circle"), "t");
  const std::vector<uint8_t> full = export_circleplus(base, new_weights(base), sample_infos(4)[1]);
  int rejected = 0, loaded = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t mask : {0x01, 0x10, 0x80, 0xff}) {
      std::vector<uint8_t> b = full;
      b[i] ^= mask;
      try {
        const Model m = load_model_from_memory(b, "fuzz.circle");
        read_training_info(m);
        ++loaded;
      } catch (const ModelError& e) {
        ++rejected;
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "byte " << i << ": not a ModelError: " << e.what();
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace cltrain
