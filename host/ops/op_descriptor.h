// One descriptor per op of CLTRAIN_OP_LIST: everything the host knows of an op, in one place.
//
// The loader (builtin codes, options), the graph check (slots, operand checks, shape inference),
// the model writer (options), the batch change, the training graph (which weights train, what
// each backward step reads and writes, in-place pairs, fused activations), placement, FLOPs and
// the CLI (`cltrain ops`) all read it; none of them has a switch over ops. Each op family file in
// host/ops/ defines kOpDesc_<ENUM> for its ops; the table below is built from the op list, so an
// op added to the list without a descriptor fails to link.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "circle_generated.h"
#include "cltrain/cltrain_backend.h"
#include "graph/graph.h"

namespace cltrain {

class OperandCheck;
class OptionReader;
class StepBuilder;
struct StepTensors;

// How an op treats the fused activation of its options (cltrain_activation).
enum class FusedActivation {
  kNone,      // its options carry none: params.activation stays NONE
  kOnlyNone,  // its options carry one, and only NONE is supported (pools, concatenation)
  kAny,       // NONE, RELU, RELU_N1_TO_1, RELU6, TANH, applied to the output; the backward applies
              // its derivative from y, or a consumer that reads the output does (dx_activation)
};

// A constant int32 operand that the graph check turns into params (a shape, axes, paddings):
// never a step input.
struct ConstantOperand {
  int slot = -1;               // -1: the op has none
  const char* name = nullptr;  // "shape", "axes", "paddings"
  bool carries_batch = false;  // its first value is the batch size (Reshape's target shape)
};

// The output of a step that may share the bytes of an input (cltrain_ops.h lists the pairs):
// (output slot, input slot), (-1, -1) for none. dead: the input must be dead after the step
// (it is overwritten), not only read from then on.
struct InPlacePair {
  int out = -1, in = -1;
  bool dead = true;
};

using WrittenOptions = std::pair<fb::BuiltinOptions, flatbuffers::Offset<void>>;

struct OpDescriptor {
  int32_t op = -1;
  const char* name = "?";              // from the op list
  int kind = CLTRAIN_KIND_MODEL;       // from the op list (CLTRAIN_KIND_*)
  std::vector<int32_t> builtin_codes;  // the circle/tflite codes it loads from; the first is written

  // Slots of the model operator: inputs [min_inputs, max_inputs], those from optional_from on may
  // be -1 (absent); exactly `outputs` outputs.
  int min_inputs = 1, max_inputs = 1, optional_from = 1, outputs = 1;
  ConstantOperand constant;
  // Input slots (bit k: slot k) that take int32 tensors computed at run time or the model's input
  // (GATHER's ids); every other non-constant operand is float32.
  uint32_t int32_inputs = 0;
  int bias_slot = -1;              // the bias (trained alone with ONLY_BIAS), -1 for none
  bool half_weight_ranks = false;  // onert-micro's UPPER/LOWER half ranks apply
  bool folds_pad = false;          // a Pad before it folds into SAME padding (padding-free VALID)
  // Binary element-wise with numpy broadcasting between equal ranks: the loader gives a constant
  // operand of lower rank (a scalar, a per-channel vector) leading 1s, as numpy aligns it.
  bool broadcasts = false;
  FusedActivation fused_activation = FusedActivation::kNone;
  // Its float constants are fixed values, never trained (FILL's value).
  bool fixed_constants = false;
  // Its output is piecewise constant in its inputs (a comparison's 0/1 mask): no gradient flows
  // through it, so the training graph gives the output none and the op needs no backward.
  bool piecewise_constant = false;
  // Every backend's kernels take float16 storage (CLTRAIN_FLOAT16) for the op's activation and
  // back-prop tensors, rounding each output element once (cltrain_backend.h, Numerics): the host
  // stores a tensor as float16 under --storage fp16 only where all its steps' ops say so.
  bool half_storage = false;

