// The one list of rewrite passes (passes.h), in the order they run.
#include "passes/passes.h"

#include <algorithm>
#include <cstdlib>

namespace cltrain {

// Each pass lives in its own file; the comment names it.
std::string state_updates_pass(PassInput&);         // state_updates.cc
std::string masks_pass(PassInput&);                 // masks.cc
std::string while_loops_pass(PassInput&);           // while_loops.cc
std::string compares_pass(PassInput&);              // compares.cc
std::string selects_pass(PassInput&);               // masks.cc
std::string index_guards_pass(PassInput&);          // index_guards.cc
std::string shape_operators_pass(PassInput&);       // shape_ops.cc
std::string dilated_convolutions_pass(PassInput&);  // dilated_convolutions.cc
std::string split_slices_pass(PassInput&);          // slices.cc
std::string squeeze_expand_pass(PassInput&);        // squeeze_expand.cc
std::string packs_pass(PassInput&);                 // packs.cc
std::string sequence_lstms_pass(PassInput&);        // sequence_lstms.cc
std::string reverses_pass(PassInput&);              // reverses.cc
std::string embedding_lookups_pass(PassInput&);     // embedding_lookups.cc
std::string log_softmax_pass(PassInput&);           // log_softmax_fold.cc
std::string folded_biases_pass(PassInput&);         // folded_biases.cc
std::string row_reshapes_pass(PassInput&);          // row_reshapes.cc
std::string transposed_unpacks_pass(PassInput&);    // slices.cc
std::string broadcast_ranks_pass(PassInput&);       // broadcast_ranks.cc
std::string untie_constants_pass(PassInput&);       // untie_constants.cc
std::string missing_biases_pass(PassInput&);        // missing_biases.cc
std::string lora_pass(PassInput&);                  // lora.cc
std::string pad_fusion_pass(PassInput&);            // pad_fusion.cc
std::string lstm_cells_pass(PassInput&);            // recurrent_cells.cc
std::string gru_cells_pass(PassInput&);             // recurrent_cells.cc
std::string activation_fusion_pass(PassInput&);     // activation_fusion.cc
std::string sequence_projections_pass(PassInput&);  // sequence_projections.cc

const std::vector<Pass>& pass_list() {
  static const std::vector<Pass> list = {
      // import: variable updates left out, masks as floats, then loops unrolled (their steps are then the file's
      // operators to the rest),
      // the guards (their operators are then no one's), comparisons of floats as 0/1 masks and the
      // selects they drive, then what the host computes, then the
      // slicing operators; the rest load as their descriptor's operator.
      {"state-updates", PassStage::kImport, state_updates_pass},
      {"masks", PassStage::kImport, masks_pass},
      {"while-loops", PassStage::kImport, while_loops_pass},
      {"index-guards", PassStage::kImport, index_guards_pass},
      {"compares", PassStage::kImport, compares_pass},
      {"selects", PassStage::kImport, selects_pass},
      {"shape-operators", PassStage::kImport, shape_operators_pass},
      {"dilated-convolutions", PassStage::kImport, dilated_convolutions_pass},
      {"split-slices", PassStage::kImport, split_slices_pass},
      {"squeeze-expand", PassStage::kImport, squeeze_expand_pass},
      {"packs", PassStage::kImport, packs_pass},
      {"reverses", PassStage::kImport, reverses_pass},
      {"sequence-lstms", PassStage::kImport, sequence_lstms_pass},
      {"embedding-lookups", PassStage::kImport, embedding_lookups_pass},
      {"log-softmax", PassStage::kImport, log_softmax_pass},
      // load (after the shape operators are computed): folds that read the loaded operators,
      // then the ranks the graph check compares.
      {"folded-biases", PassStage::kLoad, folded_biases_pass},
      {"row-reshapes", PassStage::kLoad, row_reshapes_pass},
      {"transposed-unpacks", PassStage::kLoad, transposed_unpacks_pass},
      {"broadcast-ranks", PassStage::kLoad, broadcast_ranks_pass},
      // setup: as the framework the model came from trains it (docs/training-rules.md), then LoRA.
      {"untie-constants", PassStage::kSetup, untie_constants_pass},
      {"missing-biases", PassStage::kSetup, missing_biases_pass},
      {"lora", PassStage::kSetup, lora_pass},
      // training: the training graph's own copy of the operators.
      {"pad-fusion", PassStage::kTraining, pad_fusion_pass},
      {"lstm-cells", PassStage::kTraining, lstm_cells_pass},
      {"gru-cells", PassStage::kTraining, gru_cells_pass},
      {"activation-fusion", PassStage::kTraining, activation_fusion_pass},
      {"sequence-projections", PassStage::kTraining, sequence_projections_pass},  // last: adds a tensor
  };
  return list;
}

void fold_operators(Model& m, const std::vector<bool>& drop) {
  std::vector<Operator> kept;
  for (size_t i = 0; i < m.operators.size(); ++i) {
    if (drop[i])
      m.folded_ops.push_back(m.operators[i].file_index);
    else
      kept.push_back(std::move(m.operators[i]));
  }
  m.operators = std::move(kept);
  std::sort(m.folded_ops.begin(), m.folded_ops.end());
}

namespace {

// A training pass only fuses what the training graph would run anyway: CLTRAIN_SKIP_TRAINING_PASSES
// (names, comma-separated) leaves those it names out, so that a difference can be bisected and a
// test can hold a fusion to the graph without it.
bool skipped(const Pass& p, const PassInput& in) {
  if (p.stage != PassStage::kTraining) return false;
  if (in.skip && std::find(in.skip->begin(), in.skip->end(), p.name) != in.skip->end()) return true;
  const char* env = std::getenv("CLTRAIN_SKIP_TRAINING_PASSES");
  if (!env) return false;
  const std::string names = std::string(",") + env + ",";
  return names.find(std::string(",") + p.name + ",") != std::string::npos;
}

}  // namespace

std::vector<Rewrite> run_passes(PassStage stage, PassInput& in) {
  std::vector<Rewrite> log;
  for (const Pass& p : pass_list()) {
    if (p.stage != stage || skipped(p, in)) continue;
    std::string change = p.run(in);
    if (!change.empty()) log.push_back({p.name, std::move(change)});
  }
  return log;
}

}  // namespace cltrain
