#pragma once
#include "options.h"

namespace cltrain {
// Runs `cltrain MODEL [options]`; returns the exit code. Throws on errors (main prints them).
int run_train(const Options& options);
}  // namespace cltrain
