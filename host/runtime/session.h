// A training session: a training graph placed on backends, planned, and run step by step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend.h"
#include "training_graph.h"

namespace cltrain {

struct BackendMemory {
  std::string backend;
  std::string device;  // as the backend names it
  cltrain_memory_report report{};
};

// A memory budget that no plan here meets; what() names the least pool found.
struct MemoryBudgetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a memory budget did (Session::prepare with a budget).
struct BudgetOutcome {
  uint64_t budget = 0;              // bytes, 0: none
  uint64_t unbudgeted_pool = 0;     // the pools' sum without recomputation
  std::vector<int32_t> recomputed;  // forward steps of the graph as built that run again
  uint64_t extra_flops = 0;         // per training step, by the repeats
};

class Session {
 public:
  // Takes the graph and the backends in order of preference (the CPU last).
  Session(TrainingGraph graph, std::vector<std::unique_ptr<Backend>> backends);

  // Places every step on a backend, computes lifetimes and prepares the backends. With a budget
  // (bytes, over all backends' pools; 0: none) where the plan would exceed it, first chooses
  // forward steps to recompute (recompute.h) until the backends' plans fit; MemoryBudgetError when
  // no choice fits.
  void prepare(uint64_t memory_budget = 0);
  // Before prepare: store activations and back-prop tensors as float16 where every step that
  // touches one allows it (OpDescriptor::half_storage; cltrain_backend.h, CLTRAIN_FLOAT16).
  void set_half_storage(bool on) { half_storage_ = on; }
  const BudgetOutcome& budget() const { return budget_; }

  // One training iteration on a batch (inputs and expected outputs, batch-major floats).
  // Returns the loss; fills prediction (batch × outputs) when not null.
  float train_step(const float* input, const float* expected, int64_t iteration, float* prediction);
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
  const std::vector<std::vector<cltrain_tensor_desc>>& backend_tensors() const { return tensors_; }
  const std::vector<int32_t>& step_backend() const { return step_backend_; }
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
  void place();
  // place, compute_lifetimes and choose_aliases, then each backend's plan (Backend::plan) of the
  // graph: the sum of the pools; scratch (if not NULL) gets each step's private bytes.
  uint64_t dry_plan(std::vector<uint64_t>* scratch);
  // With a budget, what of it the other backends' last plans leave to backend b (0: no budget).
  uint64_t pool_limit(size_t b) const;
  void fit_budget(uint64_t budget);
  void compute_lifetimes();
  // With half storage, marks the backends' tensors that are stored as float16.
  void choose_storage();
  // Which outputs share the bytes of an input (cltrain_tensor_desc.alias), per backend.
  void choose_aliases();
  float run_range(int32_t end, const float* input, const float* expected, const cltrain_run_args& args,
                  float* prediction, bool want_loss);
  // Walks steps [0, end) as they run: the host's writes, cross-backend copies, steps and the
  // host's reads, tracking where each tensor is valid. Serves both the lifetime computation and
  // the run, so that the two cannot disagree.
  struct WalkHooks {
    std::function<void(int32_t tensor, int32_t backend)> write;
    std::function<void(int32_t tensor, int32_t from, int32_t to, int32_t step)> copy;
    std::function<void(int32_t step, int32_t backend)> step;
    std::function<void(int32_t tensor, int32_t from)> read;
  };
  void walk(int32_t end, bool with_expected, bool read_loss, bool read_prediction, const WalkHooks& hooks);

  TrainingGraph graph_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<int32_t> step_backend_;                      // per step, index into backends_
  std::vector<std::vector<cltrain_tensor_desc>> tensors_;  // per backend
  std::vector<uint32_t> valid_;                            // per tensor, bitmask of backends holding it
  std::vector<BackendMemory> memory_;
  BudgetOutcome budget_;
  bool half_storage_ = false;
  std::vector<uint64_t> planned_pools_;  // per backend, its pool in the last dry_plan
  std::vector<float> staging_;
  std::vector<int32_t> pending_;
};

}  // namespace cltrain
