#pragma once
#include <string>
#include <vector>

namespace cltrain {
// Runs `cltrain plan MODEL [--batch_size B --optimizer N ... --plan-json FILE --plan-svg FILE]`:
// prepares the model for training and prints each backend's planned memory by role (in onert's
// form), the pool and its lower bound; optionally writes the plan as JSON and as an SVG picture.
int run_plan(const std::vector<std::string>& args);
}  // namespace cltrain
