// What `cltrain MODEL` and `cltrain bench MODEL` share: load the model at the chosen batch,
// open the backends, build and prepare the session; the report's memory and placement parts.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "options.h"
#include "session.h"

namespace cltrain {

struct PreparedSession {
  Model model;
  int32_t batch = 0;
  std::unique_ptr<Session> session;
  double ms_load = 0, ms_prepare = 0;
  uint64_t input_size = 0, output_size = 0;  // floats per sample
};

// Loads options.model (MODEL_LOAD), then builds and prepares the session (PREPARE).
PreparedSession load_and_prepare(const Options& options);

nlohmann::json memory_json(const Session& session);
nlohmann::json placement_json(const Session& session);

}  // namespace cltrain
