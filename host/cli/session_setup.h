// What `cltrain MODEL`, `cltrain bench MODEL` and `cltrain plan MODEL` share: a session of the C
// API on the model, with the command line's options over the model's own training settings,
// prepared; the report's memory and placement parts.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "api_session.h"
#include "options.h"
#include "session.h"

namespace cltrain {

struct PreparedSession {
  Options options;  // as given
  std::unique_ptr<ApiSession> api;
  cltrain_settings settings{};  // as prepared (its strings left out)
  int32_t batch = 0;
  uint64_t input_size = 0, output_size = 0;  // values per sample
  bool int32_input = false;                  // the model takes token ids (cltrain_set_input_int32)
  int64_t id_rows = -1;                      // ids valid below this (the fewest table rows), -1: any
  double ms_load = 0, ms_prepare = 0;
  std::string backend_names, device_names;  // the backends that run steps, and their devices

  // Behind the API, for diagnostics (bench's profile, plan's tensors).
  Session& session() const;
};

// Loads options.model (MODEL_LOAD), then prepares the session (PREPARE), printing the warnings.
// plan_only: the backends plan their memory without building kernels (Engine::prepare's dry;
// `cltrain plan`): nothing can run.
PreparedSession load_and_prepare(const Options& options, bool plan_only = false);

nlohmann::json memory_json(const ApiSession& api);
// What the rewrite passes changed in the model, one "pass: change" line each (cltrain_rewrite).
std::vector<std::string> rewrite_lines(const ApiSession& api);
nlohmann::json placement_json(const ApiSession& api);

}  // namespace cltrain
