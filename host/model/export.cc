// export_with_weights (the loaded file with its weight bytes replaced in place) and
// export_circleplus (the file rebuilt with a CIRCLE_TRAINING metadata entry).
#include "model/export.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "circle_generated.h"
#include "graph/labels.h"
#include "model/builder.h"

namespace cltrain {

using graph::fail;
using graph::tensor_label;

namespace {

std::string source_of(const Model& m) { return m.source.empty() ? "model" : m.source; }

// Floats as the format stores them: little endian.
std::vector<uint8_t> le_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
#if !FLATBUFFERS_LITTLEENDIAN
  for (size_t i = 0; i + 4 <= b.size(); i += 4) std::swap(b[i], b[i + 3]), std::swap(b[i + 1], b[i + 2]);
#endif
  return b;
}

// The host-order bytes a tensor holds in memory (Tensor::data) for these floats.
std::vector<uint8_t> host_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void check_weights(const Model& m, const std::map<int32_t, std::vector<float>>& weights, const std::string& what) {
  for (const auto& [t, values] : weights) {
    if (t < 0 || static_cast<size_t>(t) >= m.tensors.size())
      fail(what, "cannot export weights: tensor index " + std::to_string(t) + " out of range (model has " +
                     std::to_string(m.tensors.size()) + " tensors)");
    const Tensor& tensor = m.tensors[static_cast<size_t>(t)];
    if (!tensor.is_constant() || tensor.dtype != CLTRAIN_FLOAT32)
      fail(what, "cannot export weights: " + tensor_label(m, t) + " is not a float32 constant (" +
                     (tensor.is_constant() ? "an int32 constant" : "it has no data in the model") + ")");
    if (values.size() != tensor.elements() || values.size() * sizeof(float) != tensor.data.size())
      fail(what, "cannot export weights: " + tensor_label(m, t) + ": " + std::to_string(values.size()) +
                     " values given, shape " + graph::shape_str(tensor.shape) + " holds " +
                     std::to_string(tensor.elements()));
  }
}

}  // namespace

namespace {

// Loop body constants (passes/while_loops.cc) -> (subgraph, tensor) in the file, from the body
// operators that read them.
using BodyTensors = std::map<int32_t, std::pair<int32_t, int32_t>>;
BodyTensors body_tensors(const Model& m) {
  BodyTensors out;
  if (m.file.empty()) return out;
  const fb::Model* fm = fb::GetModel(m.file.data());
  for (const Operator& op : m.operators) {
    if (op.body_subgraph <= 0 || !fm->subgraphs() || static_cast<uint32_t>(op.body_subgraph) >= fm->subgraphs()->size())
      continue;
    const auto* ops = fm->subgraphs()->Get(static_cast<uint32_t>(op.body_subgraph))->operators();
    if (!ops || op.body_op < 0 || static_cast<uint32_t>(op.body_op) >= ops->size()) continue;
    const auto* in = ops->Get(static_cast<uint32_t>(op.body_op))->inputs();
    for (size_t k = 0; in && k < op.inputs.size() && k < in->size(); ++k)
      if (op.inputs[k] >= 0 && m.tensors[static_cast<size_t>(op.inputs[k])].file_offset >= 0)
        out[op.inputs[k]] = {op.body_subgraph, in->Get(static_cast<uint32_t>(k))};
  }
  return out;
}

// export_with_weights; where relocate is given, a loop body's constant that shares its bytes in
// the file with another that gets other values (two loops whose equal biases the converter stored
// once) is not written in place but listed, for rebuild() to give it a buffer of its own.
std::vector<uint8_t> export_in_place(const Model& m, const std::map<int32_t, std::vector<float>>& weights,
                                     const BodyTensors* body, std::set<int32_t>* relocate) {
  const std::string what = source_of(m);
  check_weights(m, weights, what);

  if (m.file.empty()) {  // built in memory: no layout to keep
    Model copy = m;
    for (const auto& [t, values] : weights) copy.tensors[static_cast<size_t>(t)].data = host_bytes(values);
    return write_model(copy, m.format.empty() ? "circle" : m.format);
  }

  // Where each listed tensor's bytes go, and that no other tensor's bytes change with them.
  for (const auto& [t, values] : weights) {
    const Tensor& a = m.tensors[static_cast<size_t>(t)];
    const int64_t off = a.file_offset;
    const uint64_t size = a.data.size();
    if (off < 0 || static_cast<uint64_t>(off) > m.file.size() || size > m.file.size() - static_cast<uint64_t>(off))
      fail(what, "cannot export weights: " + tensor_label(m, t) + " has no data in the model file");
    const std::vector<uint8_t> mine = host_bytes(values);
    for (size_t u = 0; u < m.tensors.size(); ++u) {
      const Tensor& b = m.tensors[u];
      if (static_cast<int32_t>(u) == t || b.file_offset < 0 || b.data.empty()) continue;
      const bool overlap =
          b.file_offset < off + static_cast<int64_t>(size) && off < b.file_offset + static_cast<int64_t>(b.data.size());
      if (!overlap) continue;
      if (relocate && relocate->count(static_cast<int32_t>(u))) continue;  // moves to a buffer of its own
      auto it = weights.find(static_cast<int32_t>(u));
      const std::vector<uint8_t> theirs = it != weights.end() ? host_bytes(it->second) : b.data;
      if ((b.file_offset != off || theirs != mine) && relocate && body->count(t)) {
        relocate->insert(t);
        break;
      }
      if (b.file_offset != off || theirs != mine)
        fail(what, "cannot export weights: " + tensor_label(m, t) + " shares its bytes in the file (buffer " +
                       std::to_string(a.buffer) + ") with " + tensor_label(m, static_cast<int32_t>(u)) +
                       ", which would get other values");
    }
  }

  std::vector<uint8_t> out = m.file;
  for (const auto& [t, values] : weights) {
    if (relocate && relocate->count(t)) continue;
    const std::vector<uint8_t> bytes = le_bytes(values);
    if (!bytes.empty())
      std::memcpy(out.data() + m.tensors[static_cast<size_t>(t)].file_offset, bytes.data(), bytes.size());
  }
  return out;
}

}  // namespace

