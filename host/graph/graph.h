// The in-memory model: what the loader produces, the passes rewrite, the builder writes and the
// runtime trains. Data only, with the index helpers every reader of a model needs; host/ops and
// host/passes read it without depending on the loader (host/model).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"

namespace cltrain {

// A problem with a model file; what() is one line for the user.
struct ModelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Tensor {
  std::string name;
  std::vector<int32_t> shape;  // shape[0] is the batch for activations
  int32_t dtype = CLTRAIN_FLOAT32;
  // Constant contents (weights, shape operands), empty for activations. Float32 data is stored
  // as floats in host order.
  std::vector<uint8_t> data;
  int32_t buffer = 0;  // index of the model buffer holding data (0: none)
  // Byte offset of data within Model::file (inside the flatbuffer, or after it for offset/size
  // buffers); -1 where the tensor has no data or the model was not loaded from a file.
  int64_t file_offset = -1;
  bool is_constant() const { return !data.empty(); }
  uint64_t elements() const {
    uint64_t n = 1;
    for (int32_t d : shape) n *= static_cast<uint64_t>(d);
    return n;
  }
};

struct Operator {
  int32_t op = -1;              // cltrain_op
  std::vector<int32_t> inputs;  // tensor indices; -1 for an absent optional input
  std::vector<int32_t> outputs;
  cltrain_op_params params{};
  // Its index among the file's operators (which also counts shape_ops), for messages; -1 in a
  // model built in memory, where it is the index in Model::operators.
  int32_t file_index = -1;
  // One of the operators the file's operator file_index became at load (a SPLIT's outputs as one
  // SLICE each): export keeps the file's operator as it was.
  bool part = false;
  // A part's weights that are the file operator's own inputs: per input, that operator's input slot
  // (-1: none). Export writes a weight a pass replaced (untie-constants' copy) into that slot.
  std::vector<int32_t> file_slots = {};
  // Added by the runtime after the file's operators (LoRA's adapters, passes/model_edits.h):
  // file_index is the operator it adapts; not a file operator, export leaves it out.
  bool added = false;
  // A step of a loop's body (passes/while_loops.cc): the body's subgraph and operator it copies
  // (-1: none). Export gives that operator what this one reads in place of the file's weights.
  int32_t body_subgraph = -1, body_op = -1;
};

// An integer operator over shapes (passes/shape_ops.h), evaluated on the host.
struct ShapeOperator {
  int32_t code = 0;  // the format's builtin code (SHAPE 77, STRIDED_SLICE 45, PACK 83, ...)
  std::vector<int32_t> inputs, outputs;
  // STRIDED_SLICE: begin, end, ellipsis, new-axis and shrink-axis masks, offset; PACK: axis;
  // GATHER: axis, batch_dims; CONCATENATION: axis; REDUCE_PROD: keep_dims; SQUEEZE: its dims.
  std::vector<int32_t> options;
  int32_t file_index = -1;
};

// An entry of the model's metadata list (circle/tflite Model.metadata): a name and the bytes of
// the buffer it points to (e.g. "CIRCLE_TRAINING", model/export.h).
struct ModelMetadata {
  std::string name;
  int32_t buffer = 0;         // index of the model buffer
  std::vector<uint8_t> data;  // that buffer's bytes (empty for buffer 0 or an empty buffer)
};

// One line of the rewrite log: a pass's name and what it changed ("added 2 zero biases").
struct Rewrite {
  std::string pass, change;
};

// A constant of the file that the operators no longer read (Model::reads_instead): export writes
// it as count values of source from offset, repeated to fill it (passes/folded_biases.cc).
struct DerivedConstant {
  int32_t tensor = -1, source = -1, offset = 0, count = 0;
};

struct Model {
  std::string format;  // "circle" or "tflite"
  std::vector<Tensor> tensors;
  std::vector<Operator> operators;
  std::vector<ShapeOperator> shape_ops;  // folded on the host (passes/shape_ops.h), in file order
  // File indices of operators folded into others at load (Keras' embedding index guard, the
  // reshapes around a Tensordot's FULLY_CONNECTED, see loader.cc), in increasing order; the file
  // keeps them.
  std::vector<int32_t> folded_ops;
  // What a folded operator gave: its output tensor -> the tensor the operators read instead (the
  // guarded ids, the Tensordot's input); export writes the file's tensor back where it had it.
  std::map<int32_t, int32_t> reads_instead;
  std::vector<DerivedConstant> derived;  // constants export writes from trained weights
  std::vector<int32_t> fixed_constants;  // float constants a pass made that are never trained (a mask's table)
  std::vector<int32_t> inputs;           // subgraph inputs
  std::vector<int32_t> outputs;          // subgraph outputs
  std::vector<uint8_t> file;             // the file as loaded (for export with new weights)
  // How many of tensors the file holds; the rest were added (passes/model_edits.h). -1: all of
  // them (a model built in memory).
  int32_t file_tensor_count = -1;
  std::vector<ModelMetadata> metadata;  // in file order
  std::string source;                   // the path or name the loader was given (for messages)
  // Why the batch cannot change ("" where it can): a pass that built the graph for the file's
  // batch says so (passes/while_loops.cc: unrolled loops keep their steps' lists time-major).
  std::string fixed_batch;
  // What the rewrite passes changed in this model, in the order they ran (host/passes/passes.h).
  std::vector<Rewrite> rewrites;
};

// The operators of the file (Model::operators, the parts of one counted once, Model::shape_ops
// and the folded ones), which the indices of training info, train configs and messages count.
inline size_t file_operator_count(const Model& m) {
  size_t n = m.shape_ops.size() + m.folded_ops.size();
  for (size_t i = 0; i < m.operators.size(); ++i)
    n += !m.operators[i].added && (!m.operators[i].part || i == 0 || !m.operators[i - 1].part ||
                                   m.operators[i - 1].file_index != m.operators[i].file_index);
  return n;
}
// Per file operator index, its index in Model::operators (of a part, the first), or -1 for a
// shape or folded operator.
std::vector<int32_t> model_operator_index(const Model& m);
// The file index of Model::operators[i].
inline int32_t file_operator_index(const Model& m, size_t i) {
  return m.operators[i].file_index >= 0 ? m.operators[i].file_index : static_cast<int32_t>(i);
}

}  // namespace cltrain
