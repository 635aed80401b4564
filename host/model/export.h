// Writing a model back with new (trained) weights, and the training information of "circle+"
// files: a circle Metadata entry named "CIRCLE_TRAINING" whose buffer holds a separate
// flatbuffer (schema/circle_traininfo.fbs, table ModelTraining, identifier "CTR0").
//
// Every function here throws ModelError with one line on a problem with its arguments or the
// model; nothing else, except std::bad_alloc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "model/model.h"

namespace cltrain {

// The metadata name of circle+ training info.
inline constexpr const char kTrainingInfoMetadataName[] = "CIRCLE_TRAINING";

// m.file with the data of each listed tensor (key: tensor index in the model) replaced by the
// given floats, written little endian, and every other byte unchanged: the same layout and
// size, only the weight bytes differ, wherever they lie (inside the flatbuffer, or after it for
// offset/size buffers). Works for circle and tflite alike; the result loads again in cltrain
// and in any tflite/circle reader. Tensors not listed keep their bytes.
//
// Throws ModelError if an index is out of range or not a float32 constant, if a value count
// differs from the tensor's element count, or if a listed tensor shares its bytes in the file
// with another tensor (converters may store identical constants once) and the two would end up
// with different values.
//
// A model built in memory (m.file empty, e.g. ModelBuilder::build()) has no layout to keep:
// then the result is write_model(m with the new data, m.format) (format "circle" if m.format is
// empty).
std::vector<uint8_t> export_with_weights(const Model& m, const std::map<int32_t, std::vector<float>>& weights);

// The trained model as a file of format ("circle": identifier CIR0, "tflite": TFL3; the two share
// their tables, so a model loaded as one is written as the other by its identifier). Where the
// runtime added tensors or rewired operators (passes/model_edits.h), the file is rebuilt as
// export_circleplus describes, without the training info; else it is export_with_weights with the
// identifier of format.
std::vector<uint8_t> export_model(const Model& m, const std::map<int32_t, std::vector<float>>& weights,
                                  const std::string& format);

// Training information as the circle+ format stores it. Codes are the format's, which differ
// from onert_train's command line (--optimizer 1 = SGD, 2 = Adam; --loss 1 = MSE, 2 = CCE;
// --loss_reduction_type 1 = sum over batch size, 2 = sum).
struct TrainingInfo {
  static constexpr int32_t kSgd = 0, kAdam = 1;                 // optimizer
  static constexpr int32_t kSparseCategoricalCrossentropy = 0,  // loss
      kCategoricalCrossentropy = 1, kMeanSquaredError = 2;
  static constexpr int32_t kSumOverBatchSize = 0, kSum = 1;  // reduction

  int32_t optimizer = kSgd;
  // beta1, beta2 and epsilon are Adam's. Reading an SGD entry leaves them at these defaults;
  // reading an Adam entry that omits them (onert writes only the learning rate) gives these
  // defaults too (Keras', and the ones onert uses).
  float learning_rate = 0.001f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;
  int32_t loss = kCategoricalCrossentropy;
  bool from_logits = false;  // (sparse) categorical cross-entropy only; false for MSE
  // 0: not stored (onert writes epochs = 0); the command line's defaults apply then.
  int32_t epochs = 0, batch_size = 0;
  int32_t reduction = kSumOverBatchSize;
  // Indices of the operators to train, in the order stored. Absent and empty read the same.
  std::vector<int32_t> trainable_ops;
};

bool operator==(const TrainingInfo& a, const TrainingInfo& b);
inline bool operator!=(const TrainingInfo& a, const TrainingInfo& b) { return !(a == b); }

// The training info of m: its first metadata entry named "CIRCLE_TRAINING"; nullopt if there is
// none. Throws ModelError "<source>: CIRCLE_TRAINING metadata is not a valid training-info
// flatbuffer (<why>)" for a buffer that is empty, too short, has another identifier than CTR0 or
// fails flatbuffer verification, and "<source>: CIRCLE_TRAINING metadata: <why>" for contents
// cltrain cannot use: an unknown optimizer, loss or reduction code, optimizer options that are
// missing or of the other optimizer, loss options of another loss, negative epochs or batch
// size, or a trainable op index that is not one of m's operators. (<source>: m.source, or
// "model" for a model not loaded from a file.)
std::optional<TrainingInfo> read_training_info(const Model& m);

// The serialized ModelTraining flatbuffer (identifier CTR0, schema version 0) of info; every
// scalar is stored, even where it equals the schema's default. Throws ModelError for contents
// that read_training_info would refuse (trainable ops are checked against num_operators).
std::vector<uint8_t> serialize_training_info(const TrainingInfo& info, size_t num_operators);

// export_with_weights(m, weights) with a "CIRCLE_TRAINING" metadata entry holding info, as a
// circle file (identifier CIR0, also for a tflite m). The file is rebuilt (flatbuffers object
// API: unpack, edit, pack): existing CIRCLE_TRAINING entries are dropped and one new entry points
// to a buffer holding serialize_training_info(info): the old entry's buffer if nothing else
// refers to it, else a new buffer at the end. Buffers kept outside the flatbuffer (offset/size)
// stay outside, after it, in buffer order, 16-byte aligned. Everything else is kept as far as
// schema/circle.fbs declares it; what that subset leaves out (e.g. quantization details,
// Operator.builtin_options_2, deprecated fields) is not written.
std::vector<uint8_t> export_circleplus(const Model& m, const std::map<int32_t, std::vector<float>>& weights,
                                       const TrainingInfo& info);

}  // namespace cltrain