std::vector<uint8_t> export_with_weights(const Model& m, const std::map<int32_t, std::vector<float>>& weights) {
  return export_in_place(m, weights, nullptr, nullptr);
}

namespace {

// op's inputs as the file writes them: where the file had a folded operator's output and op reads
// another tensor instead (the ids a guard guards, a Tensordot's input), the file's tensor.
std::vector<int32_t> written_inputs(const Model& m, const Operator& op, const flatbuffers::Vector<int32_t>* file_in) {
  std::vector<int32_t> in = op.inputs;
  for (size_t k = 0; file_in && k < in.size() && k < file_in->size(); ++k) {
    const auto g = m.reads_instead.find(file_in->Get(static_cast<flatbuffers::uoffset_t>(k)));
    if (g != m.reads_instead.end() && g->second == in[k]) in[k] = g->first;
  }
  return in;
}

bool structure_changed(const Model& m) {
  if (m.file.empty()) return false;
  if (m.file_tensor_count >= 0 && m.tensors.size() > static_cast<size_t>(m.file_tensor_count)) return true;
  const fb::SubGraph* sg = fb::GetModel(m.file.data())->subgraphs()->Get(0);
  for (const Operator& op : m.operators) {
    if (op.file_index < 0 || op.part || op.added) continue;  // the file's operator stays as it was
    const auto* in = sg->operators()->Get(static_cast<flatbuffers::uoffset_t>(op.file_index))->inputs();
    const std::vector<int32_t> written = written_inputs(m, op, in);
    if (!in || !std::equal(written.begin(), written.end(), in->begin(), in->end())) return true;
  }
  return false;
}

// base (m's file with the weights of the file's own tensors replaced) rebuilt through the
// flatbuffers object API: the tensors added after the file's (passes/model_edits.h) appended,
// each with its own buffer holding its values, operators given their inputs as m has them,
// CIRCLE_TRAINING replaced by info (if given), and the identifier set. Buffers kept outside the
// flatbuffer stay outside, after it, in buffer order, 16-byte aligned.
std::vector<uint8_t> rebuild(const std::vector<uint8_t>& base, const Model& m,
                             const std::map<int32_t, std::vector<float>>& weights,
                             const std::vector<uint8_t>* info_bytes, const char* identifier, const std::string& what,
                             const std::set<int32_t>& relocate = {}, const BodyTensors& body = {}) {
  std::unique_ptr<fb::ModelT> model(fb::GetModel(base.data())->UnPack());
  // Options of a type this schema does not declare do not survive the object API: refuse where
  // they hold a value (an empty table, LESS's, loses nothing).
  const fb::Model* file = fb::GetModel(base.data());
  for (uint32_t g = 0; file->subgraphs() && g < file->subgraphs()->size(); ++g) {
    const auto* ops = file->subgraphs()->Get(g)->operators();
    for (uint32_t i = 0; ops && i < ops->size(); ++i) {
      const auto* options = reinterpret_cast<const flatbuffers::Table*>(ops->Get(i)->builtin_options());
      if (!options || model->subgraphs[g]->operators[i]->builtin_options.value) continue;
      const uint8_t* vtable = options->GetVTable();
      const uint16_t vsize = flatbuffers::ReadScalar<uint16_t>(vtable);
      bool fields = false;
      for (uint16_t f = 4; f + 2 <= vsize; f += 2)
        fields = fields || flatbuffers::ReadScalar<uint16_t>(vtable + f) != 0;
      if (fields)
        fail(what, "cannot export: " + std::string(g ? "subgraph " + std::to_string(g) + " " : "") + "operator " +
                       std::to_string(i) + " has options (union type " +
                       std::to_string(static_cast<int>(ops->Get(i)->builtin_options_type())) +
                       ") that cltrain's schema does not declare, which a rebuilt file would lose");
    }
  }

  // Buffers outside the flatbuffer: their bytes, to append after the new one.
  struct Outside {
    size_t buffer;
    uint64_t offset, size;
  };
  std::vector<Outside> outside;
  for (size_t i = 0; i < model->buffers.size(); ++i) {
    const fb::BufferT& b = *model->buffers[i];
    if (b.data.empty() && b.offset > 1) {
      if (b.offset > base.size() || b.size > base.size() - b.offset)
        fail(what, "cannot export: buffer " + std::to_string(i) + " lies outside the file");
      outside.push_back({i, b.offset, b.size});
    }
  }

  fb::SubGraphT& sg = *model->subgraphs.at(0);
  const size_t file_tensors = m.file_tensor_count >= 0 ? static_cast<size_t>(m.file_tensor_count) : m.tensors.size();
  // The model's tensors from file_tensors on are appended after the file's own. Between the two
  // lie the activations the import and load passes added (a PACK's unit reshapes), which only the
  // parts of a file operator read; export writes that operator as it was, so none is written.
  const int32_t in_file = static_cast<int32_t>(sg.tensors.size());
  const auto exported_index = [&](int32_t t) {
    if (t < in_file || t < 0) return t;
    if (static_cast<size_t>(t) < file_tensors)
      fail(what, "cannot export: tensor " + std::to_string(t) +
                     " that a rewrite added at load is read by an operator "
                     "the export writes");
    return in_file + (t - static_cast<int32_t>(file_tensors));
  };
  for (size_t t = file_tensors; t < m.tensors.size(); ++t) {
    const Tensor& tensor = m.tensors[t];
    auto ft = std::make_unique<fb::TensorT>();
    ft->name = tensor.name;
    ft->shape = tensor.shape;
    ft->type = fb::TensorType::FLOAT32;
    auto buffer = std::make_unique<fb::BufferT>();
    auto it = weights.find(static_cast<int32_t>(t));
    if (it != weights.end()) {
      buffer->data = le_bytes(it->second);
    } else {
      std::vector<float> v(tensor.data.size() / 4);
      std::memcpy(v.data(), tensor.data.data(), tensor.data.size());
      buffer->data = le_bytes(v);
    }
    ft->buffer = static_cast<uint32_t>(model->buffers.size());
    model->buffers.push_back(std::move(buffer));
    sg.tensors.push_back(std::move(ft));
  }
  const fb::SubGraph* file_sg = fb::GetModel(base.data())->subgraphs()->Get(0);
  for (const Operator& op : m.operators)
    if (op.file_index >= 0 && !op.part && !op.added && static_cast<size_t>(op.file_index) < sg.operators.size()) {
      std::vector<int32_t> in = written_inputs(
          m, op, file_sg->operators()->Get(static_cast<flatbuffers::uoffset_t>(op.file_index))->inputs());
      for (int32_t& t : in) t = exported_index(t);
      sg.operators[static_cast<size_t>(op.file_index)]->inputs = std::move(in);
    }
  // A part reading another tensor in place of its file operator's weight (a copy untie-constants
  // made): the file operator reads that tensor at the slot.
  for (const Operator& op : m.operators)
    for (size_t k = 0; op.part && k < op.file_slots.size() && k < op.inputs.size(); ++k) {
      if (op.file_slots[k] < 0 || op.file_index < 0 || static_cast<size_t>(op.file_index) >= sg.operators.size())
        continue;
      std::vector<int32_t>& in = sg.operators[static_cast<size_t>(op.file_index)]->inputs;
      const size_t slot = static_cast<size_t>(op.file_slots[k]);
      if (slot < in.size() && op.inputs[k] >= 0) in[slot] = exported_index(op.inputs[k]);
    }

  // A loop body's constant that could not be written in place: a buffer of its own.
  for (int32_t t : relocate) {
    const auto& [g, i] = body.at(t);
    auto buffer = std::make_unique<fb::BufferT>();
    buffer->data = le_bytes(weights.at(t));
    model->subgraphs.at(static_cast<size_t>(g))->tensors.at(static_cast<size_t>(i))->buffer =
        static_cast<uint32_t>(model->buffers.size());
    model->buffers.push_back(std::move(buffer));
  }
  // A loop body's operator whose steps read a tensor added at setup (a missing bias, an untied
  // copy): the body's operator reads it, as a tensor of the body's subgraph on the same buffer as
  // the one appended to the main subgraph.
  std::map<std::pair<int32_t, int32_t>, int32_t> in_body;  // (subgraph, model tensor) -> its index there
  for (const Operator& op : m.operators) {
    if (op.body_subgraph <= 0 || static_cast<size_t>(op.body_subgraph) >= model->subgraphs.size()) continue;
    fb::SubGraphT& g = *model->subgraphs[static_cast<size_t>(op.body_subgraph)];
    if (op.body_op < 0 || static_cast<size_t>(op.body_op) >= g.operators.size()) continue;
    std::vector<int32_t>& in = g.operators[static_cast<size_t>(op.body_op)]->inputs;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const int32_t t = op.inputs[k];
      if (t < 0 || static_cast<size_t>(t) < file_tensors) continue;  // the file's, or a step's own
      const auto key = std::make_pair(op.body_subgraph, t);
      auto it = in_body.find(key);
      if (it == in_body.end()) {
        const fb::TensorT& appended = *sg.tensors[static_cast<size_t>(exported_index(t))];
        auto ft = std::make_unique<fb::TensorT>();
        ft->name = appended.name;
        ft->shape = appended.shape;
        ft->type = appended.type;
        ft->buffer = appended.buffer;
        it = in_body.emplace(key, static_cast<int32_t>(g.tensors.size())).first;
        g.tensors.push_back(std::move(ft));
      }
      if (in.size() <= k) in.resize(k + 1, -1);
      in[k] = it->second;
    }
  }

