#include "ops/ops.h"

#include "cl_error.h"

namespace cltrain::ocl {

const OpFamily* find_op_family(int op) {
  static const OpFamily* const kTable[] = {
#define CLTRAIN_OCL_TABLE_ENTRY(e, name, code, kind) &kOp_##e,
      CLTRAIN_OP_LIST(CLTRAIN_OCL_TABLE_ENTRY)
#undef CLTRAIN_OCL_TABLE_ENTRY
  };
  static_assert(sizeof kTable / sizeof kTable[0] == CLTRAIN_OP_COUNT, "one entry per op");
  if (op < 0 || op >= CLTRAIN_OP_COUNT) return nullptr;
  return kTable[op];
}

std::string require_tensor(const StepView& s, int32_t id, const char* role) {
  if (id < 0) return std::string("needs the ") + role + " tensor";
  return {};
}

std::string unary_pair(const StepView& s, int32_t* x, int32_t* y) {
  std::string why;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    *x = s.in(0), *y = s.out(0);
    if (!(why = require_tensor(s, *x, "input")).empty()) return why;
    return require_tensor(s, *y, "output");
  }
  if (s.step.phase == CLTRAIN_PHASE_BACKWARD) {
    *y = s.in(0), *x = s.out(0);
    if (!(why = require_tensor(s, *y, "output gradient")).empty()) return why;
    return require_tensor(s, *x, "input gradient");
  }
  return "has no " + phase_name(s.step.phase) + " step";
}

std::string require_count(const StepView& s, int32_t id, const char* role, uint64_t count) {
  if (id < 0) return std::string("needs the ") + role + " tensor";
  if (s.count(id) != count)
    return std::string(role) + " (tensor " + std::to_string(id) + ") has " + std::to_string(s.count(id)) +
           " elements, expected " + std::to_string(count);
  return {};
}

bool activation_supported(int32_t activation) {
  return activation == CLTRAIN_ACT_NONE || activation == CLTRAIN_ACT_RELU || activation == CLTRAIN_ACT_RELU_N1_TO_1 ||
         activation == CLTRAIN_ACT_RELU6 || activation == CLTRAIN_ACT_TANH;
}

int32_t scratch_tensor(const Backend& b, const StepView& s, size_t i) {
  if (s.index < 0 || static_cast<size_t>(s.index) >= b.step_scratch.size() || i >= b.step_scratch[s.index].size())
    fail(CLTRAIN_ERROR, s.what() + " has no scratch tensor " + std::to_string(i));
  return b.step_scratch[s.index][i];
}

}  // namespace cltrain::ocl
