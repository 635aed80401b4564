// Inside the C API's folder: the session behind a cltrain_session handle and how every call
// turns exceptions into a status and the session's last error (cltrain_api*.cc).
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "cltrain/cltrain.h"
#include "engine.h"

struct cltrain_session {
  std::unique_ptr<cltrain::Engine> engine;
  std::string error;
  // Strings handed out, valid until the next call.
  std::string backends, cache_dir, train_config, name, device, checkpoint_dir;
  std::string train_config_path;  // the train config file read into the settings, if any
};

namespace cltrain {
namespace api {

// The status the exception being handled stands for, and its one line.
cltrain_status status_of(std::string* message);

template <class F>
inline cltrain_status guarded(cltrain_session* s, F&& f) {
  if (!s) return CLTRAIN_INVALID;
  try {
    f(*s->engine);
    s->error.clear();
    return CLTRAIN_OK;
  } catch (...) {
    return status_of(&s->error);
  }
}

inline void require(const void* p, const char* what) {
  if (!p) throw std::invalid_argument(std::string(what) + " is NULL");
}

// Copies full into the caller's struct as far as its struct_size reaches (an older, shorter one).
template <class T>
inline void copy_sized_out(T full, T* out, const char* type) {
  const uint32_t size = out->struct_size;
  if (size == 0) throw std::invalid_argument(std::string("out->struct_size is 0: set it to sizeof(") + type + ")");
  full.struct_size = size;
  std::memcpy(out, &full, std::min<size_t>(size, sizeof full));
}

}  // namespace api
}  // namespace cltrain
