// The CPU backend's op table and its checks of steps and tensors (steps.h).
#include "steps.h"

#include <algorithm>
#include <sstream>

#include "abi_structs.h"

namespace cltrain {
namespace cpu {

extern const CpuOp* const kOps[CLTRAIN_OP_COUNT];
const CpuOp* const kOps[CLTRAIN_OP_COUNT] = {
#define CLTRAIN_CPU_OP_ENTRY(e, name, code, kind) &kCpuOp_##e,
    CLTRAIN_OP_LIST(CLTRAIN_CPU_OP_ENTRY)
#undef CLTRAIN_CPU_OP_ENTRY
};

extern const int kOpKinds[CLTRAIN_OP_COUNT];
const int kOpKinds[CLTRAIN_OP_COUNT] = {
#define CLTRAIN_CPU_OP_KIND(e, name, code, kind) kind,
    CLTRAIN_OP_LIST(CLTRAIN_CPU_OP_KIND)
#undef CLTRAIN_CPU_OP_KIND
};

const char* phase_name(int32_t phase) {
  const char* const names[] = {"forward", "backward", "update"};
  return phase >= CLTRAIN_PHASE_FORWARD && phase <= CLTRAIN_PHASE_UPDATE ? names[phase] : "?";
}

namespace {

TensorRef make_ref(const TensorAt& tensors, int32_t id, uint8_t* pool, const int64_t* offsets) {
  TensorRef r;
  if (id < 0) return r;
  r.desc = tensors(id);
  r.elements = tensor_elements(*r.desc);
  if (pool && offsets) r.data = reinterpret_cast<float*>(pool + offsets[id]);
  return r;
}

}  // namespace

std::string tensor_label(const cltrain_tensor_desc& t, int32_t id) {
  return "tensor " + std::to_string(id) + (t.name && *t.name ? " (" + std::string(t.name) + ")" : "");
}

StepView make_view(const cltrain_step_desc& step, const TensorAt& tensors, uint8_t* pool, const int64_t* offsets) {
  StepView v;
  v.step = &step;
  for (int i = 0; i < step.num_inputs; ++i) v.in[i] = make_ref(tensors, step.inputs[i], pool, offsets);
  for (int i = 0; i < step.num_outputs; ++i) v.out[i] = make_ref(tensors, step.outputs[i], pool, offsets);
  return v;
}

// Everything about a step except its lifetimes and placement: op, phase, slots, dtypes, shapes.
std::string check_step(const cltrain_step_desc& step, const TensorAt& tensors, int32_t num_tensors) {
  if (step.op < 0 || step.op >= CLTRAIN_OP_COUNT) return "op " + std::to_string(step.op) + " is unknown";
  std::string where = std::string(cltrain_op_name(step.op)) + " " + phase_name(step.phase) + ": ";
  if (step.phase < 0 || step.phase > CLTRAIN_PHASE_UPDATE || !kOps[step.op]->phase[step.phase].run)
    return where + "the op has no step of phase " + std::to_string(step.phase);
  if (step.num_inputs < 0 || step.num_inputs > CLTRAIN_MAX_STEP_IO || step.num_outputs < 0 ||
      step.num_outputs > CLTRAIN_MAX_STEP_IO)
    return where + "bad number of inputs or outputs";
  for (int side = 0; side < 2; ++side) {
    const int32_t count = side ? step.num_outputs : step.num_inputs;
    const int32_t* ids = side ? step.outputs : step.inputs;
    for (int i = 0; i < count; ++i) {
      const int32_t id = ids[i];
      if (id < -1 || id >= num_tensors)
        return where + (side ? "output " : "input ") + std::to_string(i) + " is tensor " + std::to_string(id) +
               ", outside the tensor table";
      if (id < 0) continue;
      const cltrain_tensor_desc& t = *tensors(id);
      if (t.dtype != cltrain_slot_dtype(&step, side, i))
        return where + tensor_label(t, id) + " is not " + dtype_name(cltrain_slot_dtype(&step, side, i));
      if (t.rank < 0 || t.rank > CLTRAIN_MAX_RANK)
        return where + tensor_label(t, id) + " has rank " + std::to_string(t.rank);
      for (int d = 0; d < t.rank; ++d)
        if (t.dims[d] < 0) return where + tensor_label(t, id) + " has a negative dimension";
    }
  }
  if (std::string e = kOps[step.op]->phase[step.phase].check(make_view(step, tensors, nullptr, nullptr)); !e.empty())
    return where + e;
  return {};
}

std::string check_tensor(const cltrain_tensor_desc& t, int32_t id, int32_t last_step) {
  std::ostringstream m;
  m << tensor_label(t, id) << ": ";
  if (t.rank < 0 || t.rank > CLTRAIN_MAX_RANK) {
    m << "rank " << t.rank << " is outside [0, " << CLTRAIN_MAX_RANK << "]";
  } else if (std::any_of(t.dims, t.dims + t.rank, [](int32_t d) { return d < 0; })) {
    m << "has a negative dimension";
  } else if (t.dtype < CLTRAIN_FLOAT32 || t.dtype > CLTRAIN_FLOAT16) {
    m << "dtype " << t.dtype << " is unknown";
  } else if (t.role < 0 || t.role >= CLTRAIN_ROLE_COUNT) {
    m << "role " << t.role << " is unknown";
  } else if (t.first_step > t.last_step || t.last_step > last_step) {
    m << "lifetime [" << t.first_step << ", " << t.last_step << "] is not within the " << (last_step + 1) << " steps";
  } else if (t.data && t.data_bytes != tensor_bytes(t)) {
    m << "initial data has " << t.data_bytes << " bytes, the tensor " << tensor_bytes(t);
  } else {
    return {};
  }
  return m.str();
}

}  // namespace cpu
}  // namespace cltrain
