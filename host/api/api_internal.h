// What the CLI, built with the library, may reach behind the C API: the Engine of a session, for
// its diagnostics (bench's profile, plan's tensor layout). Not exported from libcltrain.so.
#pragma once

#include "cltrain/cltrain.h"
#include "engine.h"

namespace cltrain {

Engine* engine_of(cltrain_session* session);

}  // namespace cltrain
