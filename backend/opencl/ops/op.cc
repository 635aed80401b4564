#include "ops/op.h"

#include "backend.h"
#include "memory_plan.h"

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

std::string require_same_count(const StepView& s, const char* in_role, const char* out_role) {
  std::string why;
  if (!(why = require_tensor(s, s.in(0), in_role)).empty()) return why;
  return require_count(s, s.out(0), out_role, s.count(s.in(0)));
}

bool activation_supported(int32_t activation) {
  return activation == CLTRAIN_ACT_NONE || activation == CLTRAIN_ACT_RELU || activation == CLTRAIN_ACT_RELU_N1_TO_1 ||
         activation == CLTRAIN_ACT_RELU6 || activation == CLTRAIN_ACT_TANH;
}

std::string phase_name(int32_t phase) {
  switch (phase) {
    case CLTRAIN_PHASE_FORWARD: return "forward";
    case CLTRAIN_PHASE_BACKWARD: return "backward";
    case CLTRAIN_PHASE_UPDATE: return "update";
    default: return "phase " + std::to_string(phase);
  }
}

uint64_t StepView::count(int32_t id) const { return tensor_elements(tensor(id)); }

std::string StepView::what() const {
  std::string s = index >= 0 ? "step " + std::to_string(index) + " (" : "(";
  return s + cltrain_op_name(step.op) + " " + phase_name(step.phase) + ")";
}

const DeviceInfo& OpContext::device() const { return b_.device; }
uint64_t OpContext::scratch_cap() const { return b_.scratch_cap; }
bool OpContext::lean() const { return b_.lean; }
const GemmEngine& OpContext::gemm() const { return b_.gemm; }

Kernel OpContext::kernel(const std::string& family, const Defines& defines, const char* name) const {
  return b_.kernels->make(family, defines, name);
}
cl_mem OpContext::pool() const { return b_.pool.buffer; }
cl_uint OpContext::offset(int32_t tensor) const { return b_.pool.elem_offset(tensor); }
cl_uint OpContext::offset_or_zero(int32_t tensor) const {
  return tensor >= 0 ? b_.pool.elem_offset(tensor) : cl_uint{0};
}

size_t OpContext::num_scratch() const {
  const auto& all = b_.pool.step_scratch;
  return s.index >= 0 && static_cast<size_t>(s.index) < all.size() ? all[static_cast<size_t>(s.index)].size() : 0;
}

int32_t OpContext::scratch(size_t i) const {
  if (i >= num_scratch()) fail(CLTRAIN_ERROR, s.what() + " has no scratch tensor " + std::to_string(i));
  return b_.pool.step_scratch[static_cast<size_t>(s.index)][i];
}

bool OpContext::half(int32_t tensor) const { return tensor >= 0 && s.tensor(tensor).dtype == CLTRAIN_FLOAT16; }

Defines& OpContext::storage(Defines& d, const char* name, int32_t tensor) const {
  return d.set(name, half(tensor) ? 1 : 0);
}

Gemm OpContext::with_storage(Gemm g) const {
  // Ids past the host's table (the step's scratch, placeholders) are float32.
  const int32_t host = static_cast<int32_t>(b_.pool.num_host_tensors);
  auto half_id = [&](int32_t id) { return id >= 0 && (host == 0 || id < host) && half(id); };
  g.a_half = half_id(g.a), g.b_half = half_id(g.b), g.c_half = half_id(g.c);
  return g;
}

PreparedGemm OpContext::prepare_gemm(const Gemm& g, int32_t temp) const {
  return b_.gemm.prepare(with_storage(g), temp, b_.pool, *b_.kernels);
}

}  // namespace cltrain::ocl
