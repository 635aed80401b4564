// The training graph: from a model, the tensors and steps one training iteration runs, with a
// role for every tensor.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"
#include "model/model.h"

namespace cltrain {

// Per-operator trainable configuration (onert-micro's rank types, plus "not trained").
constexpr int32_t kRankNone = -1;
constexpr int32_t kRankAll = 0;       // every weight of the op
constexpr int32_t kRankOnlyBias = 1;  // only the bias: the op keeps no input for backward
// Half of the weight's (and bias's) output dimension, FullyConnected and Conv2D only: UPPER is
// output rows [0, O/2), LOWER rows [O/2, O). The gradient is computed whole; the update and the
// optimizer state cover the half.
constexpr int32_t kRankUpperHalf = 2;
constexpr int32_t kRankLowerHalf = 3;

struct TrainOptions {
  int32_t loss = CLTRAIN_OP_LOSS_CCE;  // CLTRAIN_OP_LOSS_MSE, CLTRAIN_OP_LOSS_CCE or CLTRAIN_OP_LOSS_CCE_LOGITS
  int32_t reduction = CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE;
  int32_t optimizer = CLTRAIN_OP_UPDATE_ADAM;  // CLTRAIN_OP_UPDATE_SGD or CLTRAIN_OP_UPDATE_ADAM
  float learning_rate = 0.001f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;
  int32_t num_trainable_ops = -1;  // -1: all, 0: none, N: the last N operators
  std::vector<int32_t> op_ranks;   // per operator (kRank*); when given, overrides num_trainable_ops
  // Training passes left out (their names; as CLTRAIN_SKIP_TRAINING_PASSES): the engine leaves
  // out sequence-projections where its graph does not fit the memory budget.
  std::vector<std::string> skip_training_passes;
};

struct TrainingGraph {
  TrainingGraph() = default;
  TrainingGraph(const TrainingGraph&) = delete;  // descriptors point into `names`
  TrainingGraph& operator=(const TrainingGraph&) = delete;
  TrainingGraph(TrainingGraph&&) = default;
  TrainingGraph& operator=(TrainingGraph&&) = default;

  // Model tensors keep their model index as id; the training graph appends the expected output,
  // the loss, back-prop, gradient, disposable and optimizer tensors. Lifetimes are left at -1:
  // they depend on placement.
  std::vector<cltrain_tensor_desc> tensors;
  std::vector<cltrain_step_desc> steps;
  std::vector<int32_t> owner_step;  // per step: the step whose backend it follows (-1: itself)
  std::vector<int32_t> recomputes;  // per step: the forward step it runs again (recompute.h), -1 for
                                    // none; empty when nothing is recomputed
  int32_t num_forward = 0;          // steps [0, num_forward) run the model forward
  int32_t loss_step = 0;            // == num_forward: the loss forward step
  int32_t input = -1, expected = -1, loss = -1, prediction = -1;
  // 0 after the CHECK_FINITE steps when the loss and every gradient the updates read are finite,
  // else 1; the host reads it before the updates (plan.h's gate). -1 when nothing trains.
  int32_t finite_flag = -1;
  std::vector<int32_t> weights;                               // trainable weight tensors, in model order
  std::map<int32_t, std::pair<int32_t, int32_t>> adam_state;  // weight -> (m, v)
  std::vector<int32_t> op_ranks;                              // per model operator, as trained (kRank*)
  std::map<int32_t, int32_t> folded_into;  // model operator without steps -> the one that does its work
  std::vector<Rewrite> rewrites;           // what the training passes changed (passes/passes.h)

  const char* name_of(int32_t t) const { return tensors[static_cast<size_t>(t)].name; }

  // Storage for the names and initial weights the descriptors point to.
  std::deque<std::string> names;
  std::deque<std::vector<uint8_t>> initial_data;
};

// Builds the training graph of a model (whose batch is already set). Throws ModelError when the
// model cannot be trained (no float input, output shape that the loss cannot take, ...).
TrainingGraph build_training_graph(const Model& model, const TrainOptions& options);

}  // namespace cltrain
