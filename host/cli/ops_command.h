// `cltrain ops`: the ops cltrain loads and trains, from their descriptors (host/ops).
#pragma once

namespace cltrain {

int run_ops();

}  // namespace cltrain
