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

#include "api_guard.h"
#include "backend.h"
#include "checkpoint.h"
#include "cltrain/cltrain.h"
#include "dataset.h"
#include "diagnostics.h"
#include "engine.h"
#include "model/model.h"
#include "trainer.h"

// (api_guard.h)
cltrain_status cltrain::api::status_of(std::string* message) {
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

using cltrain::Engine;
using cltrain::api::copy_sized_out;
using cltrain::api::guarded;
using cltrain::api::require;
using cltrain::api::status_of;

namespace {

void copy_line(char* dst, size_t len, const std::string& s) {
  if (!dst || len == 0) return;
  const size_t n = std::min(len - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
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
  c.optimizer = static_cast<int32_t>(st.optimizer);
  c.learning_rate = st.learning_rate;
  c.beta1 = st.beta1;
  c.beta2 = st.beta2;
  c.epsilon = st.epsilon;
  c.loss = static_cast<int32_t>(st.loss);
  c.loss_reduction = static_cast<int32_t>(st.loss_reduction);
  c.num_trainable_ops = st.num_trainable_ops;
  c.epochs = st.epochs;
  c.device = st.device;
  c.add_missing_biases = st.add_missing_biases ? 1 : 0;
  c.memory_budget = st.memory_budget;
  c.storage = st.half_storage ? 1 : 0;
  c.lora_rank = st.lora_rank;
  c.lora_alpha = st.lora_alpha;
  c.on_nonfinite = static_cast<int32_t>(st.on_nonfinite);
  s.backends = join_commas(st.backends);
  c.backends = s.backends.c_str();
  s.cache_dir = st.cache_dir ? *st.cache_dir : std::string();
  c.cache_dir = st.cache_dir ? s.cache_dir.c_str() : nullptr;
  s.train_config = s.train_config_path;
  c.train_config = s.train_config.empty() ? nullptr : s.train_config.c_str();
  c.checkpoint_every = st.checkpoint_every;
  s.checkpoint_dir = st.checkpoint_dir;
  c.checkpoint_dir = s.checkpoint_dir.c_str();
  c.keep_checkpoints = st.keep_checkpoints;
  return c;
}

}  // namespace

cltrain::Engine* cltrain::engine_of(cltrain_session* s) { return s ? s->engine.get() : nullptr; }

extern "C" {

const char* cltrain_version(void) { return "0.1.0 (API 5)"; }

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
    st.optimizer = static_cast<cltrain::Optimizer>(given.optimizer);  // the one translation; prepare checks it
    st.learning_rate = given.learning_rate;
    st.beta1 = given.beta1;
    st.beta2 = given.beta2;
    st.epsilon = given.epsilon;
    st.loss = static_cast<cltrain::Loss>(given.loss);
    st.loss_reduction = static_cast<cltrain::Reduction>(given.loss_reduction);
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
    if (given.on_nonfinite != CLTRAIN_NONFINITE_STOP && given.on_nonfinite != CLTRAIN_NONFINITE_SKIP)
      throw std::invalid_argument("on_nonfinite is " + std::to_string(given.on_nonfinite) +
                                  "; it takes 0 (stop) or 1 (skip)");
    st.on_nonfinite = static_cast<cltrain::NonFinite>(given.on_nonfinite);
    if (given.checkpoint_every < 0 || given.keep_checkpoints < 0)
      throw std::invalid_argument("checkpoint_every " + std::to_string(given.checkpoint_every) +
                                  " / keep_checkpoints " + std::to_string(given.keep_checkpoints) +
                                  ": each takes 0 or more");
    st.checkpoint_every = given.checkpoint_every;
    st.checkpoint_dir = given.checkpoint_dir ? given.checkpoint_dir : "";
    st.keep_checkpoints = given.keep_checkpoints > 0 ? given.keep_checkpoints : 3;
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

cltrain_status cltrain_get_skipped_steps(cltrain_session* s, int64_t* skipped) {
  return guarded(s, [&](Engine& e) {
    require(skipped, "skipped");
    *skipped = e.skipped_steps();
  });
}

cltrain_status cltrain_get_progress(cltrain_session* s, int64_t* epoch_batches, double* epoch_loss_sum) {
  return guarded(s, [&](Engine& e) {
    if (epoch_batches) *epoch_batches = e.progress().epoch_batches;
    if (epoch_loss_sum) *epoch_loss_sum = e.progress().epoch_loss_sum;
  });
}

cltrain_status cltrain_set_epochs_done(cltrain_session* s, int32_t epochs) {
  return guarded(s, [&](Engine& e) {
    if (epochs < 0) throw std::invalid_argument("epochs " + std::to_string(epochs) + " is negative");
    e.set_epochs_done(epochs);
  });
}

}  // extern "C"
