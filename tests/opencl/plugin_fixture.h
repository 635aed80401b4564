// Shared by the OpenCL smoke tests: the fixture that dlopens the plugin, a hand-built graph
// desc and tolerance checks.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"

namespace cltrain_test {

// |got - want| <= 1e-5 * max(1, |want|): relative above magnitude 1, absolute below.
constexpr double kTolerance = 1e-5;

inline void expect_close(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], kTolerance * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
}

inline cltrain_step_desc fc_step(int activation) {
  cltrain_step_desc s{};
  s.op = CLTRAIN_OP_FULLY_CONNECTED;
  s.phase = CLTRAIN_PHASE_FORWARD;
  s.num_inputs = 3;
  s.inputs[0] = 0, s.inputs[1] = 1, s.inputs[2] = 2;
  s.num_outputs = 1;
  s.outputs[0] = 3;
  s.params.activation = activation;
  return s;
}

inline std::vector<cltrain_tensor_desc> fc_tensors() {
  std::vector<cltrain_tensor_desc> t(4);
  const int dims[4][2] = {{2, 4}, {3, 4}, {3, 0}, {2, 3}};
  for (int i = 0; i < 4; ++i) {
    t[i].rank = dims[i][1] ? 2 : 1;
    t[i].dims[0] = dims[i][0];
    t[i].dims[1] = dims[i][1];
    t[i].dtype = CLTRAIN_FLOAT32;
    t[i].first_step = t[i].last_step = -1;
  }
  return t;
}

// Loads the plugin; runs without an OpenCL device.
class OpenCLPluginAbi : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(CLTRAIN_OPENCL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto entry = reinterpret_cast<cltrain_backend_entry_fn>(dlsym(handle_, CLTRAIN_BACKEND_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr) << dlerror();
    api_ = entry();
    ASSERT_NE(api_, nullptr);
  }
  void TearDown() override {
    if (backend_) api_->destroy(backend_);
    // The plugin stays loaded: CLBlast and the OpenCL ICD do not all unload cleanly.
  }

  // supports() of one step over a tensor table.
  int supports_step(const cltrain_step_desc& s, const std::vector<cltrain_tensor_desc>& t) {
    const cltrain_graph_desc g = cltrain_graph(t.data(), static_cast<int32_t>(t.size()), &s, 1, nullptr);
    return api_->supports(backend_, &g, 0, 1);
  }
  // Whether supports() takes every step of a graph.
  bool supports_all(const cltrain_graph_desc& g) {
    for (int32_t i = 0; i < g.num_steps; ++i)
      if (!api_->supports(backend_, &g, i, 1)) return false;
    return true;
  }
  int supports_fc(int activation, const std::vector<cltrain_tensor_desc>& t) {
    return supports_step(fc_step(activation), t);
  }

  cltrain_status create(int device_index, std::string* err = nullptr, const char* cache_dir = nullptr) {
    cltrain_backend_config config{};
    config.struct_size = sizeof config;
    config.device_index = device_index;
    config.cache_dir = cache_dir;
    char buf[512] = "";
    const cltrain_status st = api_->create(&config, &backend_, buf, sizeof buf);
    if (err) *err = buf;
    return st;
  }

  void* handle_ = nullptr;
  const cltrain_backend_iface* api_ = nullptr;
  cltrain_backend* backend_ = nullptr;
};

// Also needs an OpenCL device: skipped, not failed, where probe says CLTRAIN_UNAVAILABLE.
class OpenCLPlugin : public OpenCLPluginAbi {
 protected:
  void SetUp() override {
    OpenCLPluginAbi::SetUp();
    if (HasFatalFailure()) return;
    char err[512] = "";
    if (api_->probe && api_->probe(err, sizeof err) == CLTRAIN_UNAVAILABLE)
      GTEST_SKIP() << "OpenCL not available: " << err;
  }
};

// A graph desc built by hand; lifetimes from the steps that use each tensor.
struct TinyGraph {
  std::vector<cltrain_tensor_desc> tensors;
  std::vector<cltrain_step_desc> steps;
  std::vector<uint8_t> assigned;

  int tensor(const char* name, std::vector<int> dims, cltrain_role role, const std::vector<float>* data = nullptr) {
    cltrain_tensor_desc t{};
    t.name = name;
    t.rank = static_cast<int32_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) t.dims[i] = dims[i];
    t.dtype = CLTRAIN_FLOAT32;
    t.role = role;
    t.first_step = t.last_step = -1;
    t.persistent = role == CLTRAIN_ROLE_TRAINABLE || role == CLTRAIN_ROLE_OPTIMIZER;
    if (data) {
      t.data = data->data();
      t.data_bytes = data->size() * sizeof(float);
    }
    tensors.push_back(t);
    return static_cast<int>(tensors.size()) - 1;
  }
  int step(cltrain_op op, cltrain_phase phase, std::vector<int> in, std::vector<int> out,
           cltrain_op_params params = {}) {
    cltrain_step_desc s{};
    s.op = op;
    s.phase = phase;
    s.model_op = -1;
    s.num_inputs = static_cast<int32_t>(in.size());
    for (size_t i = 0; i < in.size(); ++i) s.inputs[i] = in[i];
    s.num_outputs = static_cast<int32_t>(out.size());
    for (size_t i = 0; i < out.size(); ++i) s.outputs[i] = out[i];
    s.params = params;
    steps.push_back(s);
    assigned.push_back(1);
    return static_cast<int>(steps.size()) - 1;
  }
  // The host writes `host_written` before step 0 and reads `host_read` after the last step.
  void set_lifetimes(const std::vector<int>& host_written, const std::vector<int>& host_read) {
    const int last = static_cast<int>(steps.size()) - 1;
    auto touch = [&](int id, int s) {
      if (id < 0) return;
      auto& t = tensors[id];
      t.first_step = t.first_step < 0 ? s : std::min(t.first_step, s);
      t.last_step = std::max(t.last_step, s);
    };
    for (int s = 0; s <= last; ++s) {
      for (int i = 0; i < steps[s].num_inputs; ++i) touch(steps[s].inputs[i], s);
      for (int i = 0; i < steps[s].num_outputs; ++i) touch(steps[s].outputs[i], s);
    }
    for (int id : host_written) touch(id, 0);
    for (int id : host_read) touch(id, last);
    for (auto& t : tensors)
      if (t.persistent) t.first_step = 0, t.last_step = last;
  }
  cltrain_graph_desc desc() const {
    return cltrain_graph(tensors.data(), static_cast<int32_t>(tensors.size()), steps.data(),
                         static_cast<int32_t>(steps.size()), assigned.data());
  }
};

}  // namespace cltrain_test
