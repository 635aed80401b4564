// Helpers the ops use to check their steps.
#include <sstream>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {

std::string shape_string(const TensorRef& t) {
  if (!t.present()) return "(absent)";
  std::ostringstream m;
  m << "[";
  for (int i = 0; i < t.rank(); ++i) m << (i ? "x" : "") << t.dim(i);
  m << "]";
  return m.str();
}

std::string require_slots(const StepView& s, int max_inputs, int max_outputs) {
  std::ostringstream m;
  if (s.step->num_inputs > max_inputs)
    m << "has " << s.step->num_inputs << " inputs, at most " << max_inputs << " expected";
  else if (s.step->num_outputs > max_outputs)
    m << "has " << s.step->num_outputs << " outputs, at most " << max_outputs << " expected";
  return m.str();
}

std::string require(const TensorRef& t, const char* what) {
  if (t.present()) return {};
  return std::string(what) + " is missing";
}

std::string require_elements(const TensorRef& t, uint64_t elements, const char* what) {
  if (!t.present()) return std::string(what) + " is missing";
  if (t.elements == elements) return {};
  std::ostringstream m;
  m << what << " " << (t.desc->name ? t.desc->name : "") << shape_string(t) << " has " << t.elements
    << " elements, expected " << elements;
  return m.str();
}

std::string require_activation(const StepView& s) {
  if (activation_supported(s.params().activation)) return {};
  return "activation " + std::to_string(s.params().activation) + " is not supported";
}

std::string require_dims(const TensorRef& t, const int64_t* dims, int rank, const char* what) {
  if (std::string e = require(t, what); !e.empty()) return e;
  bool same = t.rank() == rank;
  for (int d = 0; same && d < rank; ++d) same = t.dim(d) == dims[d];
  if (same) return {};
  std::ostringstream m;
  m << what << " " << shape_string(t) << " is not [";
  for (int d = 0; d < rank; ++d) m << (d ? "x" : "") << dims[d];
  m << "]";
  return m.str();
}

uint64_t sample_elements(const TensorRef& t) {
  if (t.rank() <= 1) return 1;
  const uint64_t batch = batch_size(t);
  return batch ? t.elements / batch : 0;
}

uint64_t batch_size(const TensorRef& t) {
  if (t.rank() == 0) return 1;
  return t.dim(0) > 0 ? static_cast<uint64_t>(t.dim(0)) : 0;
}

}  // namespace cpu
}  // namespace cltrain
