// Loads and verifies circle (CIR0) and tflite (TFL3) files into a cltrain::Model.
//
// Order of checks: identifier, flatbuffer verification (every offset in bounds), then the model
// itself: subgraph, buffers, tensors, operator codes, operators, and last the graph
// (graph_check.cc). Every problem becomes one ModelError line that names the file.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <tuple>

#include "circle_generated.h"
#include "model/builtin_names.h"
#include "model/model.h"
#include "model/model_internal.h"
#include "model/shape_ops.h"
#include "model/slices.h"
#include "ops/op_descriptor.h"

namespace cltrain {

using detail::fail;
using detail::printable;
using detail::shape_str;

namespace {

// Larger tensors are rejected so that element counts and byte sizes never overflow later.
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 40;

const char* tensor_type_name(int8_t t) {
  static const char* const names[] = {"FLOAT32", "FLOAT16",  "INT32",     "UINT8",  "INT64",   "STRING",
                                      "BOOL",    "INT16",    "COMPLEX64", "INT8",   "FLOAT64", "COMPLEX128",
                                      "UINT64",  "RESOURCE", "VARIANT",   "UINT32", "UINT16",  "INT4"};
  if (t >= 0 && t < static_cast<int8_t>(sizeof(names) / sizeof(names[0]))) return names[t];
  return nullptr;
}

std::string type_str(int8_t t) {
  const char* n = tensor_type_name(t);
  return n ? std::string(n) : "type " + std::to_string(t);
}

std::string identifier_str(const uint8_t* p) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    char c = static_cast<char>(p[i]);
    if (c >= 0x20 && c < 0x7f) {
      s += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", p[i]);
      s += buf;
    }
  }
  return s;
}

// A checked view of the model's buffers; data may live in the flatbuffer or after it.
struct Buffers {
  const std::vector<uint8_t>& file;
  const flatbuffers::Vector<flatbuffers::Offset<fb::Buffer>>* buffers;
  const std::string& what;

  uint32_t count() const { return buffers ? buffers->size() : 0; }

  // The bytes of buffer b (b < count()).
  std::pair<const uint8_t*, uint64_t> get(uint32_t b) const {
    const fb::Buffer* buf = buffers->Get(b);
    if (buf->data() && buf->data()->size() > 0) return {buf->data()->data(), buf->data()->size()};
    uint64_t off = buf->offset(), size = buf->size();
    if (off > 1) {  // the format's "valid if > 1"
      if (off > file.size() || size > file.size() - off)
        fail(what, "buffer " + std::to_string(b) + ": data at offset " + std::to_string(off) + " size " +
                       std::to_string(size) + " lies outside the file (" + std::to_string(file.size()) + " bytes)");
      return {file.data() + off, size};
    }
    return {nullptr, 0};
  }
};

void copy_le32(const uint8_t* src, uint64_t bytes, std::vector<uint8_t>& dst) {
  dst.assign(src, src + bytes);
#if !FLATBUFFERS_LITTLEENDIAN
  for (uint64_t i = 0; i + 4 <= bytes; i += 4) std::swap(dst[i], dst[i + 3]), std::swap(dst[i + 1], dst[i + 2]);
#endif
}

