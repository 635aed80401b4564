// The C API (cltrain.h) over the Engine: each call catches every exception into a status and the
// session's last error.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "api_internal.h"
#include "backend.h"
#include "checkpoint.h"
#include "cltrain/cltrain.h"
#include "dataset.h"
#include "engine.h"
#include "model/model.h"
#include "trainer.h"

struct cltrain_session {
  std::unique_ptr<cltrain::Engine> engine;
  std::string error;
  // Strings handed out, valid until the next call.
  std::string backends, cache_dir, train_config, name, device;
  std::string train_config_path;  // the train config file read into the settings, if any
};

namespace {

using cltrain::Engine;

void copy_line(char* dst, size_t len, const std::string& s) {
  if (!dst || len == 0) return;
  const size_t n = std::min(len - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// The status an exception stands for, and its one line.
cltrain_status status_of(std::string* message) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    *message = "out of host memory";
    return CLTRAIN_OUT_OF_MEMORY;
  } catch (const cltrain::ModelError& e) {
    *message = std::string("model error: ") + e.what();
    return CLTRAIN_ERROR;
  } catch (const cltrain::DataError& e) {
    *message = std::string("data error: ") + e.what();
    return CLTRAIN_ERROR;
  } catch (const cltrain::BackendError& e) {
    *message = std::string("backend error: ") + e.what();
    return CLTRAIN_ERROR;
  } catch (const cltrain::MemoryBudgetError& e) {
    *message = e.what();
    return CLTRAIN_OUT_OF_MEMORY;
  } catch (const cltrain::CheckpointError& e) {
    *message = std::string("checkpoint error: ") + e.what();
    return CLTRAIN_ERROR;
  } catch (const cltrain::TrainingError& e) {
    *message = std::string("training error: ") + e.what();
    return CLTRAIN_ERROR;
  } catch (const std::invalid_argument& e) {
    *message = std::string("invalid argument: ") + e.what();
    return CLTRAIN_INVALID;
  } catch (const std::logic_error& e) {  // out of order
    *message = std::string("invalid call: ") + e.what();
    return CLTRAIN_INVALID;
  } catch (const std::exception& e) {
    *message = e.what();
    return CLTRAIN_ERROR;
  } catch (...) {
    *message = "unknown failure";
    return CLTRAIN_ERROR;
  }
}

template <class F>
cltrain_status guarded(cltrain_session* s, F&& f) {
  if (!s) return CLTRAIN_INVALID;
  try {
    f(*s->engine);
    s->error.clear();
    return CLTRAIN_OK;
  } catch (...) {
    return status_of(&s->error);
  }
}

void require(const void* p, const char* what) {
  if (!p) throw std::invalid_argument(std::string(what) + " is NULL");
}

template <class F>
cltrain_status create(cltrain_session** out, char* err, size_t err_len, F&& load) {
  if (out) *out = nullptr;
  std::string message;
  try {
    require(out, "out");
    auto s = std::make_unique<cltrain_session>();
    s->engine = load();
    *out = s.release();
    copy_line(err, err_len, "");
    return CLTRAIN_OK;
  } catch (...) {
    const cltrain_status st = status_of(&message);
    copy_line(err, err_len, message);
    return st;
  }
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string join_commas(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& part : v) s += (s.empty() ? "" : ",") + part;
  return s;
}

// The engine's settings as the C struct (this build's size); its strings live in the session.
cltrain_settings current_settings(cltrain_session& s, const Engine& e) {
  const cltrain::Settings& st = e.settings();
  cltrain_settings c{};
  c.struct_size = sizeof c;
  c.batch_size = st.batch_size;
  c.optimizer = st.optimizer;
  c.learning_rate = st.learning_rate;
  c.beta1 = st.beta1;
  c.beta2 = st.beta2;
  c.epsilon = st.epsilon;
  c.loss = st.loss;
  c.loss_reduction = st.loss_reduction;
  c.num_trainable_ops = st.num_trainable_ops;
  c.epochs = st.epochs;
  c.device = st.device;
  c.add_missing_biases = st.add_missing_biases ? 1 : 0;
  c.memory_budget = st.memory_budget;
  c.storage = st.half_storage ? 1 : 0;
  c.lora_rank = st.lora_rank;
  c.lora_alpha = st.lora_alpha;
  s.backends = join_commas(st.backends);
  c.backends = s.backends.c_str();
  s.cache_dir = st.cache_dir ? *st.cache_dir : std::string();
  c.cache_dir = st.cache_dir ? s.cache_dir.c_str() : nullptr;
  s.train_config = s.train_config_path;
  c.train_config = s.train_config.empty() ? nullptr : s.train_config.c_str();
  return c;
}

}  // namespace

