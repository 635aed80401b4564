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
  Options options;  // as given, with what the model's training info supplies filled in
  Model model;
  int32_t batch = 0;
  std::unique_ptr<Session> session;
  double ms_load = 0, ms_prepare = 0;
  uint64_t input_size = 0, output_size = 0;  // floats per sample
};

// Loads options.model (MODEL_LOAD), then builds and prepares the session (PREPARE).
PreparedSession load_and_prepare(const Options& options);

nlohmann::json memory_json(const Session& session);

// Writes the trained model (--export_circle, --export_circleplus), atomically.
void export_trained_model(PreparedSession& prepared);
nlohmann::json placement_json(const Session& session);

}  // namespace cltrain
