#pragma once
#include <string>
#include <vector>

namespace cltrain {
// Runs `cltrain plan MODEL [--batch_size B --optimizer N ... --plan-json FILE --plan-svg FILE]`:
// prepares the model for training and prints each backend's planned memory by role (in onert's
// form), the pool and its lower bound; optionally writes the plan as JSON and as an SVG picture.
int run_plan(const std::vector<std::string>& args);

class Session;
// "memory budget: B bytes; without it U; recomputed N forward steps, X GFLOP more per step", or ""
// when the session has no budget.
std::string memory_budget_line(const Session& s);
}  // namespace cltrain
