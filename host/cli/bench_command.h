#pragma once
#include "options.h"

namespace cltrain {
// Runs `cltrain bench MODEL [options]`: trains options.steps steps on one fixed random batch after
// options.warmup steps, printing each step's loss and time, and the median ms/step.
int run_bench(const Options& options);
}  // namespace cltrain
