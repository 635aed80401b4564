// circle+ training info: reading the CIRCLE_TRAINING metadata, and serializing a TrainingInfo.
#include <cstring>
#include <string>

#include "circle_traininfo_generated.h"
#include "graph/labels.h"
#include "model/export.h"

namespace cltrain {

namespace ft = fbtrain;

namespace {

std::string source_of(const Model& m) { return m.source.empty() ? "model" : m.source; }

const char* optimizer_name(int32_t o) {
  return o == TrainingInfo::kSgd ? "SGD" : o == TrainingInfo::kAdam ? "ADAM" : "?";
}

const char* loss_options_name(ft::LossFnOptions t) {
  switch (t) {
    case ft::LossFnOptions::NONE: return "none";
    case ft::LossFnOptions::SparseCategoricalCrossentropyOptions: return "SparseCategoricalCrossentropyOptions";
    case ft::LossFnOptions::CategoricalCrossentropyOptions: return "CategoricalCrossentropyOptions";
    case ft::LossFnOptions::MeanSquaredErrorOptions: return "MeanSquaredErrorOptions";
  }
  return "an unknown options type";
}

// Why info cannot be used with a model of num_operators operators; "" if it can.
std::string check_info(const TrainingInfo& info, size_t num_operators) {
  if (info.optimizer != TrainingInfo::kSgd && info.optimizer != TrainingInfo::kAdam)
    return "optimizer " + std::to_string(info.optimizer) + " is unknown (SGD = 0, ADAM = 1)";
  if (info.loss < 0 || info.loss > 2)
    return "loss " + std::to_string(info.loss) +
           " is unknown (SPARSE_CATEGORICAL_CROSSENTROPY = 0, CATEGORICAL_CROSSENTROPY = 1, "
           "MEAN_SQUARED_ERROR = 2)";
  if (info.reduction != TrainingInfo::kSumOverBatchSize && info.reduction != TrainingInfo::kSum)
    return "loss reduction " + std::to_string(info.reduction) + " is unknown (SumOverBatchSize = 0, Sum = 1)";
  if (info.epochs < 0) return "epochs " + std::to_string(info.epochs) + " is negative";
  if (info.batch_size < 0) return "batch size " + std::to_string(info.batch_size) + " is negative";
  for (size_t i = 0; i < info.trainable_ops.size(); ++i) {
    const int32_t op = info.trainable_ops[i];
    if (op < 0 || static_cast<size_t>(op) >= num_operators)
      return "trainable op " + std::to_string(i) + ": operator index " + std::to_string(op) +
             " out of range (model has " + std::to_string(num_operators) + " operators)";
  }
  return "";
}

std::string identifier_str(const uint8_t* p) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f) {
      s += static_cast<char>(p[i]);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", p[i]);
      s += buf;
    }
  }
  return s;
}

}  // namespace

bool operator==(const TrainingInfo& a, const TrainingInfo& b) {
  return a.optimizer == b.optimizer && a.learning_rate == b.learning_rate && a.beta1 == b.beta1 && a.beta2 == b.beta2 &&
         a.epsilon == b.epsilon && a.loss == b.loss && a.from_logits == b.from_logits && a.epochs == b.epochs &&
         a.batch_size == b.batch_size && a.reduction == b.reduction && a.trainable_ops == b.trainable_ops;
}

