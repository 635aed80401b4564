// Sessions for the runtime tests that train a model on one backend: OpenCL (the CPU after it, for
// what OpenCL does not run) or the CPU, optionally within a memory budget or with float16 storage.
#pragma once

#include <memory>
#include <string>

#include "session.h"

namespace cltrain {

inline std::unique_ptr<Backend> open_test_backend(bool opencl, uint64_t budget, std::string* why) {
  cltrain_backend_config config = default_backend_config();
  config.memory_budget = budget;
  return opencl ? open_plugin_file(CLTRAIN_OPENCL_PLUGIN, config, why) : open_backend("cpu", config, why);
}

// A prepared session of m; nullptr with *why when its backend cannot open.
inline std::unique_ptr<Session> prepared_session(const Model& m, bool opencl, uint64_t budget, bool half,
                                                 std::string* why) {
  std::vector<std::unique_ptr<Backend>> backends;
  auto b = open_test_backend(opencl, budget, why);
  if (!b) return nullptr;
  backends.push_back(std::move(b));
  if (opencl) backends.push_back(open_test_backend(false, budget, why));
  auto s = std::make_unique<Session>(build_training_graph(m, TrainOptions{}), std::move(backends));
  s->set_half_storage(half);
  s->prepare(budget);
  return s;
}

inline uint64_t pool_sum(const Session& s) {
  uint64_t total = 0;
  for (const auto& m : s.memory()) total += m.report.pool_bytes;
  return total;
}

}  // namespace cltrain
