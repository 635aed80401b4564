// Passes masks and selects (import): Keras's Embedding(mask_zero=True) before a recurrent layer.
// The converter writes the mask as NOT_EQUAL(ids, 0), a bool tensor that RESHAPE and TRANSPOSE
// carry into the layer's WHILE loop, where each step keeps the carried state where the mask is
// false: SELECT_V2(mask_t, new, old). cltrain computes the mask as a float 0/1 tensor instead:
//   masks    NOT_EQUAL(ids, k) of a GATHER's (an Embedding's) ids becomes a GATHER of the same
//            ids from a fixed (untrained) [rows, 1] table of (r != k), reshaped to the
//            NOT_EQUAL's shape; the bool tensors the main graph's RESHAPE, TRANSPOSE and REVERSE_V2
//            make of it are float (the while-loops pass carries that into the steps).
//   selects  SELECT / SELECT_V2 of float values under a float 0/1 condition c becomes
//            c a + (1 - c) b: MULs, a SUB and an ADD, exact (each product is the value or 0), and
//            the gradient is a's where c is 1 and b's where it is 0, as TensorFlow's.
// All operators made are parts of the file's operator, which export writes back as it was.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cltrain/cltrain_backend.h"
#include "cltrain/cltrain_ops.h"
#include "passes/file_links.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {
namespace {

constexpr int32_t kGather = 36, kReshape = 22, kTranspose = 39, kReverseV2 = 105, kSelect = 64, kNotEqual = 72,
                  kSelectV2 = 123, kEmbeddingLookup = 7;

bool int_scalar(const Model& m, int32_t t, int32_t* v) {
  if (t < 0) return false;
  const Tensor& x = m.tensors[static_cast<size_t>(t)];
  if (x.dtype != CLTRAIN_INT32 || !x.is_constant() || x.data.size() != 4) return false;
  std::memcpy(v, x.data.data(), 4);
  return true;
}

int32_t new_tensor(Model& m, const std::string& name, std::vector<int32_t> shape) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  return append_tensor(m, std::move(t));
}

}  // namespace

std::string masks_pass(PassInput& in) {
  Model& m = *in.m;
  std::vector<FileOperator>& file = *in.file;
  const FileLinks links(file, m.tensors.size());
  int masks = 0;
  for (FileOperator& ne : file) {
    int32_t k = 0;
    if (ne.fate != FileOperator::Fate::kPending || ne.code != kNotEqual || ne.inputs.size() != 2 ||
        ne.outputs.size() != 1 || ne.inputs[0] < 0 || !int_scalar(m, ne.inputs[1], &k))
      continue;
    const int32_t ids = ne.inputs[0], y = ne.outputs[0];
    const Tensor& idt = m.tensors[static_cast<size_t>(ids)];
    if (idt.dtype != CLTRAIN_INT32 || idt.is_constant() || m.tensors[static_cast<size_t>(y)].dtype != CLTRAIN_UINT8)
      continue;
    // The table's rows: an Embedding's GATHER of these ids (or of their index guard's output).
    int32_t rows = 0;
    for (const FileOperator& g : file) {
      const bool gather = g.code == kGather || g.code == kEmbeddingLookup;
      if (!gather || g.inputs.size() != 2) continue;
      const size_t table = g.code == kEmbeddingLookup ? 1 : 0;
      const int32_t gids = g.inputs[1 - table], gt = g.inputs[table];
      if (gids < 0 || gt < 0 || !m.tensors[static_cast<size_t>(gt)].is_constant() ||
          m.tensors[static_cast<size_t>(gt)].shape.empty())
        continue;
      bool same = gids == ids;
      const int32_t w = links.writer(gids);
      if (!same && w >= 0) {
        const FileOperator& guard = file[static_cast<size_t>(w)];
        same = (guard.code == kSelect || guard.code == kSelectV2) &&
               std::find(guard.inputs.begin(), guard.inputs.end(), ids) != guard.inputs.end();
      }
      if (same) rows = std::max(rows, m.tensors[static_cast<size_t>(gt)].shape[0]);
    }
    if (rows <= 0) continue;
    const std::vector<int32_t> shape = m.tensors[static_cast<size_t>(y)].shape;
    Tensor table;
    table.name = m.tensors[static_cast<size_t>(y)].name + "/mask_table";
    table.shape = {rows, 1};
    table.dtype = CLTRAIN_FLOAT32;
    for (int32_t r = 0; r < rows; ++r) {
      const float v = r != k ? 1.0f : 0.0f;
      const uint8_t* b = reinterpret_cast<const uint8_t*>(&v);
      table.data.insert(table.data.end(), b, b + 4);
    }
    const int32_t t = append_tensor(m, std::move(table));
    m.fixed_constants.push_back(t);
    std::vector<int32_t> gathered = shape;
    gathered.push_back(1);
    const int32_t g = new_tensor(m, m.tensors[static_cast<size_t>(y)].name + "/gathered", gathered);
    m.tensors[static_cast<size_t>(y)].dtype = CLTRAIN_FLOAT32;
    ne.lowered = {part_of(ne, CLTRAIN_OP_GATHER, {t, ids}, g), part_of(ne, CLTRAIN_OP_RESHAPE, {g}, y)};
    ne.fate = FileOperator::Fate::kLowered;
    ++masks;
  }
  if (!masks) return "";
  // The main graph's RESHAPEs, TRANSPOSEs and REVERSE_V2s (a Bidirectional's backward layer) of the
  // mask carry floats.
  for (const FileOperator& f : file) {
    if (f.fate != FileOperator::Fate::kPending ||
        (f.code != kReshape && f.code != kTranspose && f.code != kReverseV2) || f.inputs.empty() || f.inputs[0] < 0 ||
        f.outputs.size() != 1 || f.outputs[0] < 0)
      continue;
    Tensor& out = m.tensors[static_cast<size_t>(f.outputs[0])];
    if (m.tensors[static_cast<size_t>(f.inputs[0])].dtype == CLTRAIN_FLOAT32 && out.dtype == CLTRAIN_UINT8)
      out.dtype = CLTRAIN_FLOAT32;
  }
  return "computed " + std::to_string(masks) + " NOT_EQUAL mask" + (masks == 1 ? "" : "s") +
         " of an Embedding's ids as 0/1 floats (a GATHER from a fixed table)";
}