std::optional<TrainingInfo> read_training_info(const Model& m) {
  const ModelMetadata* entry = nullptr;
  for (const ModelMetadata& md : m.metadata) {
    if (md.name == kTrainingInfoMetadataName) {
      entry = &md;
      break;
    }
  }
  if (!entry) return std::nullopt;
  const std::string what = source_of(m);
  const std::vector<uint8_t>& bytes = entry->data;
  auto invalid = [&](const std::string& why) {
    graph::fail(what, std::string(kTrainingInfoMetadataName) + " metadata is not a valid training-info flatbuffer (" +
                          why + ")");
  };
  if (bytes.empty()) invalid("buffer " + std::to_string(entry->buffer) + " is empty");
  if (bytes.size() < 8) invalid("only " + std::to_string(bytes.size()) + " bytes");
  if (!ft::ModelTrainingBufferHasIdentifier(bytes.data()))
    invalid("identifier '" + identifier_str(bytes.data() + 4) + "', expected '" + ft::ModelTrainingIdentifier() + "'");
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (!ft::VerifyModelTrainingBuffer(verifier)) invalid("flatbuffer verification failed");
  const ft::ModelTraining* mt = ft::GetModelTraining(bytes.data());

  auto unusable = [&](const std::string& why) {
    graph::fail(what, std::string(kTrainingInfoMetadataName) + " metadata: " + why);
  };
  TrainingInfo info;
  info.optimizer = static_cast<int32_t>(mt->optimizer());
  info.loss = static_cast<int32_t>(mt->lossfn());
  info.reduction = static_cast<int32_t>(mt->loss_reduction_type());
  info.epochs = mt->epochs();
  info.batch_size = mt->batch_size();
  if (const auto* ops = mt->trainable_ops()) info.trainable_ops.assign(ops->begin(), ops->end());
  std::string why = check_info(info, file_operator_count(m));
  if (!why.empty()) unusable(why);

  const ft::OptimizerOptions opt_type = mt->optimizer_opt_type();
  const ft::OptimizerOptions opt_want =
      info.optimizer == TrainingInfo::kSgd ? ft::OptimizerOptions::SGDOptions : ft::OptimizerOptions::AdamOptions;
  if (opt_type != opt_want || mt->optimizer_opt() == nullptr) {
    const char* found = opt_type == ft::OptimizerOptions::NONE          ? "none"
                        : opt_type == ft::OptimizerOptions::SGDOptions  ? "SGDOptions"
                        : opt_type == ft::OptimizerOptions::AdamOptions ? "AdamOptions"
                                                                        : "an unknown options type";
    if (opt_type == opt_want) found = "none";  // the type is set but the table is missing
    unusable(std::string("optimizer ") + optimizer_name(info.optimizer) + " needs " +
             (info.optimizer == TrainingInfo::kSgd ? "SGDOptions" : "AdamOptions") + ", found " + found);
  }
  if (const ft::SGDOptions* o = mt->optimizer_opt_as_SGDOptions()) {
    info.learning_rate = o->learning_rate();
  } else if (const ft::AdamOptions* o = mt->optimizer_opt_as_AdamOptions()) {
    info.learning_rate = o->learning_rate();
    // onert stores only the learning rate: fields left out keep the defaults.
    // (Generated tables derive privately from flatbuffers::Table, which has the presence test.)
    const auto* table = reinterpret_cast<const flatbuffers::Table*>(o);
    if (table->CheckField(ft::AdamOptions::VT_BETA_1)) info.beta1 = o->beta_1();
    if (table->CheckField(ft::AdamOptions::VT_BETA_2)) info.beta2 = o->beta_2();
    if (table->CheckField(ft::AdamOptions::VT_EPSILON)) info.epsilon = o->epsilon();
  }

  const ft::LossFnOptions loss_type = mt->lossfn_opt_type();
  const ft::LossFnOptions loss_want = static_cast<ft::LossFnOptions>(info.loss + 1);
  if (loss_type != ft::LossFnOptions::NONE && loss_type != loss_want)
    unusable("loss " + std::string(ft::EnumNameLossFn(mt->lossfn())) + " with " + loss_options_name(loss_type));
  if (const auto* o = mt->lossfn_opt_as_SparseCategoricalCrossentropyOptions()) info.from_logits = o->from_logits();
  if (const auto* o = mt->lossfn_opt_as_CategoricalCrossentropyOptions()) info.from_logits = o->from_logits();
  return info;
}

std::vector<uint8_t> serialize_training_info(const TrainingInfo& info, size_t num_operators) {
  const std::string why = check_info(info, num_operators);
  if (!why.empty()) throw ModelError("training info: " + why);
  flatbuffers::FlatBufferBuilder fbb(256);
  // Every scalar is written, so that a value equal to the schema default (e.g. beta_1 = 0)
  // reads back as itself rather than as "not stored".
  fbb.ForceDefaults(true);
  ft::OptimizerOptions opt_type;
  flatbuffers::Offset<void> opt;
  if (info.optimizer == TrainingInfo::kSgd) {
    opt_type = ft::OptimizerOptions::SGDOptions;
    opt = ft::CreateSGDOptions(fbb, info.learning_rate).Union();
  } else {
    opt_type = ft::OptimizerOptions::AdamOptions;
    opt = ft::CreateAdamOptions(fbb, info.learning_rate, info.beta1, info.beta2, info.epsilon).Union();
  }
  ft::LossFnOptions loss_type = static_cast<ft::LossFnOptions>(info.loss + 1);
  flatbuffers::Offset<void> loss_opt;
  switch (info.loss) {
    case TrainingInfo::kSparseCategoricalCrossentropy:
      loss_opt = ft::CreateSparseCategoricalCrossentropyOptions(fbb, info.from_logits).Union();
      break;
    case TrainingInfo::kCategoricalCrossentropy:
      loss_opt = ft::CreateCategoricalCrossentropyOptions(fbb, info.from_logits).Union();
      break;
    default: loss_opt = ft::CreateMeanSquaredErrorOptions(fbb).Union(); break;
  }
  const auto ops = fbb.CreateVector(info.trainable_ops);
  const auto root = ft::CreateModelTraining(fbb, /*version=*/0, static_cast<ft::Optimizer>(info.optimizer), opt_type,
                                            opt, static_cast<ft::LossFn>(info.loss), loss_type, loss_opt, info.epochs,
                                            info.batch_size, static_cast<ft::LossReductionType>(info.reduction), ops);
  ft::FinishModelTrainingBuffer(fbb, root);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

}  // namespace cltrain