cltrain::Engine* cltrain::engine_of(cltrain_session* s) { return s ? s->engine.get() : nullptr; }

namespace {

// Copies full into the caller's struct as far as its struct_size reaches (an older, shorter one).
template <class T>
void copy_sized_out(T full, T* out, const char* type) {
  const uint32_t size = out->struct_size;
  if (size == 0) throw std::invalid_argument(std::string("out->struct_size is 0: set it to sizeof(") + type + ")");
  full.struct_size = size;
  std::memcpy(out, &full, std::min<size_t>(size, sizeof full));
}

}  // namespace

extern "C" {

const char* cltrain_version(void) { return "0.1.0 (API 3)"; }

cltrain_status cltrain_session_create(const char* model_path, cltrain_session** out, char* err, size_t err_len) {
  return create(out, err, err_len, [&] {
    require(model_path, "model_path");
    return Engine::from_file(model_path);
  });
}

cltrain_status cltrain_session_create_from_buffer(const void* data, size_t size, const char* name,
                                                  cltrain_session** out, char* err, size_t err_len) {
  return create(out, err, err_len, [&] {
    require(data, "data");
    const auto* p = static_cast<const uint8_t*>(data);
    return Engine::from_buffer(std::vector<uint8_t>(p, p + size), name ? name : "model buffer");
  });
}

void cltrain_session_destroy(cltrain_session* session) {
  try {
    delete session;
  } catch (...) {  // nothing can be reported from here
  }
}

const char* cltrain_last_error(const cltrain_session* session) {
  return session ? session->error.c_str() : "the session is NULL";
}

cltrain_status cltrain_get_settings(cltrain_session* s, cltrain_settings* out) {
  return guarded(s, [&](Engine& e) {
    require(out, "out");
    if (out->struct_size == 0) throw std::invalid_argument("out->struct_size is 0: set it to sizeof(cltrain_settings)");
    const cltrain_settings full = current_settings(*s, e);
    const uint32_t size = out->struct_size;
    std::memcpy(out, &full, std::min<size_t>(size, sizeof full));
    out->struct_size = size;
  });
}

cltrain_status cltrain_set_settings(cltrain_session* s, const cltrain_settings* in) {
  return guarded(s, [&](Engine& e) {
    require(in, "settings");
    if (in->struct_size == 0)
      throw std::invalid_argument("settings->struct_size is 0: set it to sizeof(cltrain_settings)");
    cltrain_settings given = current_settings(*s, e);  // members the caller's struct lacks keep their value
    std::memcpy(&given, in, std::min<size_t>(in->struct_size, sizeof given));
    cltrain::Settings st = e.settings();
    st.batch_size = given.batch_size;
    st.optimizer = given.optimizer;
    st.learning_rate = given.learning_rate;
    st.beta1 = given.beta1;
    st.beta2 = given.beta2;
    st.epsilon = given.epsilon;
    st.loss = given.loss;
    st.loss_reduction = given.loss_reduction;
    st.num_trainable_ops = given.num_trainable_ops;
    st.epochs = given.epochs;
    st.device = given.device;
    st.add_missing_biases = given.add_missing_biases != 0;
    st.memory_budget = given.memory_budget;
    if (given.storage != 0 && given.storage != 1)
      throw std::invalid_argument("storage is " + std::to_string(given.storage) + "; it takes 0 (float32) or 1 (fp16)");
    st.half_storage = given.storage == 1;
    if (given.lora_rank < 0 || !(given.lora_alpha >= 0) || !std::isfinite(given.lora_alpha))
      throw std::invalid_argument("lora_rank " + std::to_string(given.lora_rank) + " / lora_alpha " +
                                  std::to_string(given.lora_alpha) +
                                  ": the rank takes 0 (none) or more, alpha 0 or more");
    st.lora_rank = given.lora_rank;
    st.lora_alpha = given.lora_alpha;
    if (given.backends) st.backends = split_commas(given.backends);
    st.cache_dir = given.cache_dir ? std::optional<std::string>(given.cache_dir) : std::nullopt;
    const std::string train_config = given.train_config ? given.train_config : "";
    const cltrain::Settings before = e.settings();
    e.set_settings(st);
    if (!train_config.empty() && train_config != s->train_config_path) {
      try {
        e.set_train_config(train_config);
      } catch (...) {
        e.set_settings(before);
        throw;
      }
      s->train_config_path = train_config;
    }
  });
}

cltrain_status cltrain_prepare(cltrain_session* s) {
  return guarded(s, [&](Engine& e) { e.prepare(); });
}

const char* cltrain_warning(cltrain_session* s, int32_t i) {
  if (!s || i < 0 || static_cast<size_t>(i) >= s->engine->warnings().size()) return nullptr;
  return s->engine->warnings()[static_cast<size_t>(i)].c_str();
}

const char* cltrain_rewrite(cltrain_session* s, int32_t i) {
  if (!s || i < 0 || static_cast<size_t>(i) >= s->engine->rewrites().size()) return nullptr;
  return s->engine->rewrites()[static_cast<size_t>(i)].c_str();
}

cltrain_status cltrain_get_shape(cltrain_session* s, int32_t* batch, uint64_t* input_size, uint64_t* output_size) {
  return guarded(s, [&](Engine& e) {
    e.session();  // prepared
    if (batch) *batch = e.batch();
    if (input_size) *input_size = e.input_size();
    if (output_size) *output_size = e.output_size();
  });
}

cltrain_status cltrain_set_input(cltrain_session* s, const float* data, uint64_t count) {
  return guarded(s, [&](Engine& e) { e.set_input(data, count); });
}

cltrain_status cltrain_get_input_type(cltrain_session* s, int32_t* dtype) {
  return guarded(s, [&](Engine& e) {
    require(dtype, "dtype");
    *dtype = e.input_dtype() == CLTRAIN_INT32 ? CLTRAIN_INPUT_INT32 : CLTRAIN_INPUT_FLOAT32;
  });
}

cltrain_status cltrain_set_input_int32(cltrain_session* s, const int32_t* data, uint64_t count) {
  return guarded(s, [&](Engine& e) { e.set_input_int32(data, count); });
}

cltrain_status cltrain_set_expected(cltrain_session* s, const float* data, uint64_t count) {
  return guarded(s, [&](Engine& e) { e.set_expected(data, count); });
}

// outputs must hold the batch's outputs, or be NULL with count 0.
void check_outputs(const Engine& e, const float* outputs, uint64_t count) {
  const uint64_t want = static_cast<uint64_t>(e.batch()) * e.output_size();
  if (!outputs && count == 0) return;
  require(outputs, "outputs");
  if (count != want)
    throw std::invalid_argument("room for " + std::to_string(count) + " outputs, the batch gives " +
                                std::to_string(want));
}

cltrain_status cltrain_train_step(cltrain_session* s, float* loss) {
  return cltrain_train_step_outputs(s, loss, nullptr, 0);
}

cltrain_status cltrain_train_step_outputs(cltrain_session* s, float* loss, float* outputs, uint64_t output_count) {
  return guarded(s, [&](Engine& e) {
    require(loss, "loss");
    e.session();  // prepared
    check_outputs(e, outputs, output_count);
    *loss = e.train_step(outputs);
  });
}

cltrain_status cltrain_evaluate(cltrain_session* s, float* loss, float* outputs, uint64_t output_count) {
  return guarded(s, [&](Engine& e) {
    require(loss, "loss");
    e.session();
    check_outputs(e, outputs, output_count);
    *loss = e.evaluate(outputs);
  });
}

cltrain_status cltrain_predict(cltrain_session* s, const float* input, uint64_t input_count, float* output,
                               uint64_t output_count) {
  return guarded(s, [&](Engine& e) { e.predict(input, input_count, output, output_count); });
}

cltrain_status cltrain_predict_int32(cltrain_session* s, const int32_t* input, uint64_t input_count, float* output,
                                     uint64_t output_count) {
  return guarded(s, [&](Engine& e) { e.predict_int32(input, input_count, output, output_count); });
}

cltrain_status cltrain_get_position(cltrain_session* s, int64_t* steps, int32_t* epochs) {
  return guarded(s, [&](Engine& e) {
    if (steps) *steps = e.position().steps;
    if (epochs) *epochs = e.position().epochs;
  });
}

cltrain_status cltrain_set_epochs_done(cltrain_session* s, int32_t epochs) {
  return guarded(s, [&](Engine& e) {
    if (epochs < 0) throw std::invalid_argument("epochs " + std::to_string(epochs) + " is negative");
    e.set_epochs_done(epochs);
  });
}

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

cltrain_status cltrain_import_checkpoint(cltrain_session* s, const char* path) {
  return guarded(s, [&](Engine& e) {
    require(path, "path");
    e.import_checkpoint(path);
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