  // Options: the union type its operators carry (NONE: none), whether it must be there, how the
  // loader reads it into params and how the writer writes params back.
  fb::BuiltinOptions options = fb::BuiltinOptions::NONE;
  bool options_required = false;
  void (*read_options)(const fb::Operator& op, OptionReader& r, cltrain_op_params& p) = nullptr;
  WrittenOptions (*write_options)(flatbuffers::FlatBufferBuilder& fbb, const Model& m, const Operator& op) = nullptr;
  // Int32 constant operands the writer appends to the operator's inputs (1-D each), for an op
  // whose params the format keeps in operands the model operator does not have (SLICE's begin
  // and size).
  std::vector<std::vector<int32_t>> (*written_operands)(const Model& m, const Operator& op) = nullptr;

  // Checks operand types and shapes, completes params that come from operands, and gives the
  // output shape (c.expect_output): the graph check compares it with the declared one, the model
  // builder takes it.
  void (*check)(OperandCheck& c) = nullptr;
  // Why the batch size of a model with this operator cannot change, or nullptr.
  const char* (*fixed_batch)(const Operator& op) = nullptr;

  // Training graph: the forward step's extra outputs (the default step reads the inputs less the
  // constant operand, absent optional ones as -1, and writes the outputs), and the backward step.
  void (*forward)(StepBuilder& s) = nullptr;
  void (*backward)(StepBuilder& s) = nullptr;  // nullptr: the op cannot be trained through
  InPlacePair (*in_place)(const cltrain_step_desc& step) = nullptr;
  uint64_t (*flops)(const StepTensors& s) = nullptr;  // of one step; nullptr: 0
};

#define CLTRAIN_DECLARE_OP_DESCRIPTOR(e, name, code, kind) extern const OpDescriptor kOpDesc_##e;
CLTRAIN_OP_LIST(CLTRAIN_DECLARE_OP_DESCRIPTOR)
#undef CLTRAIN_DECLARE_OP_DESCRIPTOR

// The descriptor of an op value, or nullptr for a value outside the list.
const OpDescriptor* find_op(int32_t op);
// The descriptor of the model op a builtin code loads as, or nullptr.
const OpDescriptor* find_builtin(int32_t code);
// Every descriptor, in op list order.
const std::vector<const OpDescriptor*>& all_ops();

// A descriptor with the op list's name, kind and builtin code filled in (descriptor files start
// from it).
OpDescriptor descriptor_of(int32_t op);

// ---- what the descriptors' functions receive ----

// The options table of one operator as the loader reads it; fail() makes one ModelError line.
class OptionReader {
 public:
  OptionReader(const std::string& what, const std::string& label) : what_(what), label_(label) {}
  // A fused activation the kernels know (NONE to TANH), else a ModelError.
  int32_t activation(fb::ActivationFunctionType a) const;
  [[noreturn]] void fail(const std::string& msg) const;

 private:
  const std::string& what_;
  const std::string& label_;
};

// The tensors of one training step as FLOPs see them.
struct StepTensors {
  const cltrain_step_desc& step;
  const std::vector<cltrain_tensor_desc>& tensors;

  int32_t in(int i) const { return i < step.num_inputs ? step.inputs[i] : -1; }
  int32_t out(int i) const { return i < step.num_outputs ? step.outputs[i] : -1; }
  bool valid(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < tensors.size(); }
  uint64_t elements(int32_t id) const;
  int64_t dim(int32_t id, int d) const;
  bool forward() const { return step.phase == CLTRAIN_PHASE_FORWARD; }
};

// FLOPs of a fused activation per output element, forward and backward.
uint64_t activation_forward_flops(int32_t act);
uint64_t activation_backward_flops(int32_t act);

// What the training graph lets a descriptor see and do while it makes one operator's step.
// forward(): `out` holds the outputs; the hook may append private outputs (and remember one with
// keep()). backward(): the hook fills `in` and `out` (cltrain_ops.h's step conventions) and may
// change params.
class StepBuilder {
 public:
  StepBuilder(const Operator& op, cltrain_op_params params) : op(op), params(params) {}
  virtual ~StepBuilder() = default;

  const Operator& op;        // the model operator as trained (a folded Pad's input, SAME padding)
  cltrain_op_params params;  // the step's params; backward: activation NONE where a consumer applied it
  std::vector<int32_t> in, out;