Tensor load_tensor(const fb::Tensor* ft, int32_t index, const Buffers& bufs, const std::string& what) {
  Tensor t;
  if (ft->name()) t.name = ft->name()->str();
  const std::string label = "tensor " + std::to_string(index) + " '" + printable(t.name) + "'";
  if (ft->shape()) t.shape.assign(ft->shape()->begin(), ft->shape()->end());
  if (t.shape.size() > CLTRAIN_MAX_RANK)
    fail(what,
         label + ": rank " + std::to_string(t.shape.size()) + " is more than " + std::to_string(CLTRAIN_MAX_RANK));
  uint64_t elements = 1;
  for (int32_t d : t.shape) {
    if (d <= 0)
      fail(what, label + ": shape " + shape_str(t.shape) + " has a " + (d < 0 ? "negative" : "zero") + " dimension");
    elements *= static_cast<uint64_t>(d);
    if (elements > kMaxTensorBytes / 4) fail(what, label + ": shape " + shape_str(t.shape) + " is too large");
  }
  const int8_t type = static_cast<int8_t>(ft->type());
  if (type == static_cast<int8_t>(fb::TensorType::FLOAT32)) {
    t.dtype = CLTRAIN_FLOAT32;
  } else if (type == static_cast<int8_t>(fb::TensorType::INT32)) {
    t.dtype = CLTRAIN_INT32;
  } else if (type == static_cast<int8_t>(fb::TensorType::BOOL)) {
    t.dtype = CLTRAIN_UINT8;  // a byte per element; only an index guard's condition (folded) has them
  } else {
    fail(what, label + ": " + type_str(type) + " tensors are not supported (float32 models only)");
  }
  if (ft->sparsity()) fail(what, label + ": sparse tensors are not supported");

  const uint32_t b = ft->buffer();
  if (b != 0) {
    if (b >= bufs.count())
      fail(what, label + ": buffer index " + std::to_string(b) + " out of range (model has " +
                     std::to_string(bufs.count()) + " buffers)");
    auto [data, size] = bufs.get(b);
    const uint64_t need = elements * detail::dtype_size(t.dtype);
    if (size > 0) {
      if (size != need)
        fail(what, label + ": buffer holds " + std::to_string(size) + " bytes, shape " + shape_str(t.shape) + " " +
                       (t.dtype == CLTRAIN_INT32   ? "int32"
                        : t.dtype == CLTRAIN_UINT8 ? "bool"
                                                   : "float32") +
                       " needs " + std::to_string(need));
      if (t.dtype == CLTRAIN_UINT8)
        t.data.assign(data, data + size);
      else
        copy_le32(data, size, t.data);
      t.buffer = static_cast<int32_t>(b);
      t.file_offset = static_cast<int64_t>(data - bufs.file.data());
    }
  }
  // A non-constant int32 tensor is refused by graph_check.cc, which can name the operand.
  return t;
}

// The builtin code an operator code stands for. Old files set only the byte field; codes from
// 127 up (and circle's negative codes) put 127 in the byte field and the code in builtin_code.
int32_t effective_code(const fb::OperatorCode* oc) {
  const int32_t dep = oc->deprecated_builtin_code();
  if (dep == kBuiltinPlaceholderForGreaterOpCodes) return oc->builtin_code();
  return std::max(dep, oc->builtin_code());
}

// Keras' Embedding guards its ids before the GATHER: SELECT_V2(LESS(ids, 0), ADD(ids, V), ids)
// with V the table's rows (SELECT with a fixed batch), which is GATHER's own rule (negative ids
// count from the end, cltrain_ops.h). Such a guard is folded: its three operators leave the
// graph (the file keeps them: export writes them back as they were) and the GATHERs read ids.
struct IndexGuards {
  std::vector<int32_t> ops;          // file indices of the folded operators
  std::map<int32_t, int32_t> reads;  // guard output -> the ids it guards
};

