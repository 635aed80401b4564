// host/passes: every rewrite cltrain makes to a user's model, one file per rewrite, run in the
// order of one list (passes.cc). A pass belongs to the stage that has what it reads:
//
//   import    the file's operators as the loader reads them, before any becomes a model operator
//             (a pass decides a file operator's fate: folded, computed on the host, or lowered)
//   load      the loaded model (Model::operators), before the graph check
//   setup     the model as the session prepares it, with the user's choices (biases, LoRA)
//   training  the training graph's copy of the operators (what only training changes)
//
// Each pass returns one line saying what it changed in this model, or "" when it changed nothing;
// run_passes collects the lines (Model::rewrites), which `cltrain plan`, the report and the C
// API's info show. Adding a rewrite: one file here and one line in the list (docs/adding-a-pass.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "passes/model_edits.h"

namespace cltrain {

namespace fb {
struct Operator;
}

enum class PassStage { kImport, kLoad, kSetup, kTraining };

// One operator of the file as the import passes see it. The loader makes one per file operator
// and lowers those no pass took to their descriptor's operator (ops/op_descriptor.h).
struct FileOperator {
  enum class Fate { kPending, kFolded, kHost, kLowered };
  int32_t index = -1;                // in the file's subgraph
  int32_t code = -1;                 // its builtin code
  const fb::Operator* op = nullptr;  // the file's operator (its options)
  std::vector<int32_t> inputs, outputs;
  std::string label;  // "operator 12", for messages
  Fate fate = Fate::kPending;
  std::vector<Operator> lowered;  // kLowered: the model operators it became, in order
  // A copy of another file operator's body (a WHILE loop's step, passes/while_loops.cc): index is
  // that operator's, and what it becomes are parts of it (export writes the loop as it was).
  bool part = false;
  int32_t body_subgraph = -1, body_op = -1;  // the body's operator a step copies (-1: none)
};

// A subgraph of the file other than the main one (a WHILE loop's condition or body), read when a
// pass asks for it: its tensors loaded as the main graph's are (constants with their data and file
// offsets), its operators checked as the main graph's, indices local to the subgraph.
struct FileSubgraph {
  std::string name;
  std::vector<Tensor> tensors;
  std::vector<std::vector<int32_t>> signatures;  // per tensor: its shape_signature ({}: none)
  std::vector<int32_t> inputs, outputs;
  std::vector<FileOperator> ops;
};
// Subgraph k of the file (k >= 1); throws ModelError where there is none or it does not load.
using SubgraphReader = std::function<const FileSubgraph&(int32_t k)>;

// The user's choices the setup passes read, and what they give back to the session.
struct SetupChoices {
  bool add_missing_biases = false;
  int32_t lora_rank = 0;     // 0: no LoRA
  float lora_alpha = 0.0f;   // alpha / rank scales the adapters' sum
  std::vector<bool> chosen;  // per operator: LoRA adapts it (the trainable choice)
};
struct SetupResults {
  std::vector<std::string> warnings;  // lines for the user (a missing bias kept missing)
  std::vector<LoraAdapter> lora;      // the adapters added
  Model base;                         // the model just before LoRA's adapters (for the merged export)
};

// The training stage's input: the operators as trained, which pad fusion may rewrite.
struct TrainingOps {
  const Model& model;  // read only: the training passes change the training graph's copy alone
  std::vector<Operator>& ops;
  std::vector<bool>& fused;                 // per operator: folded into another (not run)
  std::map<int32_t, int32_t>& folded_into;  // folded operator -> the operator it went into
  int32_t prediction = -1;                  // the tensor the loss reads (never folded away)
  // The operators in the order their forward steps run (a topological one; backward: reversed). A
  // pass may move an operator later, before its first reader.
  std::vector<size_t>* order = nullptr;
  // A tensor the training graph adds (float32, computed), its index after the model's: only the
  // last pass of the list may add one (the others size their tables by the model's tensors).
  std::function<int32_t(const std::string& name, const std::vector<int32_t>& shape)> add_tensor;
};

struct PassInput {
  Model* m;                                        // import, load, setup: the model rewritten; training: none
  const std::string& what;                         // the model's name for errors
  std::vector<FileOperator>* file = nullptr;       // import stage
  const SubgraphReader* subgraphs = nullptr;       // import stage: the file's other subgraphs
  const SetupChoices* choices = nullptr;           // setup stage
  SetupResults* results = nullptr;                 // setup stage
  TrainingOps* training = nullptr;                 // training stage
  const std::vector<std::string>* skip = nullptr;  // training stage: passes left out (by name)
};

// Takes the operators marked in drop out of m.operators into Model::folded_ops (the file keeps
// them: export writes them back), in file order.
void fold_operators(Model& m, const std::vector<bool>& drop);

struct Pass {
  const char* name;  // "untie-constants"
  PassStage stage;
  std::string (*run)(PassInput& in);
};

// The passes in the order they run (stage by stage).
const std::vector<Pass>& pass_list();

// Runs the stage's passes in list order; returns what each changed (the non-empty lines).
std::vector<Rewrite> run_passes(PassStage stage, PassInput& in);

}  // namespace cltrain
