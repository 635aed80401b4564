// The API folder's interface for tools built with the library (the CLI): the Engine behind a
// session, for its diagnostics (bench's profile, plan's tensor layout, id rows). Not exported from
// libcltrain.so; programs that load the library use the C API alone.
#pragma once

#include "cltrain/cltrain.h"
#include "engine.h"

namespace cltrain {

Engine* engine_of(cltrain_session* session);

}  // namespace cltrain
