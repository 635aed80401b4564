// What a session does, decided once at prepare (planner.h) and replayed on every run
// (session.h): where each step runs, each backend's tensor table (lifetimes, storage, aliases),
// the forward steps recomputed to fit a memory budget, and for each way of running the steps the
// schedule of the host's writes, the copies between backends, the backends' runs and the host's
// reads. Nothing of it is decided again while training.
#pragma once

#include <cstdint>
#include <vector>

#include "cltrain/cltrain_backend.h"

namespace cltrain {

// What a memory budget did (Session::prepare with a budget).
struct BudgetOutcome {
  uint64_t budget = 0;              // bytes, 0: none
  uint64_t unbudgeted_pool = 0;     // the pools' sum without recomputation
  std::vector<int32_t> recomputed;  // forward steps of the graph as built that run again
  uint64_t extra_flops = 0;         // per training step, by the repeats
};

// One thing a run does, in order.
struct ScheduleAction {
  enum Kind : uint8_t {
    kWrite,  // the host's input or expected output into backend `to`
    kCopy,   // tensor from backend `from` to backend `to`, before step `step`
    kRun,    // `steps` on backend `to`, in one Backend::run
    kRead,   // the loss or the prediction from backend `from` to the host
    // The finite flag (TrainingGraph::finite_flag) from backend `from`, before the first update
    // (step `step`): where it is not 0 the run skips every later kRun and kCopy (the updates and
    // the syncs of what they write), so the step changes no weight and no optimizer state. The
    // host's reads of the loss and the prediction come right before it.
    kGate,
  };
  Kind kind = kRun;
  int32_t tensor = -1;
  int32_t from = -1, to = -1;
  int32_t step = -1;
  std::vector<int32_t> steps;
};

// The lowest backend of a mask of backends (a bit each), or -1 for none.
inline int32_t lowest_bit(uint32_t mask) {
  for (int32_t i = 0; i < 32; ++i)
    if (mask & (1u << i)) return i;
  return -1;
}

// The ways a session runs its steps.
enum class RunMode { kTrain, kEvaluate, kPredict };
constexpr int kRunModes = 3;

// Every run starts with each persistent tensor (weights, optimizer state) valid on every backend
// that holds it, and ends so: a train schedule ends with the copies of what its updates wrote to
// the other holders. So one schedule per mode serves every step.
struct Schedule {
  std::vector<ScheduleAction> actions;
};

struct Plan {
  std::vector<int32_t> step_backend;                      // per step, index into the backends
  std::vector<std::vector<cltrain_tensor_desc>> tensors;  // per backend: lifetimes, storage, aliases
  std::vector<uint32_t> holders;                          // per persistent tensor, the backends holding it
  std::vector<uint64_t> pool_limits;                      // per backend, the budget its prepare may take
  BudgetOutcome budget;
  Schedule schedules[kRunModes];  // by RunMode

  const Schedule& schedule(RunMode m) const { return schedules[static_cast<int>(m)]; }
};

}  // namespace cltrain
