// circle+ training info (read_training_info, export_circleplus), and the loader's metadata and
// file offsets.
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

std::vector<uint8_t> valid_training_info() { return serialize_training_info(sample_infos(4)[1], 4); }

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
  EXPECT_EQ(training_info_error(raw_info(0, O::NONE, 2, L::NONE, 0, {})),
            p + "optimizer SGD needs SGDOptions, found none");
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
