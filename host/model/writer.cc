// write_model (Model -> circle/tflite bytes).
#include <cstring>
#include <map>
#include <stdexcept>

#include "circle_generated.h"
#include "graph/builtin_names.h"
#include "model/builder.h"
#include "ops/op_descriptor.h"

namespace cltrain {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

fb::TensorType to_tensor_type(int32_t dtype) {
  switch (dtype) {
    case CLTRAIN_FLOAT32: return fb::TensorType::FLOAT32;
    case CLTRAIN_INT32: return fb::TensorType::INT32;
    default: throw std::invalid_argument("write_model: unknown dtype " + std::to_string(dtype));
  }
}

// Constant data in the format's byte order (little endian).
Offset<flatbuffers::Vector<uint8_t>> data_vector(FlatBufferBuilder& fbb, const std::vector<uint8_t>& d) {
  fbb.ForceVectorAlignment(d.size(), 1, 16);
#if FLATBUFFERS_LITTLEENDIAN
  return fbb.CreateVector(d);
#else
  std::vector<uint8_t> le = d;
  for (size_t i = 0; i + 4 <= le.size(); i += 4) std::swap(le[i], le[i + 3]), std::swap(le[i + 1], le[i + 2]);
  return fbb.CreateVector(le);
#endif
}

}  // namespace

std::vector<uint8_t> write_model(const Model& m, const std::string& format) {
  const char* ident = format == "circle" ? "CIR0" : format == "tflite" ? "TFL3" : nullptr;
  if (!ident) throw std::invalid_argument("write_model: format must be circle or tflite, not " + format);
  FlatBufferBuilder fbb(1024 + 1024 * m.tensors.size());

  // Buffer indices: constants keep theirs (> 0) or get the next free one; others keep theirs.
  std::vector<uint32_t> tensor_buffer(m.tensors.size());
  size_t nbuf = 1;
  for (const Tensor& t : m.tensors)
    if (t.is_constant() && t.buffer > 0) nbuf = std::max(nbuf, static_cast<size_t>(t.buffer) + 1);
  std::vector<const std::vector<uint8_t>*> contents(nbuf, nullptr);
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const Tensor& t = m.tensors[i];
    tensor_buffer[i] = static_cast<uint32_t>(t.buffer);
    if (!t.is_constant()) continue;
    if (t.buffer <= 0) {
      tensor_buffer[i] = static_cast<uint32_t>(contents.size());
      contents.push_back(&t.data);
    } else if (!contents[static_cast<size_t>(t.buffer)]) {
      contents[static_cast<size_t>(t.buffer)] = &t.data;
    }
  }
  // The int32 operands ops write beyond the model's tensors (OpDescriptor::written_operands):
  // tensors after the model's, each with its own buffer.
  std::vector<std::vector<int32_t>> extra_inputs(m.operators.size());
  std::vector<std::vector<int32_t>> extra_values;
  std::vector<std::vector<uint8_t>> extra_bytes;
  for (size_t i = 0; i < m.operators.size(); ++i) {
    const OpDescriptor* d = find_op(m.operators[i].op);
    if (!d || !d->written_operands) continue;
    for (std::vector<int32_t>& v : d->written_operands(m, m.operators[i])) {
      extra_inputs[i].push_back(static_cast<int32_t>(m.tensors.size() + extra_values.size()));
      std::vector<uint8_t> bytes(v.size() * 4);
      if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
      extra_bytes.push_back(std::move(bytes));
      extra_values.push_back(std::move(v));
    }
  }
  const size_t first_extra_buffer = contents.size();
  for (const std::vector<uint8_t>& b : extra_bytes) contents.push_back(&b);
  std::vector<Offset<fb::Buffer>> buffers;
  for (const auto* c : contents)
    buffers.push_back(c ? fb::CreateBuffer(fbb, data_vector(fbb, *c)) : fb::CreateBuffer(fbb));

  std::vector<Offset<fb::Tensor>> tensors;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const Tensor& t = m.tensors[i];
    const auto name = fbb.CreateString(t.name);
    const auto shape = fbb.CreateVector(t.shape);
    tensors.push_back(fb::CreateTensor(fbb, shape, to_tensor_type(t.dtype), tensor_buffer[i], name));
  }
  for (size_t k = 0; k < extra_values.size(); ++k) {
    const auto name = fbb.CreateString("operand" + std::to_string(k));
    const auto shape = fbb.CreateVector(std::vector<int32_t>{static_cast<int32_t>(extra_values[k].size())});
    tensors.push_back(
        fb::CreateTensor(fbb, shape, fb::TensorType::INT32, static_cast<uint32_t>(first_extra_buffer + k), name));
  }

  std::map<int32_t, uint32_t> code_index;  // builtin code -> index in operator_codes
  std::vector<Offset<fb::OperatorCode>> codes;
  std::vector<Offset<fb::Operator>> ops;
  for (size_t i = 0; i < m.operators.size(); ++i) {
    const Operator& op = m.operators[i];
    const OpDescriptor* d = find_op(op.op);
    if (!d || d->kind != CLTRAIN_KIND_MODEL || d->builtin_codes.empty())
      throw std::invalid_argument("write_model: operator " + std::to_string(i) + " (" + cltrain_op_name(op.op) +
                                  ") has no builtin code");
    const int32_t code = d->builtin_codes[0];
    auto it = code_index.find(code);
    if (it == code_index.end()) {
      it = code_index.emplace(code, static_cast<uint32_t>(codes.size())).first;
      const int8_t dep = static_cast<int8_t>(std::min(code, kBuiltinPlaceholderForGreaterOpCodes));
      codes.push_back(fb::CreateOperatorCode(fbb, dep, 0, 1, code));
    }
    auto [type, opts] = d->write_options ? d->write_options(fbb, m, op) : WrittenOptions{fb::BuiltinOptions::NONE, 0};
    const auto outputs = fbb.CreateVector(op.outputs);
    std::vector<int32_t> in = op.inputs;
    in.insert(in.end(), extra_inputs[i].begin(), extra_inputs[i].end());
    const auto inputs = fbb.CreateVector(in);
    ops.push_back(fb::CreateOperator(fbb, it->second, inputs, outputs, type, opts));
  }

  // Each part is made in a statement of its own (a function's arguments are evaluated in an order
  // the compiler picks: GCC on x86-64 right to left, on aarch64 left to right), so that a model's
  // bytes are the same on every platform; the order is the one the x86-64 builds always wrote.
  const auto sg_name = fbb.CreateString("main");
  const auto sg_ops = fbb.CreateVector(ops);
  const auto sg_outputs = fbb.CreateVector(m.outputs);
  const auto sg_inputs = fbb.CreateVector(m.inputs);
  const auto sg_tensors = fbb.CreateVector(tensors);
  auto subgraph = fb::CreateSubGraph(fbb, sg_tensors, sg_inputs, sg_outputs, sg_ops, sg_name);
  const uint32_t version = format == "tflite" ? 3 : 0;
  const auto model_buffers = fbb.CreateVector(buffers);
  const auto description = fbb.CreateString("cltrain");
  const auto subgraphs = fbb.CreateVector(&subgraph, 1);
  const auto model_codes = fbb.CreateVector(codes);
  auto model = fb::CreateModel(fbb, version, model_codes, subgraphs, description, model_buffers);
  fbb.Finish(model, ident);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

}  // namespace cltrain