  if (info_bytes) {
    // Drop the existing CIRCLE_TRAINING entries; reuse the first one's buffer if it is its own.
    int64_t old_buffer = -1;
    for (auto it = model->metadata.begin(); it != model->metadata.end();) {
      if ((*it)->name == kTrainingInfoMetadataName) {
        if (old_buffer < 0) old_buffer = (*it)->buffer;
        it = model->metadata.erase(it);
      } else {
        ++it;
      }
    }
    bool reuse = old_buffer > 0 && static_cast<size_t>(old_buffer) < model->buffers.size();
    for (const auto& g : model->subgraphs)
      for (const auto& t : g->tensors) reuse = reuse && static_cast<int64_t>(t->buffer) != old_buffer;
    for (const auto& md : model->metadata) reuse = reuse && static_cast<int64_t>(md->buffer) != old_buffer;
    for (int32_t b : model->metadata_buffer) reuse = reuse && b != old_buffer;
    size_t info_buffer;
    if (reuse) {
      info_buffer = static_cast<size_t>(old_buffer);
      for (size_t i = 0; i < outside.size(); ++i) {
        if (outside[i].buffer == info_buffer) {
          outside.erase(outside.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
    } else {
      info_buffer = model->buffers.size();
      model->buffers.push_back(std::make_unique<fb::BufferT>());
    }
    fb::BufferT& ib = *model->buffers[info_buffer];
    ib.data = *info_bytes;
    ib.offset = 0;
    ib.size = 0;
    auto entry = std::make_unique<fb::MetadataT>();
    entry->name = kTrainingInfoMetadataName;
    entry->buffer = static_cast<uint32_t>(info_buffer);
    model->metadata.push_back(std::move(entry));
  }

  // Outside buffers keep a placeholder offset (> 1, so that the field is written) until the
  // size of the flatbuffer is known.
  for (const Outside& o : outside) model->buffers[o.buffer]->offset = 2;
  flatbuffers::FlatBufferBuilder fbb(base.size() + 1024);
  fbb.Finish(fb::Model::Pack(fbb, model.get()), identifier);
  std::vector<uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  model.reset();

  if (!outside.empty()) {
    auto align16 = [](uint64_t n) { return (n + 15) / 16 * 16; };
    uint64_t end = align16(out.size());
    std::vector<uint64_t> offsets;
    for (const Outside& o : outside) {
      offsets.push_back(end);
      end = align16(end + o.size);
    }
    auto* buffers = fb::GetMutableModel(out.data())->mutable_buffers();
    for (size_t i = 0; i < outside.size(); ++i) {
      fb::Buffer* b = buffers->GetMutableObject(static_cast<flatbuffers::uoffset_t>(outside[i].buffer));
      if (!b->mutate_offset(offsets[i]))
        fail(what, "cannot export: buffer " + std::to_string(outside[i].buffer) + " lost its offset");
    }
    out.resize(end, 0);
    for (size_t i = 0; i < outside.size(); ++i)
      if (outside[i].size > 0) std::memcpy(out.data() + offsets[i], base.data() + outside[i].offset, outside[i].size);
    // The last buffer ends the file (no padding after it).
    out.resize(offsets.back() + outside.back().size);
  }
  return out;
}

// weights with the constants derived from them (Model::derived): their source's trained part,
// repeated.
std::map<int32_t, std::vector<float>> with_derived(const Model& m, std::map<int32_t, std::vector<float>> w) {
  for (const DerivedConstant& d : m.derived) {
    auto src = w.find(d.source);
    if (src == w.end() || d.count <= 0 || static_cast<size_t>(d.offset + d.count) > src->second.size()) continue;
    const Tensor& t = m.tensors[static_cast<size_t>(d.tensor)];
    std::vector<float> v(t.elements());
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = src->second[static_cast<size_t>(d.offset) + i % static_cast<size_t>(d.count)];
    w[d.tensor] = std::move(v);
  }
  return w;
}

// The weights of the file's own tensors (the rest go into rebuild()).
std::map<int32_t, std::vector<float>> file_weights(const Model& m, const std::map<int32_t, std::vector<float>>& w) {
  if (m.file_tensor_count < 0) return w;
  std::map<int32_t, std::vector<float>> out;
  for (const auto& [t, v] : w)
    if (t < m.file_tensor_count) out[t] = v;
  return out;
}

}  // namespace

std::vector<uint8_t> export_model(const Model& m, const std::map<int32_t, std::vector<float>>& trained,
                                  const std::string& format) {
  const std::map<int32_t, std::vector<float>> weights = with_derived(m, trained);
  const std::string what = source_of(m);
  if (format != "circle" && format != "tflite") fail(what, "cannot export: unknown format '" + format + "'");
  check_weights(m, weights, what);
  if (m.file.empty()) {
    Model copy = m;
    for (const auto& [t, values] : weights) copy.tensors[static_cast<size_t>(t)].data = host_bytes(values);
    return write_model(copy, format);
  }
  const char* identifier = format == "circle" ? "CIR0" : "TFL3";
  const BodyTensors body = body_tensors(m);
  std::set<int32_t> relocate;
  std::vector<uint8_t> base = export_in_place(m, file_weights(m, weights), &body, &relocate);
  if (structure_changed(m) || !relocate.empty())
    return rebuild(base, m, weights, nullptr, identifier, what, relocate, body);
  std::memcpy(base.data() + 4, identifier, 4);  // the same tables serve both formats
  return base;
}

std::vector<uint8_t> export_circleplus(const Model& m, const std::map<int32_t, std::vector<float>>& trained,
                                       const TrainingInfo& info) {
  const std::map<int32_t, std::vector<float>> weights = with_derived(m, trained);
  const std::string what = source_of(m);
  std::vector<uint8_t> info_bytes;
  try {
    info_bytes = serialize_training_info(info, file_operator_count(m));
  } catch (const ModelError& e) {
    fail(what, std::string("cannot export circle+: ") + e.what());
  }
  check_weights(m, weights, what);
  const BodyTensors body = body_tensors(m);
  std::set<int32_t> relocate;
  const std::vector<uint8_t> base = export_in_place(m, file_weights(m, weights), &body, &relocate);
  return rebuild(base, m, weights, &info_bytes, "CIR0", what, relocate, body);
}

}  // namespace cltrain
