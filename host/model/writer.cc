// write_model (Model -> circle/tflite bytes).
#include <cstring>
#include <map>
#include <stdexcept>

#include "circle_generated.h"
#include "model/builder.h"
#include "model/builtin_names.h"

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

// ReshapeOptions.new_shape: the shape operand if there is one, else the output's shape.
std::vector<int32_t> reshape_target(const Model& m, const Operator& op) {
  auto valid = [&](int32_t t) { return t >= 0 && static_cast<size_t>(t) < m.tensors.size(); };
  if (op.inputs.size() > 1 && valid(op.inputs[1])) {
    const Tensor& s = m.tensors[static_cast<size_t>(op.inputs[1])];
    if (s.dtype == CLTRAIN_INT32 && !s.data.empty()) {
      std::vector<int32_t> v(s.data.size() / 4);
      std::memcpy(v.data(), s.data.data(), v.size() * 4);
      return v;
    }
  }
  if (!op.outputs.empty() && valid(op.outputs[0])) return m.tensors[static_cast<size_t>(op.outputs[0])].shape;
  return {};
}

std::pair<fb::BuiltinOptions, Offset<void>> options(FlatBufferBuilder& fbb, const Model& m,
                                                    const Operator& op) {
  const cltrain_op_params& p = op.params;
  const auto act = static_cast<fb::ActivationFunctionType>(p.activation);
  switch (op.op) {
    case CLTRAIN_OP_FULLY_CONNECTED:
      return {
          fb::BuiltinOptions::FullyConnectedOptions,
          fb::CreateFullyConnectedOptions(fbb, static_cast<fb::ActivationFunctionType>(op.params.activation))
              .Union()};
    case CLTRAIN_OP_SOFTMAX:
      return {fb::BuiltinOptions::SoftmaxOptions, fb::CreateSoftmaxOptions(fbb, op.params.beta).Union()};
    case CLTRAIN_OP_RESHAPE:
      return {fb::BuiltinOptions::ReshapeOptions,
              fb::CreateReshapeOptions(fbb, fbb.CreateVector(reshape_target(m, op))).Union()};
    case CLTRAIN_OP_CONV_2D:
      return {fb::BuiltinOptions::Conv2DOptions,
              fb::CreateConv2DOptions(fbb, static_cast<fb::Padding>(p.padding), p.stride_w, p.stride_h, act,
                                      p.dilation_w, p.dilation_h)
                  .Union()};
    case CLTRAIN_OP_DEPTHWISE_CONV_2D:
      return {fb::BuiltinOptions::DepthwiseConv2DOptions,
              fb::CreateDepthwiseConv2DOptions(fbb, static_cast<fb::Padding>(p.padding), p.stride_w, p.stride_h,
                                               p.depth_multiplier, act, p.dilation_w, p.dilation_h)
                  .Union()};
    case CLTRAIN_OP_MAX_POOL_2D:
    case CLTRAIN_OP_AVERAGE_POOL_2D:
      return {fb::BuiltinOptions::Pool2DOptions,
              fb::CreatePool2DOptions(fbb, static_cast<fb::Padding>(p.padding), p.stride_w, p.stride_h, p.filter_w,
                                      p.filter_h, act)
                  .Union()};
    case CLTRAIN_OP_MEAN:
      return {fb::BuiltinOptions::ReducerOptions, fb::CreateReducerOptions(fbb, p.keep_dims != 0).Union()};
    case CLTRAIN_OP_PAD: return {fb::BuiltinOptions::PadOptions, fb::CreatePadOptions(fbb).Union()};
    case CLTRAIN_OP_ADD: return {fb::BuiltinOptions::AddOptions, fb::CreateAddOptions(fbb, act).Union()};
    case CLTRAIN_OP_SUB: return {fb::BuiltinOptions::SubOptions, fb::CreateSubOptions(fbb, act).Union()};
    case CLTRAIN_OP_MUL: return {fb::BuiltinOptions::MulOptions, fb::CreateMulOptions(fbb, act).Union()};
    case CLTRAIN_OP_DIV: return {fb::BuiltinOptions::DivOptions, fb::CreateDivOptions(fbb, act).Union()};
    case CLTRAIN_OP_CONCATENATION:
      return {fb::BuiltinOptions::ConcatenationOptions,
              fb::CreateConcatenationOptions(fbb, p.axis, act).Union()};
    default: return {fb::BuiltinOptions::NONE, 0};
  }
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
  std::vector<Offset<fb::Buffer>> buffers;
  for (const auto* c : contents)
    buffers.push_back(c ? fb::CreateBuffer(fbb, data_vector(fbb, *c)) : fb::CreateBuffer(fbb));

  std::vector<Offset<fb::Tensor>> tensors;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const Tensor& t = m.tensors[i];
    tensors.push_back(fb::CreateTensor(fbb, fbb.CreateVector(t.shape), to_tensor_type(t.dtype),
                                       tensor_buffer[i], fbb.CreateString(t.name)));
  }

  std::map<int32_t, uint32_t> code_index;  // builtin code -> index in operator_codes
  std::vector<Offset<fb::OperatorCode>> codes;
  std::vector<Offset<fb::Operator>> ops;
  for (size_t i = 0; i < m.operators.size(); ++i) {
    const Operator& op = m.operators[i];
    const int32_t code = op_to_builtin(op.op);
    if (code < 0)
      throw std::invalid_argument("write_model: operator " + std::to_string(i) + " (" +
                                  cltrain_op_name(op.op) + ") has no builtin code");
    auto it = code_index.find(code);
    if (it == code_index.end()) {
      it = code_index.emplace(code, static_cast<uint32_t>(codes.size())).first;
      const int8_t dep = static_cast<int8_t>(std::min(code, kBuiltinPlaceholderForGreaterOpCodes));
      codes.push_back(fb::CreateOperatorCode(fbb, dep, 0, 1, code));
    }
    auto [type, opts] = options(fbb, m, op);
    ops.push_back(fb::CreateOperator(fbb, it->second, fbb.CreateVector(op.inputs),
                                     fbb.CreateVector(op.outputs), type, opts));
  }

  auto subgraph =
      fb::CreateSubGraph(fbb, fbb.CreateVector(tensors), fbb.CreateVector(m.inputs),
                         fbb.CreateVector(m.outputs), fbb.CreateVector(ops), fbb.CreateString("main"));
  const uint32_t version = format == "tflite" ? 3 : 0;
  auto model = fb::CreateModel(fbb, version, fbb.CreateVector(codes), fbb.CreateVector(&subgraph, 1),
                               fbb.CreateString("cltrain"), fbb.CreateVector(buffers));
  fbb.Finish(model, ident);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

}  // namespace cltrain