  int32_t input(size_t k) const { return k < op.inputs.size() ? op.inputs[k] : -1; }
  int32_t y() const { return op.outputs[0]; }
  // The output's back-prop tensor (backward only).
  virtual int32_t dy() const = 0;
  // y where the step applies its fused activation's derivative, else -1.
  int32_t y_if_activation() const { return params.activation != CLTRAIN_ACT_NONE ? y() : -1; }

  virtual bool needs_grad(int32_t t) const = 0;
  // The tensor the backward writes t's gradient into, -1 where t needs none. Call once per slot,
  // in slot order: each call after the first of a tensor adds a disposable one and its
  // accumulation.
  virtual int32_t grad_of(int32_t t) = 0;
  // t's gradient tensor where an earlier backward step wrote it, else -1 (creates nothing): a
  // step that adds its contribution there itself (an input slot and an output slot on the same
  // tensor) rather than through grad_of's disposable and ACCUMULATE.
  virtual int32_t grad_so_far(int32_t t) const = 0;
  // The tensor the backward writes the sum of the squares of t's per-id gradient rows into, for
  // Adam's v (Keras's Adam on an Embedding table takes its gradient as IndexedSlices and squares
  // each id's row before adding them), or -1 where the graph wants none: not Adam, t not trained
  // or read by another operator too. Call after grad_of(t).
  virtual int32_t squares_of(int32_t t) = 0;
  // The activation of x's producer, when this operator may apply its derivative to dx (x read by
  // this operator only, its producer fuses an activation of kind kAny); the producer's backward
  // then applies none. NONE otherwise.
  virtual int32_t producer_activation(int32_t x) = 0;

  virtual uint64_t elements(int32_t t) const = 0;
  virtual int32_t add_tensor(const std::string& name, int32_t like, int32_t dtype, int32_t role) = 0;
  virtual const char* name_of(int32_t t) const = 0;
  // A tensor the forward hook keeps for the backward hook of the same operator (-1: none).
  virtual void keep(int32_t t) = 0;
  virtual int32_t kept() const = 0;
};

// The operand checks a descriptor's check() runs: each failure is one ModelError line naming the
// operator ("m.circle: operator 2 (Conv2D): ..."). When the model builder asks for an output
// shape (inferring()), expect_output() sets the output's shape instead of comparing.
class OperandCheck {
 public:
  OperandCheck(Model& m, size_t index, const std::string& what, bool infer);

  Operator& op;
  const Tensor& in(size_t k) const;
  const Tensor& out(size_t k) const;
  bool has_input(size_t k) const { return k < op.inputs.size() && op.inputs[k] >= 0; }
  bool inferring() const { return infer_; }

  [[noreturn]] void bad(const std::string& msg) const;
  std::string label(int32_t tensor) const;  // "tensor 3 'fc1/weights'"

  void require_float(size_t k) const;
  void require_rank4(const Tensor& x, const char* what, const char* layout) const;
  void same_shape();  // the output's shape is input 0's
  // The declared output shape must be `computed`; inferring, it becomes the output's shape.
  void expect_output(const std::vector<int64_t>& computed);
  // Output size of a window op along axis 1 (height) or 2 (width) of input 0.
  int64_t window(int axis, int64_t filter, int64_t stride, int64_t dilation) const;
  // The values of a constant int32 operand.
  std::vector<int32_t> int32_values(size_t k) const;

 private:
  Model& m_;
  const std::string& what_;
  std::string label_;
  bool infer_;
};

// The checks of operator `index` of m that every op shares, each failure one ModelError line
// naming `what` and the operator. check_slots: a model op, its inputs and outputs, its constant
// operand. check_operands: its fused activation, then the descriptor's check() (infer: setting
// the output shape rather than comparing it).
void check_slots(const Model& m, size_t index, const std::string& what);
void check_operands(Model& m, size_t index, const std::string& what, bool infer);

// Both, setting the shape of the operator's output (the model builder).
void infer_output_shape(Model& m, size_t index, const std::string& what);

}  // namespace cltrain
