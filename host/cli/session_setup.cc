#include "session_setup.h"

#include <chrono>
#include <cstdio>

#include "diagnostics.h"

namespace cltrain {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

const char* role_key(int r) {
  static const char* keys[CLTRAIN_ROLE_COUNT] = {"non_const", "trainable",  "back_prop",  "gradient",
                                                 "optimizer", "disposable", "layer_scope"};
  return keys[r];
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& part : v) s += (s.empty() ? "" : sep) + part;
  return s;
}

// The options given on the command line win over the model's CIRCLE_TRAINING metadata, which
// the session's settings start from.
void apply_options(const Options& o, cltrain_settings& c, const std::string& backends) {
  auto given = [&](const char* opt) { return o.given.count(opt) != 0; };
  if (o.batch_size) c.batch_size = *o.batch_size;
  if (given("--optimizer")) c.optimizer = o.optimizer;
  if (given("--learning_rate")) c.learning_rate = o.learning_rate;
  if (given("--loss")) c.loss = o.loss;
  if (given("--loss_reduction_type")) c.loss_reduction = o.loss_reduction;
  if (given("--epoch")) c.epochs = o.epochs;
  if (given("--num_of_trainable_ops")) c.num_trainable_ops = o.num_of_trainable_ops;
  if (!o.train_config.empty()) c.train_config = o.train_config.c_str();
  c.backends = backends.c_str();
  c.device = o.device;
  if (o.add_missing_biases) c.add_missing_biases = 1;
  c.memory_budget = o.memory_budget;
  c.storage = o.half_storage ? 1 : 0;
  if (o.lora_rank > 0) c.lora_rank = o.lora_rank, c.lora_alpha = o.lora_alpha;
  c.cache_dir = o.cache_dir ? o.cache_dir->c_str() : nullptr;
  c.on_nonfinite = o.on_nonfinite_skip ? CLTRAIN_NONFINITE_SKIP : CLTRAIN_NONFINITE_STOP;
  c.checkpoint_every = o.checkpoint_every;
  c.checkpoint_dir = !o.checkpoint_dir.empty() ? o.checkpoint_dir.c_str() : o.resume.c_str();
  c.keep_checkpoints = o.keep_checkpoints;
}

}  // namespace

Session& PreparedSession::session() const { return engine_of(api->get())->session(); }

PreparedSession load_and_prepare(const Options& o, bool plan_only) {
  PreparedSession p;
  p.options = o;
  const auto t_load = Clock::now();
  p.api = std::make_unique<ApiSession>(o.model);
  cltrain_session* s = p.api->get();
  cltrain_settings c{};
  c.struct_size = sizeof c;
  p.api->check(cltrain_get_settings(s, &c));
  const std::string backends = join(o.backends, ",");
  apply_options(o, c, backends);
  p.api->check(cltrain_set_settings(s, &c));
  p.ms_load = ms_since(t_load);

  const auto t_prepare = Clock::now();
  if (plan_only) {
    engine_of(s)->prepare(true);  // its errors reach main's one line as the API's would
  } else {
    p.api->check(cltrain_prepare(s));
  }
  p.ms_prepare = ms_since(t_prepare);
  for (int32_t i = 0; const char* w = cltrain_warning(s, i); ++i) std::fprintf(stderr, "cltrain: warning: %s\n", w);

  p.settings.struct_size = sizeof p.settings;
  p.api->check(cltrain_get_settings(s, &p.settings));
  p.settings.backends = p.settings.cache_dir = p.settings.train_config = nullptr;
  p.api->check(cltrain_get_shape(s, &p.batch, &p.input_size, &p.output_size));
  int32_t input_type = CLTRAIN_INPUT_FLOAT32;
  p.api->check(cltrain_get_input_type(s, &input_type));
  p.int32_input = input_type == CLTRAIN_INPUT_INT32;
  if (p.int32_input) p.id_rows = engine_of(s)->id_rows();
  int32_t n = 0;
  p.api->check(cltrain_num_backends(s, &n));
  std::vector<std::string> names, devices;
  for (int32_t b = 0; b < n; ++b) {
    cltrain_backend_info info{};
    info.struct_size = sizeof info;
    p.api->check(cltrain_get_backend(s, b, &info));
    names.push_back(info.name);
    devices.push_back(info.device);
  }
  p.backend_names = join(names, ",");
  p.device_names = join(devices, "; ");
  return p;
}

nlohmann::json memory_json(const ApiSession& api) {
  nlohmann::json mem = nlohmann::json::object();
  int32_t n = 0;
  api.check(cltrain_num_backends(api.get(), &n));
  for (int32_t i = 0; i < n; ++i) {
    cltrain_backend_info info{};
    info.struct_size = sizeof info;
    api.check(cltrain_get_backend(api.get(), i, &info));
    nlohmann::json b;
    for (int r = 0; r < CLTRAIN_ROLE_COUNT; ++r) b[role_key(r)] = info.role_peak[r];
    b["total"] = info.pool_bytes;
    b["lower_bound"] = info.lower_bound;
    mem[info.name] = b;
  }
  return mem;
}

std::vector<std::string> rewrite_lines(const ApiSession& api) {
  std::vector<std::string> lines;
  for (int32_t i = 0; const char* line = cltrain_rewrite(api.get(), i); ++i) lines.push_back(line);
  return lines;
}

nlohmann::json placement_json(const ApiSession& api) {
  nlohmann::json placement = nlohmann::json::object();
  int32_t n = 0;
  api.check(cltrain_num_operators(api.get(), &n));
  for (int32_t op = 0; op < n; ++op) {
    const char* backend = nullptr;
    api.check(cltrain_operator_backend(api.get(), op, &backend));
    placement[std::to_string(op)] = backend;
  }
  return placement;
}

}  // namespace cltrain