IndexGuards find_index_guards(const fb::SubGraph& sg,
                              const flatbuffers::Vector<flatbuffers::Offset<fb::OperatorCode>>* codes, const Model& m) {
  IndexGuards g;
  const auto* ops = sg.operators();
  const size_t nt = m.tensors.size();
  auto code_of = [&](const fb::Operator* o) {
    return codes && o->opcode_index() < codes->size() ? effective_code(codes->Get(o->opcode_index())) : -1;
  };
  auto ins = [](const fb::Operator* o) {
    return o->inputs() ? std::vector<int32_t>(o->inputs()->begin(), o->inputs()->end()) : std::vector<int32_t>{};
  };
  auto outs = [](const fb::Operator* o) {
    return o->outputs() ? std::vector<int32_t>(o->outputs()->begin(), o->outputs()->end()) : std::vector<int32_t>{};
  };
  auto valid = [&](int32_t t) { return t >= 0 && static_cast<size_t>(t) < nt; };
  // Per tensor: its producer and its readers (operator, slot).
  std::vector<int32_t> producer(nt, -1);
  std::vector<std::vector<std::pair<int32_t, size_t>>> readers(nt);
  for (uint32_t i = 0; i < ops->size(); ++i) {
    const fb::Operator* o = ops->Get(i);
    const std::vector<int32_t> in = ins(o), out = outs(o);
    for (size_t k = 0; k < in.size(); ++k)
      if (valid(in[k])) readers[static_cast<size_t>(in[k])].push_back({static_cast<int32_t>(i), k});
    for (int32_t t : out)
      if (valid(t)) producer[static_cast<size_t>(t)] = static_cast<int32_t>(i);
  }
  auto scalar = [&](int32_t t, int32_t* v) {
    if (!valid(t)) return false;
    const Tensor& x = m.tensors[static_cast<size_t>(t)];
    if (x.dtype != CLTRAIN_INT32 || !x.is_constant() || x.elements() != 1 || x.data.size() != 4) return false;
    std::memcpy(v, x.data.data(), 4);
    return true;
  };
  constexpr int32_t kLess = 58, kSelect = 64, kSelectV2 = 123, kAdd = 0, kGather = 36;
  for (uint32_t i = 0; i < ops->size(); ++i) {
    const fb::Operator* sel = ops->Get(i);
    const int32_t sc = code_of(sel);
    const std::vector<int32_t> si = ins(sel), so = outs(sel);
    if ((sc != kSelect && sc != kSelectV2) || si.size() != 3 || so.size() != 1 || !valid(so[0])) continue;
    const int32_t cond = si[0], wrapped = si[1], ids = si[2];
    if (!valid(cond) || !valid(wrapped) || !valid(ids)) continue;
    const Tensor& idt = m.tensors[static_cast<size_t>(ids)];
    if (idt.dtype != CLTRAIN_INT32 || idt.is_constant()) continue;
    const int32_t lp = producer[static_cast<size_t>(cond)], ap = producer[static_cast<size_t>(wrapped)];
    if (lp < 0 || ap < 0 || readers[static_cast<size_t>(cond)].size() != 1 ||
        readers[static_cast<size_t>(wrapped)].size() != 1)
      continue;
    const fb::Operator* less = ops->Get(static_cast<uint32_t>(lp));
    const fb::Operator* add = ops->Get(static_cast<uint32_t>(ap));
    const std::vector<int32_t> li = ins(less), ai = ins(add);
    int32_t zero = -1, rows = 0;
    if (code_of(less) != kLess || li.size() != 2 || li[0] != ids || !scalar(li[1], &zero) || zero != 0) continue;
    if (code_of(add) != kAdd || ai.size() != 2) continue;
    const auto* ao = add->builtin_options_as_AddOptions();
    if (ao && ao->fused_activation_function() != fb::ActivationFunctionType::NONE) continue;
    if (!((ai[0] == ids && scalar(ai[1], &rows)) || (ai[1] == ids && scalar(ai[0], &rows))) || rows <= 0) continue;
    // Every reader of the guarded ids is a GATHER's ids over a table of that many rows.
    bool gathers = !readers[static_cast<size_t>(so[0])].empty();
    for (const auto& [r, slot] : readers[static_cast<size_t>(so[0])]) {
      const fb::Operator* ro = ops->Get(static_cast<uint32_t>(r));
      const std::vector<int32_t> gi = ins(ro);
      gathers = gathers && code_of(ro) == kGather && slot == 1 && gi.size() == 2 && valid(gi[0]) &&
                !m.tensors[static_cast<size_t>(gi[0])].shape.empty() &&
                m.tensors[static_cast<size_t>(gi[0])].shape[0] == rows;
    }
    if (!gathers) continue;
    g.ops.insert(g.ops.end(), {lp, ap, static_cast<int32_t>(i)});
    g.reads[so[0]] = ids;
  }
  std::sort(g.ops.begin(), g.ops.end());
  return g;
}

// The operator's options as its descriptor reads them into params; values are taken as they are
// (the descriptor's check() checks ranges against the shapes).
cltrain_op_params load_params(const OpDescriptor& d, const fb::Operator* fo, const std::string& what,
                              const std::string& label) {
  cltrain_op_params p{};
  const fb::BuiltinOptions type = fo->builtin_options_type();
  if (type != fb::BuiltinOptions::NONE && type != d.options)
    fail(what, label + ": has options of union type " + std::to_string(static_cast<int>(type)) + ", expected " +
                   std::to_string(static_cast<int>(d.options)));
  if (type != fb::BuiltinOptions::NONE && fo->builtin_options() == nullptr) fail(what, label + ": options missing");
  if (type == fb::BuiltinOptions::NONE && d.options_required)
    fail(what, label + ": options missing (the operator needs its strides, filter size or axis)");
  OptionReader reader(what, label);
  if (d.read_options) d.read_options(*fo, reader, p);
  return p;
}

