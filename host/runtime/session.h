// A training session: a training graph placed on backends, planned, and run step by step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "plan.h"
#include "planner.h"
#include "training_graph.h"

namespace cltrain {

struct BackendMemory {
  std::string backend;
  std::string device;  // as the backend names it
  cltrain_memory_report report{};
};

class Session {
 public:
  // Takes the graph and the backends in order of preference (the CPU last).
  Session(TrainingGraph graph, std::vector<std::unique_ptr<Backend>> backends);

  // Plans the graph on the backends (planner.h: placement, lifetimes, storage, aliases, with a
  // budget (bytes over all pools; 0: none) the recomputation that fits it, the schedules) and
  // prepares each backend with its part. MemoryBudgetError when no choice fits the budget.
  // dry: each backend plans its memory as prepare would (its plan(); the CPU's prepare where a
  // backend cannot plan alone) without allocating or building kernels: memory() and the plan's
  // offsets are there, but no step runs (`cltrain plan`).
  void prepare(uint64_t memory_budget = 0, bool dry = false);
  // Before prepare: store activations and back-prop tensors as float16 where every step that
  // touches one allows it (OpDescriptor::half_storage; cltrain_backend.h, CLTRAIN_FLOAT16).
  void set_half_storage(bool on) { half_storage_ = on; }
  const BudgetOutcome& budget() const { return plan_.budget; }
  // The plan prepare made, which every run replays.
  const Plan& plan() const { return plan_; }

  // One training iteration on a batch (inputs and expected outputs, batch-major floats).
  // Returns the loss; fills prediction (batch × outputs) when not null.
  // The step is optimizer iteration iterations() + 1 (Adam's t), counted once it has run.
  // Transactional: where the loss or a gradient is not finite, no update runs (the weights and
  // the optimizer state stay as they were, the iteration is not counted) and *applied is false.
  float train_step(const float* input, const float* expected, float* prediction, bool* applied = nullptr);
  // Optimizer iterations done: the one count of them (a checkpoint's step, Engine::position).
  int64_t iterations() const { return iterations_; }
  // False once a training step failed (a backend's error) after its gate let the updates run: the
  // weights and the optimizer state may then be partly updated. A step that fails before its gate
  // (forward, backward, the checks, the host's reads) leaves them as they were.
  bool consistent() const { return consistent_; }
  // True once every tensor a step updates was written whole (a checkpoint imported); false where
  // such writes failed part way.
  void set_consistent(bool whole) { consistent_ = whole; }
  void set_iterations(int64_t done) { iterations_ = done; }
  // Forward and loss only.
  float evaluate(const float* input, const float* expected, float* prediction);
  // Forward only.
  void predict(const float* input, float* prediction);

  const TrainingGraph& graph() const { return graph_; }

  // Whole-tensor access to persistent tensors (weights, optimizer variables) between steps:
  // read from a backend that holds the current value; write to every backend that holds one.
  std::vector<float> read_persistent(int32_t tensor);
  void write_persistent(int32_t tensor, const std::vector<float>& values);
  uint64_t input_elements() const;       // per batch
  uint64_t prediction_elements() const;  // per batch
  int32_t batch() const;

  // Backend name of each model operator (by model index).
  std::vector<std::string> model_op_placement() const;
  std::vector<BackendMemory> memory() const { return memory_; }
  std::string backend_names() const;  // the backends that run steps, comma-separated
  std::string device_names() const;

  // Per backend used, its tensor table with lifetimes (as prepare received it).
  const std::vector<std::vector<cltrain_tensor_desc>>& backend_tensors() const { return plan_.tensors; }
  const std::vector<int32_t>& step_backend() const { return plan_.step_backend; }
  // Name of backend b (an index of step_backend()), and its planned offsets (empty if it does not
  // say; private scratch of the backend is not among them).
  std::string backend_name(size_t b) const { return backends_[b]->name(); }
  size_t num_backends() const { return backends_.size(); }
  Backend& backend(size_t b) { return *backends_[b]; }
  std::vector<int64_t> plan_offsets(size_t b) {
    return backends_[b]->plan_offsets(static_cast<int32_t>(graph_.tensors.size()));
  }
  std::vector<cltrain_private_tensor> plan_private(size_t b) { return backends_[b]->plan_private(); }

 private:
  // Replays the mode's schedule: nothing is decided here.
  // *applied (may be null) false where the gate closed (plan.h).
  float run(RunMode mode, const float* input, const float* expected, const cltrain_run_args& args, float* prediction,
            bool* applied);

  TrainingGraph graph_;
  std::vector<std::unique_ptr<Backend>> backends_;
  Plan plan_;
  std::vector<BackendMemory> memory_;
  bool half_storage_ = false;
  int64_t iterations_ = 0;
  bool updating_ = false;         // a run is past its gate
  bool updates_pending_ = false;  // some step's updates were enqueued (they may run after its run returns)
  bool consistent_ = true;
  std::vector<float> staging_;  // a copy between backends passes through the host
};

}  // namespace cltrain
