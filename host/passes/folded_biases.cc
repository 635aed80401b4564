// Pass folded-biases (load): a recurrent layer's first step as litert-torch converts a PyTorch
// nn.LSTM or nn.GRU. The state starts at zero, so the converter folds that step's h_0 W_hh + b_hh
// into a constant: b_hh (or one gate's part of it) repeated for every sample of the batch, added
// to x_0 W_ih + b_ih (a GRU's candidate gate multiplies it by r). Trained as a weight of its own
// that constant would take the first step's share of b_hh's gradient, one row per sample, and b_hh
// would miss it. Where every row of such a constant equals a part of a bias that a FullyConnected
// reads (non-uniform values, so not by chance), the operator reads that part of the bias instead:
// a SLICE of it (an added operator, not the file's), broadcast over the batch, so that b_hh trains
// as PyTorch trains it. Export writes the constant back with the trained bias's values
// (Model::derived), and the file's operator reads it as before.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "cltrain/cltrain_backend.h"
#include "cltrain/cltrain_ops.h"
#include "ops/op_descriptor.h"
#include "passes/new_tensors.h"
#include "passes/passes.h"

namespace cltrain {
namespace {

struct Source {
  int32_t bias;    // the FullyConnected's bias tensor
  int32_t offset;  // the part's first element
};

// Where the n values at row lie in a bias (non-uniform values only); {-1, 0} where in none, or in
// more than one place.
Source find_part(const Model& m, const std::vector<int32_t>& biases, const uint8_t* row, int32_t n) {
  Source found{-1, 0};
  int matches = 0;
  for (int32_t b : biases) {
    const Tensor& t = m.tensors[static_cast<size_t>(b)];
    const int32_t len = static_cast<int32_t>(t.elements());
    for (int32_t o = 0; o + n <= len; o += n)
      if (std::memcmp(t.data.data() + static_cast<size_t>(o) * 4, row, static_cast<size_t>(n) * 4) == 0)
        found = {b, o}, ++matches;
  }
  return matches == 1 ? found : Source{-1, 0};
}

}  // namespace

std::string folded_biases_pass(PassInput& in) {
  Model& m = *in.m;
  std::vector<int32_t> biases;  // non-uniform FullyConnected biases
  for (const Operator& op : m.operators) {
    if (op.op != CLTRAIN_OP_FULLY_CONNECTED || op.inputs.size() < 3 || op.inputs[2] < 0) continue;
    const Tensor& b = m.tensors[static_cast<size_t>(op.inputs[2])];
    if (is_float_constant(b) && !uniform(b) && b.elements() >= 2 &&
        std::find(biases.begin(), biases.end(), op.inputs[2]) == biases.end())
      biases.push_back(op.inputs[2]);  // once: the steps of a layer share it
  }
  if (biases.empty()) return "";
  std::vector<int> readers(m.tensors.size(), 0);
  for (const Operator& op : m.operators)
    for (int32_t t : op.inputs)
      if (t >= 0) ++readers[static_cast<size_t>(t)];
  std::map<std::tuple<int32_t, int32_t, int32_t, size_t>, int32_t> parts;  // (bias, offset, n, rank) -> the part
  std::vector<Operator> ops;
  int folded = 0;
  for (Operator& op : m.operators) {
    if ((op.op == CLTRAIN_OP_ADD || op.op == CLTRAIN_OP_MUL) && op.inputs.size() == 2) {
      for (int32_t& t : op.inputs) {
        if (t < 0 || readers[static_cast<size_t>(t)] != 1) continue;
        const Tensor c = m.tensors[static_cast<size_t>(t)];  // a copy: tensors are appended below
        if (!is_float_constant(c) || c.shape.size() < 2 || uniform(c)) continue;
        const int32_t n = c.shape.back();
        const uint64_t rows = c.elements() / static_cast<uint64_t>(n);
        if (n < 2 || rows < 2) continue;
        bool repeated = true;
        for (uint64_t r = 1; r < rows && repeated; ++r)
          repeated = std::memcmp(c.data.data(), c.data.data() + r * static_cast<uint64_t>(n) * 4,
                                 static_cast<size_t>(n) * 4) == 0;
        if (!repeated) continue;
        const Source s = find_part(m, biases, c.data.data(), n);
        if (s.bias < 0) continue;
        // The part as [1, ..., 1, n]: the constant's rank, so the operator's output keeps its shape.
        const auto key = std::make_tuple(s.bias, s.offset, n, c.shape.size());
        auto it = parts.find(key);
        if (it == parts.end()) {
          const std::string name = m.tensors[static_cast<size_t>(s.bias)].name + "/" + std::to_string(s.offset) + ":" +
                                   std::to_string(s.offset + n);
          Tensor part;
          part.name = name;
          part.shape = {n};
          const int32_t y = append_tensor(m, std::move(part));
          Operator slice;
          slice.op = CLTRAIN_OP_SLICE;
          slice.inputs = {s.bias};
          slice.outputs = {y};
          slice.file_index = op.file_index;
          slice.added = true;
          slice.params.pad_before[0] = s.offset;
          slice.params.pad_after[0] =
              static_cast<int32_t>(m.tensors[static_cast<size_t>(s.bias)].elements()) - s.offset - n;
          ops.push_back(slice);
          Tensor row;
          row.name = name + "/row";
          row.shape.assign(c.shape.size(), 1);
          row.shape.back() = n;
          const int32_t r = append_tensor(m, std::move(row));
          Operator reshape = slice;
          reshape.op = CLTRAIN_OP_RESHAPE;
          reshape.inputs = {y};
          reshape.outputs = {r};
          reshape.params = {};
          ops.push_back(reshape);
          it = parts.emplace(key, r).first;
        }
        m.derived.push_back({t, s.bias, s.offset, n});
        m.reads_instead[t] = it->second;
        t = it->second;
        ++folded;
      }
    }
  }
  if (!folded) return "";
  // The SLICEs first: they read only constants.
  ops.insert(ops.end(), std::make_move_iterator(m.operators.begin()), std::make_move_iterator(m.operators.end()));
  m.operators = std::move(ops);
  return "read " + std::to_string(folded) + (folded == 1 ? " constant that repeats" : " constants that repeat") +
         " a part of a FullyConnected's bias for every sample (a recurrent layer's first step, its "
         "zero-state product folded by the converter) as that part of the bias, trained with it";
}

}  // namespace cltrain