// The operators no descriptor knows, by name in order of first use, with their counts: one line
// for the whole model.
class Unsupported {
 public:
  void add(const std::string& name, uint32_t op) {
    for (auto& [n, uses] : seen_)
      if (n == name) {
        uses.push_back(op);
        return;
      }
    seen_.push_back({name, {op}});
  }
  void fail_if_any(const std::string& what) const {
    if (seen_.empty()) return;
    if (seen_.size() == 1 && seen_[0].second.size() == 1)
      fail(what, "operator " + std::to_string(seen_[0].second[0]) + ": " + seen_[0].first + " is not supported");
    size_t total = 0;
    std::string list;
    for (const auto& [name, uses] : seen_) {
      total += uses.size();
      list += (list.empty() ? "" : ", ") + name + " x" + std::to_string(uses.size());
    }
    fail(what, std::to_string(total) + " operators are not supported: " + list + " (the first is operator " +
                   std::to_string(seen_[0].second[0]) + ")");
  }

 private:
  std::vector<std::pair<std::string, std::vector<uint32_t>>> seen_;
};

std::vector<int32_t> index_list(const flatbuffers::Vector<int32_t>* v) {
  return v ? std::vector<int32_t>(v->begin(), v->end()) : std::vector<int32_t>{};
}

void check_indices(const std::vector<int32_t>& v, size_t ntensors, bool allow_absent, const std::string& what,
                   const std::string& label, const char* kind) {
  for (size_t k = 0; k < v.size(); ++k) {
    if (allow_absent && v[k] == -1) continue;
    if (v[k] < 0 || static_cast<size_t>(v[k]) >= ntensors)
      fail(what, label + kind + std::to_string(k) + ": tensor index " + std::to_string(v[k]) +
                     " out of range (model has " + std::to_string(ntensors) + " tensors)");
  }
}

// Converters write the scalar and per-channel constants of element-wise operators with their own
// rank ([], [C]); numpy broadcasting aligns them to the other operand's rank from the right. Give
// such a constant that rank (leading 1s; its values are laid out the same) where every operator
// reading it broadcasts; the graph check then sees equal ranks.
void align_broadcast_ranks(Model& m) {
  std::vector<int> non_broadcast_readers(m.tensors.size(), 0);
  for (const Operator& op : m.operators)
    if (!find_op(op.op)->broadcasts)
      for (int32_t t : op.inputs)
        if (t >= 0) ++non_broadcast_readers[static_cast<size_t>(t)];
  for (const Operator& op : m.operators) {
    if (!find_op(op.op)->broadcasts || op.inputs.size() != 2 || op.inputs[0] < 0 || op.inputs[1] < 0) continue;
    Tensor& a = m.tensors[static_cast<size_t>(op.inputs[0])];
    Tensor& b = m.tensors[static_cast<size_t>(op.inputs[1])];
    for (auto [lo, hi, t] : {std::make_tuple(&a, &b, op.inputs[0]), std::make_tuple(&b, &a, op.inputs[1])})
      if (lo->is_constant() && lo->shape.size() < hi->shape.size() &&
          non_broadcast_readers[static_cast<size_t>(t)] == 0)
        lo->shape.insert(lo->shape.begin(), hi->shape.size() - lo->shape.size(), 1);
  }
}

