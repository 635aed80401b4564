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
#include <set>
#include <tuple>

#include "circle_generated.h"
#include "graph/builtin_names.h"
#include "graph/labels.h"
#include "model/graph_check.h"
#include "model/model.h"
#include "ops/op_descriptor.h"
#include "passes/passes.h"
#include "passes/shape_ops.h"

namespace cltrain {

using graph::fail;
using graph::printable;
using graph::shape_str;

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

// A tensor of a type cltrain does not train with (INT64, RESOURCE, ...) loads as an empty byte
// tensor where `unsupported` is given, which gets the line that names it: the loader refuses it
// only if an operator it keeps reads or writes it (passes/state_updates.cc leaves some out).
Tensor load_tensor(const fb::Tensor* ft, int32_t index, const Buffers& bufs, const std::string& what,
                   std::string* unsupported = nullptr) {
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
  } else if (unsupported) {
    *unsupported = label + ": " + type_str(type) + " tensors are not supported (float32 models only)";
    t.dtype = CLTRAIN_UINT8;
    return t;
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
    const uint64_t need = elements * graph::dtype_size(t.dtype);
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

// The operators of subgraph sg, each checked against its ntensors tensors; labels start with
// prefix ("" for the main subgraph, else "subgraph K ").
std::vector<FileOperator> read_operators(const fb::SubGraph* sg,
                                         const flatbuffers::Vector<flatbuffers::Offset<fb::OperatorCode>>* codes,
                                         size_t ntensors, const std::string& prefix, const std::string& what) {
  const uint32_t ncodes = codes ? codes->size() : 0;
  std::vector<FileOperator> file_ops;
  const auto* ops = sg->operators();
  for (uint32_t i = 0; ops && i < ops->size(); ++i) {
    const fb::Operator* fo = ops->Get(i);
    FileOperator f;
    f.index = static_cast<int32_t>(i);
    f.label = prefix + "operator " + std::to_string(i);
    if (fo->opcode_index() >= ncodes)
      fail(what, f.label + ": opcode index " + std::to_string(fo->opcode_index()) + " out of range (model has " +
                     std::to_string(ncodes) + " operator codes)");
    f.code = effective_code(codes->Get(fo->opcode_index()));
    f.op = fo;
    f.inputs = index_list(fo->inputs());
    f.outputs = index_list(fo->outputs());
    const OpDescriptor* d = is_shape_op_code(f.code) ? nullptr : find_builtin(f.code);
    const std::string label = d ? f.label + " (" + d->name + ")" : f.label;
    check_indices(f.inputs, ntensors, true, what, label, ": input ");
    check_indices(f.outputs, ntensors, false, what, label, ": output ");
    file_ops.push_back(std::move(f));
  }
  return file_ops;
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
  const fb::SubGraph* sg = subgraphs->Get(0);

  Buffers bufs{bytes, fm->buffers(), what};
  if (bufs.count() > 0 && bufs.get(0).second > 0) fail(what, "buffer 0 must be empty");

  const auto* tensors = sg->tensors();
  if (!tensors || tensors->size() == 0) fail(what, "model has no tensors");
  std::map<int32_t, std::string> unsupported_types;  // tensor -> why, refused where a kept operator uses it
  for (uint32_t i = 0; i < tensors->size(); ++i) {
    std::string why;
    m.tensors.push_back(load_tensor(tensors->Get(i), static_cast<int32_t>(i), bufs, what, &why));
    if (!why.empty()) unsupported_types[static_cast<int32_t>(i)] = why;
  }
  const size_t nt = m.tensors.size();
  for (int32_t t : index_list(sg->inputs()))
    if (auto it = unsupported_types.find(t); it != unsupported_types.end()) fail(what, it->second);
  for (int32_t t : index_list(sg->outputs()))
    if (auto it = unsupported_types.find(t); it != unsupported_types.end()) fail(what, it->second);

  m.inputs = index_list(sg->inputs());
  m.outputs = index_list(sg->outputs());
  if (m.inputs.empty()) fail(what, "model has no inputs");
  if (m.outputs.empty()) fail(what, "model has no outputs");
  check_indices(m.inputs, nt, false, what, "subgraph ", "input ");
  check_indices(m.outputs, nt, false, what, "subgraph ", "output ");

  const auto* codes = fm->operator_codes();
  if (!sg->operators() || sg->operators()->size() == 0) fail(what, "model has no operators");
  // The file's operators, each checked; the import passes take some (passes/passes.h), the rest
  // load as their descriptor's operator.
  std::vector<FileOperator> file_ops = read_operators(sg, codes, nt, "", what);
  // The other subgraphs (a WHILE loop's condition and body) load when a pass asks for one.
  std::map<int32_t, FileSubgraph> other;
  const SubgraphReader read_subgraph = [&](int32_t k) -> const FileSubgraph& {
    if (auto it = other.find(k); it != other.end()) return it->second;
    if (k < 1 || static_cast<uint32_t>(k) >= subgraphs->size())
      fail(what, "subgraph " + std::to_string(k) + (k == 0 ? " is the main graph, not a loop's" : " does not exist") +
                     " (model has " + std::to_string(subgraphs->size()) + " subgraphs)");
    const fb::SubGraph* g = subgraphs->Get(static_cast<flatbuffers::uoffset_t>(k));
    const std::string prefix = "subgraph " + std::to_string(k) + " ";
    FileSubgraph f;
    if (g->name()) f.name = g->name()->str();
    if (const auto* ts = g->tensors())
      for (uint32_t i = 0; i < ts->size(); ++i) {
        Tensor t;
        try {
          t = load_tensor(ts->Get(i), static_cast<int32_t>(i), bufs, what);
        } catch (const ModelError& e) {
          const std::string line = e.what();
          const std::string head = what + ": ";
          fail(what, prefix + (line.rfind(head, 0) == 0 ? line.substr(head.size()) : line));
        }
        f.tensors.push_back(std::move(t));
        const auto* sig = ts->Get(i)->shape_signature();
        f.signatures.push_back(sig ? std::vector<int32_t>(sig->begin(), sig->end()) : std::vector<int32_t>{});
      }
    f.inputs = index_list(g->inputs());
    f.outputs = index_list(g->outputs());
    check_indices(f.inputs, f.tensors.size(), false, what, prefix, "input ");
    check_indices(f.outputs, f.tensors.size(), false, what, prefix, "output ");
    if (g->operators()) f.ops = read_operators(g, codes, f.tensors.size(), prefix, what);
    return other.emplace(k, std::move(f)).first->second;
  };
  PassInput import{&m, what};
  import.file = &file_ops;
  import.subgraphs = &read_subgraph;
  m.rewrites = run_passes(PassStage::kImport, import);
  // A CALL_ONCE that state-updates left out: its initialising subgraph is accounted for.
  std::set<int32_t> initialisers;
  for (const FileOperator& f : file_ops)
    if (f.code == 129 && f.fate == FileOperator::Fate::kFolded && f.op)
      if (const auto* o = f.op->builtin_options_as_CallOnceOptions()) initialisers.insert(o->init_subgraph_index());
  for (uint32_t k = 1; k < subgraphs->size(); ++k)
    if (!other.count(static_cast<int32_t>(k)) && !initialisers.count(static_cast<int32_t>(k)))
      fail(what, "model has " + std::to_string(subgraphs->size()) + " subgraphs; subgraph " + std::to_string(k) +
                     " is not a WHILE loop's condition or body (the only other subgraphs supported)");
  Unsupported unsupported;
  std::set<std::pair<int32_t, int32_t>> counted_body_ops;  // a loop body's operator: once, not per step
  auto guarded = [&](std::vector<int32_t>& inputs) {       // what the index guards gave (the only entries yet)
    for (int32_t& t : inputs)
      if (auto g = m.reads_instead.find(t); g != m.reads_instead.end()) t = g->second;
  };
  for (const FileOperator& f : file_ops) {  // a tensor of a type cltrain does not have, used: refused
    if (f.fate == FileOperator::Fate::kFolded || f.fate == FileOperator::Fate::kHost) continue;
    for (const std::vector<int32_t>* list : {&f.inputs, &f.outputs})
      for (int32_t t : *list)
        if (auto it = unsupported_types.find(t); it != unsupported_types.end()) fail(what, it->second);
  }
  for (FileOperator& f : file_ops) {
    if (f.fate == FileOperator::Fate::kLowered)
      for (Operator& op : f.lowered) {
        guarded(op.inputs);
        op.part = op.part || f.part;
        if (op.body_subgraph < 0 && f.body_subgraph >= 0) op.body_subgraph = f.body_subgraph, op.body_op = f.body_op;
        m.operators.push_back(std::move(op));
      }
    if (f.fate != FileOperator::Fate::kPending) continue;
    const OpDescriptor* d = find_builtin(f.code);
    if (!d) {
      if (f.body_subgraph >= 0 && !counted_body_ops.insert({f.body_subgraph, f.body_op}).second) continue;
      const fb::OperatorCode* oc = codes->Get(f.op->opcode_index());
      unsupported.add(f.code == kBuiltinCustom
                          ? "custom operator '" + printable(oc->custom_code() ? oc->custom_code()->str() : "") + "'"
                          : describe_builtin(f.code),
                      static_cast<uint32_t>(f.index));
      continue;
    }
    Operator op;
    op.op = d->op;
    op.inputs = std::move(f.inputs);
    op.outputs = std::move(f.outputs);
    guarded(op.inputs);
    op.params = load_params(*d, f.op, what, f.label + " (" + d->name + ")");
    op.file_index = f.index;
    op.part = f.part;
    op.body_subgraph = f.body_subgraph, op.body_op = f.body_op;
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
  PassInput load{&m, what};
  for (Rewrite& r : run_passes(PassStage::kLoad, load)) m.rewrites.push_back(std::move(r));
  // A converter writes 1 for a dimension it could not fix (-1 in the tensor's shape_signature)
  // past the batch, which TFLite computes when it runs (Keras' UpSampling2D: [1, 1, 12, 3] for
  // [N, 12, 12, 3]): such an activation's shape is left for the graph check to compute from its
  // operator. Only the outputs of the model's operators: the inputs, and the tensors of folded
  // operators, keep theirs.
  std::vector<bool> computed(m.tensors.size(), false);
  for (const Operator& op : m.operators)
    for (int32_t t : op.outputs)
      if (t >= 0 && static_cast<size_t>(t) < computed.size()) computed[static_cast<size_t>(t)] = true;
  for (uint32_t i = 0; i < tensors->size(); ++i) {
    const auto* sig = tensors->Get(i)->shape_signature();
    Tensor& t = m.tensors[i];
    if (!sig || t.is_constant() || !computed[i]) continue;
    bool open = false;
    for (uint32_t d = 1; d < sig->size(); ++d) open = open || sig->Get(d) < 0;
    if (open) t.shape.clear();
  }
  check_graph(m, what);
  m.file = std::move(bytes);
  m.file_tensor_count = static_cast<int32_t>(m.tensors.size());
  m.source = what;
  return m;
}

}  // namespace

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
  if (!model.fixed_batch.empty()) throw ModelError(what + ": " + model.fixed_batch);
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    Tensor& t = model.tensors[i];
    if (t.is_constant()) continue;
    if (t.shape.empty())
      throw ModelError(graph::tensor_label(model, static_cast<int32_t>(i)) +
                       ": has rank 0, so it has no batch dimension");
    constexpr uint64_t kMaxElements = kMaxTensorBytes / 4;
    uint64_t elements = static_cast<uint64_t>(batch);
    for (size_t d = 1; d < t.shape.size() && elements <= kMaxElements; ++d) {
      const uint64_t dim = static_cast<uint64_t>(std::max<int32_t>(t.shape[d], 0));
      elements = dim != 0 && elements > kMaxElements / dim ? kMaxElements + 1 : elements * dim;
    }
    if (elements > kMaxElements)
      throw ModelError("batch size " + std::to_string(batch) + " makes " +
                       graph::tensor_label(model, static_cast<int32_t>(i)) + " too large");
  }
  // Every operator must treat the samples of a batch apart: the batch is the first dimension of
  // every activation, from the input to the outputs.
  for (size_t i = 0; i < model.operators.size(); ++i) {
    const Operator& op = model.operators[i];
    const OpDescriptor* d = find_op(op.op);
    if (const char* why = d && d->fixed_batch ? d->fixed_batch(op) : nullptr)
      graph::fail(what, graph::operator_label(model, i) + ": " + why + ", so the batch size cannot change");
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
    check_graph(model, what);
  } catch (const ModelError&) {
    restore();
    for (auto& [s, first] : old_targets) std::memcpy(s->data.data(), &first, 4);
    throw;
  }
}

}  // namespace cltrain
