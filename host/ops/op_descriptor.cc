#include "ops/op_descriptor.h"

#include "graph/activations.h"
#include "graph/labels.h"
#include "memory_plan.h"

namespace cltrain {

const OpDescriptor* find_op(int32_t op) {
  static const OpDescriptor* const kTable[] = {
#define CLTRAIN_OP_DESCRIPTOR_ENTRY(e, name, code, kind) &kOpDesc_##e,
      CLTRAIN_OP_LIST(CLTRAIN_OP_DESCRIPTOR_ENTRY)
#undef CLTRAIN_OP_DESCRIPTOR_ENTRY
  };
  static_assert(sizeof kTable / sizeof kTable[0] == CLTRAIN_OP_COUNT, "one descriptor per op");
  return op >= 0 && op < CLTRAIN_OP_COUNT ? kTable[op] : nullptr;
}

const std::vector<const OpDescriptor*>& all_ops() {
  static const std::vector<const OpDescriptor*> ops = [] {
    std::vector<const OpDescriptor*> v;
    for (int32_t op = 0; op < CLTRAIN_OP_COUNT; ++op) v.push_back(find_op(op));
    return v;
  }();
  return ops;
}

const OpDescriptor* find_builtin(int32_t code) {
  for (const OpDescriptor* d : all_ops())
    for (int32_t c : d->builtin_codes)
      if (c == code && d->kind == CLTRAIN_KIND_MODEL) return d;
  return nullptr;
}

OpDescriptor descriptor_of(int32_t op) {
  OpDescriptor d;
  d.op = op;
#define CLTRAIN_OP_LIST_FIELDS(e, n, c, k) \
  if (op == CLTRAIN_OP_##e) {              \
    d.name = n;                            \
    d.kind = k;                            \
    if ((c) >= 0) d.builtin_codes = {c};   \
  }
  CLTRAIN_OP_LIST(CLTRAIN_OP_LIST_FIELDS)
#undef CLTRAIN_OP_LIST_FIELDS
  return d;
}

int32_t OptionReader::activation(fb::ActivationFunctionType a) const {
  const int32_t act = static_cast<int8_t>(a);
  if (!activation_supported(act)) fail("fused activation " + graph::activation_str(act) + " is not supported");
  return act;
}

void OptionReader::fail(const std::string& msg) const { graph::fail(what_, label_ + ": " + msg); }

uint64_t StepTensors::elements(int32_t id) const {
  return valid(id) ? tensor_elements(tensors[static_cast<size_t>(id)]) : 0;
}

int64_t StepTensors::dim(int32_t id, int d) const {
  if (!valid(id)) return 0;
  const cltrain_tensor_desc& t = tensors[static_cast<size_t>(id)];
  return d < t.rank ? t.dims[d] : 0;
}

uint64_t activation_forward_flops(int32_t act) {
  const Activation* a = find_activation(act);
  return a ? a->forward_flops : 0;
}

uint64_t activation_backward_flops(int32_t act) {
  const Activation* a = find_activation(act);
  return a ? a->backward_flops : 0;
}

}  // namespace cltrain