// Keras's Dense on an input of rank 3 or more without a static shape (Tensordot) converts as
// RESHAPE(x [B, S.., K] -> [B*S.., K]) -> FULLY_CONNECTED -> RESHAPE(-> [B, S.., N]), with both
// targets computed by shape operators. The first product mixes the batch into the rows, which a
// batch change cannot follow; FULLY_CONNECTED keeps x's leading dimensions itself (keep_num_dims),
// so the two reshapes are folded: the FULLY_CONNECTED reads x and writes the second reshape's
// output (the file keeps them; export writes the first reshape's output back as its input).
void fold_row_reshapes(Model& m) {
  const size_t nt = m.tensors.size();
  std::vector<int> readers(nt, 0);
  auto read = [&](int32_t t) {
    if (t >= 0 && static_cast<size_t>(t) < nt) ++readers[static_cast<size_t>(t)];
  };
  for (const Operator& op : m.operators)
    for (int32_t t : op.inputs) read(t);
  for (const ShapeOperator& op : m.shape_ops)
    for (int32_t t : op.inputs) read(t);
  for (int32_t t : m.outputs) read(t);
  std::vector<int32_t> producer(nt, -1), reader(nt, -1);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    for (int32_t t : m.operators[i].outputs)
      if (t >= 0) producer[static_cast<size_t>(t)] = static_cast<int32_t>(i);
    for (int32_t t : m.operators[i].inputs)
      if (t >= 0) reader[static_cast<size_t>(t)] = static_cast<int32_t>(i);
  }
  auto target = [&](const Operator& r) {
    std::vector<int32_t> v;
    if (r.inputs.size() < 2 || r.inputs[1] < 0) return v;
    const Tensor& s = m.tensors[static_cast<size_t>(r.inputs[1])];
    if (s.dtype != CLTRAIN_INT32 || s.shape.size() != 1) return v;
    v.resize(s.data.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), s.data.data(), v.size() * 4);
    return v;
  };
  // Each entry the expected dimension, or -1 (inferred) once.
  auto matches = [](const std::vector<int32_t>& t, const std::vector<int64_t>& want) {
    if (t.size() != want.size() || std::count(t.begin(), t.end(), -1) > 1) return false;
    for (size_t d = 0; d < t.size(); ++d)
      if (t[d] != -1 && t[d] != want[d]) return false;
    return true;
  };
  std::vector<bool> drop(m.operators.size(), false);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    Operator& fc = m.operators[i];
    if (fc.op != CLTRAIN_OP_FULLY_CONNECTED || fc.inputs.size() < 2 || fc.outputs.size() != 1) continue;
    const int32_t y1 = fc.inputs[0], y2 = fc.outputs[0];
    if (y1 < 0 || y2 < 0 || fc.inputs[1] < 0 || readers[static_cast<size_t>(y1)] != 1 ||
        readers[static_cast<size_t>(y2)] != 1)
      continue;
    const int32_t p = producer[static_cast<size_t>(y1)], q = reader[static_cast<size_t>(y2)];
    if (p < 0 || q < 0 || drop[static_cast<size_t>(p)] || drop[static_cast<size_t>(q)]) continue;
    const Operator& r1 = m.operators[static_cast<size_t>(p)];
    const Operator& r2 = m.operators[static_cast<size_t>(q)];
    if (r1.op != CLTRAIN_OP_RESHAPE || r2.op != CLTRAIN_OP_RESHAPE || r2.inputs[0] != y2 || r1.inputs.empty() ||
        r1.inputs[0] < 0 || r2.outputs.size() != 1)
      continue;
    const int32_t x = r1.inputs[0];
    const std::vector<int32_t>& xs = m.tensors[static_cast<size_t>(x)].shape;
    const std::vector<int32_t>& ws = m.tensors[static_cast<size_t>(fc.inputs[1])].shape;
    if (xs.size() < 3 || ws.size() != 2 || xs.back() != ws[1]) continue;
    int64_t rows = 1;
    std::vector<int64_t> kept;
    for (size_t d = 0; d + 1 < xs.size(); ++d) rows *= xs[d], kept.push_back(xs[d]);
    kept.push_back(ws[0]);
    if (!matches(target(r1), {rows, xs.back()}) || !matches(target(r2), kept)) continue;
    m.reads_instead[y1] = x;
    fc.inputs[0] = x;
    fc.outputs[0] = r2.outputs[0];
    drop[static_cast<size_t>(p)] = drop[static_cast<size_t>(q)] = true;
  }
  std::vector<Operator> kept_ops;
  for (size_t i = 0; i < m.operators.size(); ++i) {
    if (drop[i])
      m.folded_ops.push_back(m.operators[i].file_index);
    else
      kept_ops.push_back(std::move(m.operators[i]));
  }
  m.operators = std::move(kept_ops);
  std::sort(m.folded_ops.begin(), m.folded_ops.end());
}