std::string selects_pass(PassInput& in) {
  Model& m = *in.m;
  int selects = 0;
  int32_t one = -1;
  for (FileOperator& f : *in.file) {
    if (f.fate != FileOperator::Fate::kPending || (f.code != kSelect && f.code != kSelectV2) || f.inputs.size() != 3 ||
        f.outputs.size() != 1 || f.outputs[0] < 0)
      continue;
    bool floats = true;
    for (int32_t t : f.inputs)
      floats = floats && t >= 0 && m.tensors[static_cast<size_t>(t)].dtype == CLTRAIN_FLOAT32 &&
               (!m.tensors[static_cast<size_t>(t)].shape.empty() || m.tensors[static_cast<size_t>(t)].is_constant());
    if (!floats || m.tensors[static_cast<size_t>(f.outputs[0])].dtype != CLTRAIN_FLOAT32) continue;
    if (one < 0) {
      Tensor c;
      c.name = "select/one";
      c.shape = {1};
      c.dtype = CLTRAIN_FLOAT32;
      const float v = 1.0f;
      c.data.assign(reinterpret_cast<const uint8_t*>(&v), reinterpret_cast<const uint8_t*>(&v) + 4);
      one = append_tensor(m, std::move(c));
    }
    const int32_t c = f.inputs[0], a = f.inputs[1], b = f.inputs[2], y = f.outputs[0];
    const Tensor& yt = m.tensors[static_cast<size_t>(y)];
    const std::string name = yt.name;
    const std::vector<int32_t> shape = yt.shape, cshape = m.tensors[static_cast<size_t>(c)].shape;
    const int32_t ca = new_tensor(m, name + "/taken", shape);
    const int32_t nc = new_tensor(m, name + "/not", cshape);
    const int32_t nb = new_tensor(m, name + "/kept", shape);
    f.lowered = {part_of(f, CLTRAIN_OP_MUL, {c, a}, ca), part_of(f, CLTRAIN_OP_SUB, {one, c}, nc),
                 part_of(f, CLTRAIN_OP_MUL, {nc, b}, nb), part_of(f, CLTRAIN_OP_ADD, {ca, nb}, y)};
    f.fate = FileOperator::Fate::kLowered;
    ++selects;
  }
  return selects ? "loaded " + std::to_string(selects) + " SELECT_V2 operator" + (selects == 1 ? "" : "s") +
                       " of floats under a 0/1 mask as c a + (1 - c) b"
                 : "";
}

}  // namespace cltrain
