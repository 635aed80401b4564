// The planner: places a training graph's steps on backends, computes lifetimes, chooses storage
// and in-place aliases, fits a memory budget by recomputation (recompute.h), and writes the
// schedule of each way of running the steps (plan.h). It asks the backends what they support and
// for dry plans; the session then prepares them with the plan and replays its schedules.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "backend.h"
#include "plan.h"
#include "training_graph.h"

namespace cltrain {

// A memory budget that no plan here meets; what() names the least pool found.
struct MemoryBudgetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Planner {
 public:
  // graph may be replaced by one with recomputed steps; both references outlive the planner.
  Planner(TrainingGraph& graph, std::vector<std::unique_ptr<Backend>>& backends, bool half_storage)
      : graph_(graph), backends_(backends), half_storage_(half_storage) {}

  // The plan. With a budget (bytes, over all backends' pools; 0: none) where the plan would exceed
  // it, first chooses forward steps to recompute until the backends' dry plans fit;
  // MemoryBudgetError when no choice fits.
  Plan make(uint64_t memory_budget);

 private:
  void place();
  // place, lifetimes, storage and aliases, then each backend's dry plan (Backend::plan) of the
  // graph: the sum of the pools; scratch (if not NULL) gets each step's private bytes.
  uint64_t dry_plan(std::vector<uint64_t>* scratch);
  // With a budget, what of it the other backends' last plans leave to backend b (0: no budget).
  uint64_t pool_limit(size_t b) const;
  void fit_budget(uint64_t budget);
  // Lifetimes per backend from the steps' accesses and the schedules' copies, writes and reads;
  // also writes the schedules.
  void compute_lifetimes();
  // With half storage, marks the backends' tensors that are stored as float16.
  void choose_storage();
  // Which outputs share the bytes of an input (cltrain_tensor_desc.alias), per backend.
  void choose_aliases();
  // The schedule of steps [0, end): the host's writes (with_expected: the expected output too),
  // the copies each step needs, the runs, the reads (read_loss: the loss; the prediction always),
  // then the copies that leave every persistent tensor on all of its holders again.
  Schedule schedule(int32_t end, bool with_expected, bool read_loss) const;

  TrainingGraph& graph_;
  std::vector<std::unique_ptr<Backend>>& backends_;
  bool half_storage_;
  Plan plan_;
  std::vector<uint64_t> planned_pools_;  // per backend, its pool in the last dry_plan
};

}  // namespace cltrain