// Parses and checks bytes, which the returned model then keeps (no second copy of the file).
Model load_owned(std::vector<uint8_t>&& bytes, const std::string& what) {
  if (bytes.empty()) fail(what, "file is empty");
  if (bytes.size() < 8) fail(what, "not a circle or tflite file (only " + std::to_string(bytes.size()) + " bytes)");
  Model m;
  if (std::memcmp(bytes.data() + 4, "CIR0", 4) == 0) {
    m.format = "circle";
  } else if (std::memcmp(bytes.data() + 4, "TFL3", 4) == 0) {
    m.format = "tflite";
  } else {
    fail(what, "not a circle or tflite file (identifier '" + identifier_str(bytes.data() + 4) + "')");
  }
  // Files over 2 GiB keep buffer data after the flatbuffer, which must lie in the first 2 GiB.
  const size_t fb_size = std::min<size_t>(bytes.size(), FLATBUFFERS_MAX_BUFFER_SIZE - 1);
  flatbuffers::Verifier verifier(bytes.data(), fb_size);
  if (!verifier.VerifyBuffer<fb::Model>(nullptr))
    fail(what, "corrupt or truncated " + m.format + " file (flatbuffer verification failed)");
  const fb::Model* fm = flatbuffers::GetRoot<fb::Model>(bytes.data());

  const auto* subgraphs = fm->subgraphs();
  if (!subgraphs || subgraphs->size() == 0) fail(what, "model has no subgraph");
  if (subgraphs->size() > 1)
    fail(what,
         "model has " + std::to_string(subgraphs->size()) + " subgraphs; only single-subgraph models are supported");
  const fb::SubGraph* sg = subgraphs->Get(0);

  Buffers bufs{bytes, fm->buffers(), what};
  if (bufs.count() > 0 && bufs.get(0).second > 0) fail(what, "buffer 0 must be empty");

  const auto* tensors = sg->tensors();
  if (!tensors || tensors->size() == 0) fail(what, "model has no tensors");
  for (uint32_t i = 0; i < tensors->size(); ++i)
    m.tensors.push_back(load_tensor(tensors->Get(i), static_cast<int32_t>(i), bufs, what));
  const size_t nt = m.tensors.size();

  m.inputs = index_list(sg->inputs());
  m.outputs = index_list(sg->outputs());
  if (m.inputs.empty()) fail(what, "model has no inputs");
  if (m.outputs.empty()) fail(what, "model has no outputs");
  check_indices(m.inputs, nt, false, what, "subgraph ", "input ");
  check_indices(m.outputs, nt, false, what, "subgraph ", "output ");

  const auto* codes = fm->operator_codes();
  const uint32_t ncodes = codes ? codes->size() : 0;
  const auto* ops = sg->operators();
  if (!ops || ops->size() == 0) fail(what, "model has no operators");
  Unsupported unsupported;
  const IndexGuards guards = find_index_guards(*sg, codes, m);
  m.folded_ops = guards.ops;
  m.reads_instead = guards.reads;
  // int32 tensors whose values the host knows at load: constants, and what shape operators compute.
  std::vector<bool> known_int(nt, false);
  for (size_t t = 0; t < nt; ++t) known_int[t] = m.tensors[t].dtype == CLTRAIN_INT32 && m.tensors[t].is_constant();
  for (uint32_t i = 0; i < ops->size(); ++i) {
    const fb::Operator* fo = ops->Get(i);
    std::string label = "operator " + std::to_string(i);
    if (fo->opcode_index() >= ncodes)
      fail(what, label + ": opcode index " + std::to_string(fo->opcode_index()) + " out of range (model has " +
                     std::to_string(ncodes) + " operator codes)");
    const fb::OperatorCode* oc = codes->Get(fo->opcode_index());
    const int32_t code = effective_code(oc);
    if (std::binary_search(guards.ops.begin(), guards.ops.end(), static_cast<int32_t>(i))) continue;
    if (is_shape_op_code(code)) {  // an integer operator over shapes: the host computes it
      ShapeOperator so;
      so.code = code;
      so.inputs = index_list(fo->inputs());
      so.outputs = index_list(fo->outputs());
      check_indices(so.inputs, nt, true, what, label, ": input ");
      check_indices(so.outputs, nt, false, what, label, ": output ");
      bool ints = !so.outputs.empty();
      for (int32_t t : so.outputs) ints = ints && m.tensors[static_cast<size_t>(t)].dtype == CLTRAIN_INT32;
      for (size_t k = code == kBuiltinShape ? 1 : 0; k < so.inputs.size(); ++k)
        ints = ints && (so.inputs[k] < 0 || known_int[static_cast<size_t>(so.inputs[k])]);
      if (ints) {
        so.options = read_shape_op_options(code, *fo);
        so.file_index = static_cast<int32_t>(i);
        for (int32_t t : so.outputs) known_int[static_cast<size_t>(t)] = true;
        m.shape_ops.push_back(std::move(so));
        continue;
      }
    }
    if (load_slices(m, *fo, code, static_cast<int32_t>(i), what, label)) continue;
    const OpDescriptor* d = find_builtin(code);
    if (!d) {
      unsupported.add(code == kBuiltinCustom
                          ? "custom operator '" + printable(oc->custom_code() ? oc->custom_code()->str() : "") + "'"
                          : describe_builtin(code),
                      i);
      continue;
    }
    Operator op;
    op.op = d->op;
    label += std::string(" (") + d->name + ")";
    op.inputs = index_list(fo->inputs());
    op.outputs = index_list(fo->outputs());
    check_indices(op.inputs, nt, true, what, label, ": input ");
    for (int32_t& t : op.inputs)
      if (auto g = guards.reads.find(t); g != guards.reads.end()) t = g->second;
    check_indices(op.outputs, nt, false, what, label, ": output ");
    op.params = load_params(*d, fo, what, label);
    op.file_index = static_cast<int32_t>(i);
    m.operators.push_back(std::move(op));
  }
  unsupported.fail_if_any(what);

  // Metadata entries keep their bytes (the training info of circle+ files is one of them).
  if (const auto* md = fm->metadata()) {
    for (uint32_t i = 0; i < md->size(); ++i) {
      const fb::Metadata* e = md->Get(i);
      ModelMetadata entry;
      if (e->name()) entry.name = e->name()->str();
      if (e->buffer() >= bufs.count())
        fail(what, "metadata " + std::to_string(i) + " '" + printable(entry.name) + "': buffer index " +
                       std::to_string(e->buffer()) + " out of range (model has " + std::to_string(bufs.count()) +
                       " buffers)");
      entry.buffer = static_cast<int32_t>(e->buffer());
      auto [data, size] = bufs.get(e->buffer());
      if (size > 0) entry.data.assign(data, data + size);
      m.metadata.push_back(std::move(entry));
    }
  }

  fold_shape_ops(m, what);
  fold_row_reshapes(m);
  fold_transposed_unpacks(m);
  align_broadcast_ranks(m);
  detail::check_graph(m, what);
  m.file = std::move(bytes);
  m.file_tensor_count = static_cast<int32_t>(m.tensors.size());
  m.source = what;
  return m;
}

}  // namespace

