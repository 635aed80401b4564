// The C API's calls on weights, exports and checkpoints, and what it tells of backends, the
// budget and placement (cltrain.h).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "api_guard.h"
#include "backend.h"
#include "checkpoint.h"
#include "engine.h"

using cltrain::Engine;
using cltrain::api::copy_sized_out;
using cltrain::api::guarded;
using cltrain::api::require;

extern "C" {

cltrain_status cltrain_weight_elements(cltrain_session* s, const char* name, uint64_t* count) {
  return guarded(s, [&](Engine& e) {
    require(name, "name");
    require(count, "count");
    *count = e.tensor_elements(name);
  });
}

cltrain_status cltrain_get_weight(cltrain_session* s, const char* name, float* dst, uint64_t count) {
  return guarded(s, [&](Engine& e) {
    require(name, "name");
    require(dst, "dst");
    const uint64_t n = e.tensor_elements(name);
    if (count != n)
      throw std::invalid_argument("'" + std::string(name) + "' has " + std::to_string(n) + " elements, room for " +
                                  std::to_string(count) + " given");
    const std::vector<float> v = e.weight(name);
    std::memcpy(dst, v.data(), v.size() * sizeof(float));
  });
}

cltrain_status cltrain_set_weight(cltrain_session* s, const char* name, const float* src, uint64_t count) {
  return guarded(s, [&](Engine& e) {
    require(name, "name");
    require(src, "src");
    e.set_weight(name, std::vector<float>(src, src + count));
  });
}

cltrain_status cltrain_num_trained_weights(cltrain_session* s, int32_t* count) {
  return guarded(s, [&](Engine& e) {
    require(count, "count");
    *count = static_cast<int32_t>(e.trained_weight_names().size());
  });
}

cltrain_status cltrain_trained_weight_name(cltrain_session* s, int32_t index, const char** name) {
  return guarded(s, [&](Engine& e) {
    require(name, "name");
    const std::vector<std::string> names = e.trained_weight_names();
    if (index < 0 || static_cast<size_t>(index) >= names.size())
      throw std::invalid_argument("weight " + std::to_string(index) + " of " + std::to_string(names.size()));
    s->name = names[static_cast<size_t>(index)];
    *name = s->name.c_str();
  });
}

cltrain_status cltrain_reset_optimizer(cltrain_session* s) {
  return guarded(s, [&](Engine& e) { e.reset_optimizer(); });
}

cltrain_status cltrain_export_circle(cltrain_session* s, const char* path) {
  return guarded(s, [&](Engine& e) {
    require(path, "path");
    e.export_circle(path);
  });
}

cltrain_status cltrain_export_circleplus(cltrain_session* s, const char* path) {
  return guarded(s, [&](Engine& e) {
    require(path, "path");
    e.export_circleplus(path);
  });
}

cltrain_status cltrain_export_checkpoint(cltrain_session* s, const char* path) {
  return guarded(s, [&](Engine& e) {
    require(path, "path");
    e.export_checkpoint(path);
  });
}

cltrain_status cltrain_export_files(cltrain_session* s, const char* model, const char* circleplus,
                                    const char* checkpoint) {
  return guarded(s, [&](Engine& e) {
    e.export_files(model ? model : "", circleplus ? circleplus : "", checkpoint ? checkpoint : "");
  });
}

cltrain_status cltrain_resume(cltrain_session* s, const char* dir, char* used, size_t used_len) {
  return guarded(s, [&](Engine& e) {
    require(dir, "dir");
    const std::string path = e.resume(dir, nullptr);
    if (used && used_len > 0) {
      const size_t n = std::min(path.size(), used_len - 1);
      std::memcpy(used, path.data(), n);
      used[n] = '\0';
    }
  });
}

cltrain_status cltrain_import_checkpoint(cltrain_session* s, const char* path) {
  return guarded(s, [&](Engine& e) {
    require(path, "path");
    e.import_checkpoint(path);
  });
}

cltrain_status cltrain_export_lora(cltrain_session* s, const char* path) {
  return guarded(s, [&](Engine& e) {
    require(path, "path");
    e.export_lora(path);
  });
}

cltrain_status cltrain_import_lora(cltrain_session* s, const char* path) {
  return guarded(s, [&](Engine& e) {
    require(path, "path");
    e.import_lora(path);
  });
}

cltrain_status cltrain_num_backends(cltrain_session* s, int32_t* count) {
  return guarded(s, [&](Engine& e) {
    require(count, "count");
    *count = static_cast<int32_t>(e.session().memory().size());
  });
}

cltrain_status cltrain_get_budget(cltrain_session* s, cltrain_budget_info* out) {
  return guarded(s, [&](Engine& e) {
    require(out, "out");
    const cltrain::BudgetOutcome& b = e.session().budget();
    cltrain_budget_info full{};
    full.recomputed_steps = static_cast<int32_t>(b.recomputed.size());
    full.budget = b.budget;
    full.unbudgeted_pool = b.unbudgeted_pool;
    full.extra_flops = b.extra_flops;
    copy_sized_out(full, out, "cltrain_budget_info");
  });
}

cltrain_status cltrain_get_backend(cltrain_session* s, int32_t backend, cltrain_backend_info* out) {
  return guarded(s, [&](Engine& e) {
    require(out, "out");
    const auto memory = e.session().memory();
    if (backend < 0 || static_cast<size_t>(backend) >= memory.size())
      throw std::invalid_argument("backend " + std::to_string(backend) + " is not one of the " +
                                  std::to_string(memory.size()) + " that run steps");
    static_assert(CLTRAIN_ROLE_COUNT == 7, "cltrain_backend_info.role_peak has a slot per role");
    s->name = memory[static_cast<size_t>(backend)].backend;
    s->device = memory[static_cast<size_t>(backend)].device;
    cltrain_backend_info full{};
    full.name = s->name.c_str();
    full.device = s->device.c_str();
    const cltrain_memory_report& r = memory[static_cast<size_t>(backend)].report;
    for (int i = 0; i < CLTRAIN_ROLE_COUNT; ++i) full.role_peak[i] = r.role_peak[i];
    full.pool_bytes = r.pool_bytes;
    full.lower_bound = r.lower_bound;
    copy_sized_out(full, out, "cltrain_backend_info");
  });
}

cltrain_status cltrain_num_operators(cltrain_session* s, int32_t* count) {
  return guarded(s, [&](Engine& e) {
    require(count, "count");
    *count = static_cast<int32_t>(e.model().operators.size());
  });
}

cltrain_status cltrain_operator_backend(cltrain_session* s, int32_t op, const char** backend) {
  return guarded(s, [&](Engine& e) {
    require(backend, "backend");
    const std::vector<std::string> placement = e.session().model_op_placement();
    if (op < 0 || static_cast<size_t>(op) >= placement.size())
      throw std::invalid_argument("operator " + std::to_string(op) + " is not one of the model's " +
                                  std::to_string(placement.size()));
    s->name = placement[static_cast<size_t>(op)];
    *backend = s->name.c_str();
  });
}

}  // extern "C"
