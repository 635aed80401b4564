// The CLI's hold on a session of the C API (cltrain.h): created from a model file, destroyed with
// it; a call that fails throws ApiError, whose what() is the session's one line ("model error:
// ...").
#pragma once

#include <stdexcept>
#include <string>

#include "cltrain/cltrain.h"

namespace cltrain {

struct ApiError : std::runtime_error {
  ApiError(cltrain_status s, const std::string& line) : std::runtime_error(line), status(s) {}
  cltrain_status status;
};

class ApiSession {
 public:
  explicit ApiSession(const std::string& model_path) {
    char err[1024];
    const cltrain_status st = cltrain_session_create(model_path.c_str(), &s_, err, sizeof err);
    if (st != CLTRAIN_OK) throw ApiError(st, err);
  }
  ~ApiSession() { cltrain_session_destroy(s_); }
  ApiSession(const ApiSession&) = delete;
  ApiSession& operator=(const ApiSession&) = delete;

  cltrain_session* get() const { return s_; }
  void check(cltrain_status st) const {
    if (st != CLTRAIN_OK) throw ApiError(st, cltrain_last_error(s_));
  }

 private:
  cltrain_session* s_ = nullptr;
};

}  // namespace cltrain