std::vector<int32_t> model_operator_index(const Model& m) {
  std::vector<int32_t> index(file_operator_count(m), -1);
  for (size_t i = 0; i < m.operators.size(); ++i) {
    const size_t f = static_cast<size_t>(file_operator_index(m, i));
    if (f < index.size() && index[f] < 0) index[f] = static_cast<int32_t>(i);
  }
  return index;
}

Model load_model_from_memory(const std::vector<uint8_t>& bytes, const std::string& what) {
  return load_owned(std::vector<uint8_t>(bytes), what);
}

Model load_model(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "cannot open: is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<uint8_t> bytes;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size > 0) {
    bytes.resize(static_cast<size_t>(size));
    in.read(reinterpret_cast<char*>(bytes.data()), size);
    if (in.gcount() != size) fail(path, "cannot read the whole file");
  }
  return load_owned(std::move(bytes), path);
}

void set_batch_size(Model& model, int32_t batch) {
  if (batch < 1) throw ModelError("batch size " + std::to_string(batch) + " must be at least 1");
  const std::string what = "batch size " + std::to_string(batch);
  // The model's batch is its inputs' first dimension; setting it again changes nothing.
  bool changes = model.inputs.empty();
  for (int32_t t : model.inputs) {
    const std::vector<int32_t>& s = model.tensors[static_cast<size_t>(t)].shape;
    changes = changes || s.empty() || s[0] != batch;
  }
  if (!changes) return;
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    Tensor& t = model.tensors[i];
    if (t.is_constant()) continue;
    if (t.shape.empty())
      throw ModelError(detail::tensor_label(model, static_cast<int32_t>(i)) +
                       ": has rank 0, so it has no batch dimension");
    constexpr uint64_t kMaxElements = kMaxTensorBytes / 4;
    uint64_t elements = static_cast<uint64_t>(batch);
    for (size_t d = 1; d < t.shape.size() && elements <= kMaxElements; ++d) {
      const uint64_t dim = static_cast<uint64_t>(std::max<int32_t>(t.shape[d], 0));
      elements = dim != 0 && elements > kMaxElements / dim ? kMaxElements + 1 : elements * dim;
    }
    if (elements > kMaxElements)
      throw ModelError("batch size " + std::to_string(batch) + " makes " +
                       detail::tensor_label(model, static_cast<int32_t>(i)) + " too large");
  }
  // Every operator must treat the samples of a batch apart: the batch is the first dimension of
  // every activation, from the input to the outputs.
  for (size_t i = 0; i < model.operators.size(); ++i) {
    const Operator& op = model.operators[i];
    const OpDescriptor* d = find_op(op.op);
    if (const char* why = d && d->fixed_batch ? d->fixed_batch(op) : nullptr)
      detail::fail(what, detail::operator_label(model, i) + ": " + why + ", so the batch size cannot change");
  }
  // Keep what changes, to restore it if the model does not check out afterwards.
  std::vector<std::vector<int32_t>> old_shapes;
  for (const Tensor& t : model.tensors) old_shapes.push_back(t.shape);
  std::vector<std::vector<uint8_t>> old_folded;  // what the shape operators computed
  for (const ShapeOperator& op : model.shape_ops)
    for (int32_t t : op.outputs) old_folded.push_back(model.tensors[static_cast<size_t>(t)].data);
  auto restore = [&] {
    for (size_t i = 0; i < model.tensors.size(); ++i) model.tensors[i].shape = old_shapes[i];
    size_t k = 0;
    for (const ShapeOperator& op : model.shape_ops)
      for (int32_t t : op.outputs) model.tensors[static_cast<size_t>(t)].data = old_folded[k++];
  };
  std::vector<std::pair<Tensor*, int32_t>> old_targets;
  std::vector<bool> folded(model.tensors.size(), false);
  for (const ShapeOperator& op : model.shape_ops)
    for (int32_t t : op.outputs) folded[static_cast<size_t>(t)] = true;
  for (size_t i = 0; i < model.tensors.size(); ++i)
    if (!model.tensors[i].is_constant() && !folded[i]) model.tensors[i].shape[0] = batch;
  try {
    fold_shape_ops(model, what);  // shapes computed from the new batch
  } catch (const ModelError&) {
    restore();
    throw;
  }
  // A constant target shape (Reshape's) carries the batch too, unless it says -1 (inferred).
  for (const Operator& op : model.operators) {
    const ConstantOperand& c = find_op(op.op)->constant;
    const size_t slot = static_cast<size_t>(c.slot);
    if (!c.carries_batch || op.inputs.size() <= slot || op.inputs[slot] < 0) continue;
    Tensor& s = model.tensors[static_cast<size_t>(op.inputs[slot])];
    if (s.dtype != CLTRAIN_INT32 || s.data.size() < 4) continue;
    int32_t first;
    std::memcpy(&first, s.data.data(), 4);
    if (first > 0 && first != batch) {
      old_targets.emplace_back(&s, first);
      std::memcpy(s.data.data(), &batch, 4);
    }
  }
  // Operators that mix samples in other ways (a Reshape moving the batch into another
  // dimension, a FullyConnected folding it into its rows) no longer check out.
  try {
    detail::check_graph(model, what);
  } catch (const ModelError&) {
    restore();
    for (auto& [s, first] : old_targets) std::memcpy(s->data.data(), &first, 4);
    throw;
  }
}

}  // namespace cltrain
