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
  m << what << " " << (t.desc->name ? t.desc->name : "") << shape_string(t) << " has "
    << t.elements << " elements, expected " << elements;
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
