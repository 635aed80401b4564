// Pass dilated-convolutions (import): TensorFlow's converter writes a dilated convolution (Keras'
// Conv2D/Conv1D/DepthwiseConv2D with dilation_rate > 1, a TCN's or WaveNet's causal Conv1D) as
// SPACE_TO_BATCH_ND (the input split into block x block phases, padded), a VALID convolution of
// dilation 1 over the phases, and BATCH_TO_SPACE_ND (the phases interleaved back, cropped); a
// Conv1D has EXPAND_DIMS and a RESHAPE between them. That is one convolution of dilation `block`
// over the input padded (before, after - crop after): where that padding is none (VALID) or the
// convolution's SAME padding, the two batch operators fold (export writes them back as they were)
// and the convolution loads with its dilation and padding, reading the input and writing the
// output itself; a Conv1D's EXPAND_DIMS and RESHAPE become RESHAPEs around it, through their own
// tensors given the undivided shapes. A batch axis that never mixes with space then
// follows --batch_size as any other model's does.
#include <algorithm>
#include <cstring>
#include <vector>

#include "circle_generated.h"
#include "cltrain/cltrain_ops.h"
#include "ops/op_descriptor.h"
#include "passes/file_links.h"
#include "passes/passes.h"
#include "window_geometry.h"

namespace cltrain {

namespace {

constexpr int32_t kConv2D = 3, kDepthwiseConv2D = 4, kReshape = 22, kBatchToSpace = 37, kSpaceToBatch = 38,
                  kExpandDims = 70;

// One dilated convolution as the converter wrote it (positions in the file's operators; -1 where
// absent).
struct Dilated {
  int32_t s2b = -1, expand = -1, conv = -1, reshape = -1, b2s = -1;
  int32_t x = -1, y = -1;      // the input of SPACE_TO_BATCH_ND, the output of BATCH_TO_SPACE_ND
  cltrain_op_params params{};  // the convolution's, with the dilation and padding it takes
};

class Matcher {
 public:
  Matcher(const Model& m, const std::vector<FileOperator>& ops, const FileLinks& links, const std::string& what)
      : m_(m), ops_(ops), links_(links), what_(what) {}

  // The pattern ending at the BATCH_TO_SPACE_ND at position b, or false.
  bool match(int32_t b, Dilated* d) const {
    const FileOperator& b2s = ops_[static_cast<size_t>(b)];
    if (b2s.code != kBatchToSpace || !pending(b2s) || b2s.inputs.size() != 3 || b2s.outputs.size() != 1) return false;
    d->b2s = b;
    d->y = b2s.outputs[0];
    int32_t t = b2s.inputs[0];
    // A Conv1D: RESHAPE (drops the added axis) after the convolution.
    int32_t w = writer(t);
    if (w >= 0 && ops_[static_cast<size_t>(w)].code == kReshape) {
      d->reshape = w;
      t = ops_[static_cast<size_t>(w)].inputs[0];
      w = writer(t);
    }
    if (w < 0) return false;
    const FileOperator& conv = ops_[static_cast<size_t>(w)];
    if ((conv.code != kConv2D && conv.code != kDepthwiseConv2D) || conv.inputs.size() < 2) return false;
    d->conv = w;
    t = conv.inputs[0];
    w = writer(t);
    if (d->reshape >= 0) {  // ... and EXPAND_DIMS (of the height axis, 1) before it
      if (w < 0 || ops_[static_cast<size_t>(w)].code != kExpandDims) return false;
      const std::vector<int32_t>& e = tensor(t).shape;
      const std::vector<int32_t>& c = tensor(conv.outputs[0]).shape;
      if (e.size() != 4 || e[1] != 1 || c.size() != 4 || c[1] != 1) return false;
      d->expand = w;
      t = ops_[static_cast<size_t>(w)].inputs[0];
      w = writer(t);
    }
    if (w < 0 || ops_[static_cast<size_t>(w)].code != kSpaceToBatch) return false;
    const FileOperator& s2b = ops_[static_cast<size_t>(w)];
    if (s2b.inputs.size() != 3) return false;
    d->s2b = w;
    d->x = s2b.inputs[0];
    return geometry(s2b, b2s, conv, d);
  }

 private:
  const Tensor& tensor(int32_t t) const { return m_.tensors[static_cast<size_t>(t)]; }
  static bool pending(const FileOperator& fo) { return fo.fate == FileOperator::Fate::kPending; }
  // The pending operator (one output) writing t, where t is read once and is no model output.
  int32_t writer(int32_t t) const {
    const int32_t w = links_.writer(t);
    if (w < 0 || links_.reader_count(t) != 1) return -1;
    if (std::find(m_.outputs.begin(), m_.outputs.end(), t) != m_.outputs.end()) return -1;
    const FileOperator& fo = ops_[static_cast<size_t>(w)];
    return pending(fo) && fo.outputs.size() == 1 && !fo.inputs.empty() ? w : -1;
  }
  // A constant int32 operand's values, or empty.
  std::vector<int32_t> values(int32_t t) const {
    if (!links_.valid(t)) return {};
    const Tensor& c = tensor(t);
    if (c.dtype != CLTRAIN_INT32 || !c.is_constant() || c.data.size() != 4 * c.elements()) return {};
    std::vector<int32_t> v(c.elements());
    std::memcpy(v.data(), c.data.data(), c.data.size());
    return v;
  }

  bool geometry(const FileOperator& s2b, const FileOperator& b2s, const FileOperator& conv, Dilated* d) const {
    const std::vector<int32_t> block = values(s2b.inputs[1]), pads = values(s2b.inputs[2]);
    const std::vector<int32_t> block2 = values(b2s.inputs[1]), crops = values(b2s.inputs[2]);
    const size_t spatial = d->reshape >= 0 ? 1 : 2;  // Conv1D: the length; else height and width
    if (block.size() != spatial || block != block2 || pads.size() != 2 * spatial || crops.size() != 2 * spatial)
      return false;
    const Tensor &x = tensor(d->x), &y = tensor(d->y), &w = tensor(conv.inputs[1]);
    if (x.dtype != CLTRAIN_FLOAT32 || x.is_constant() || x.shape.size() != spatial + 2 ||
        y.shape.size() != x.shape.size())
      return false;
    if (w.shape.size() != 4 || (spatial == 1 && w.shape[1] != 1)) return false;
    // The convolution's options as its descriptor reads them: VALID, stride 1, dilation 1.
    const OpDescriptor* desc = find_builtin(conv.code);
    if (!desc || !desc->read_options || conv.op->builtin_options_type() != desc->options) return false;
    OptionReader reader(what_, conv.label);
    cltrain_op_params p{};
    desc->read_options(*conv.op, reader, p);
    if (p.padding != CLTRAIN_PADDING_VALID || p.stride_h != 1 || p.stride_w != 1 || p.dilation_h != 1 ||
        p.dilation_w != 1)
      return false;
    bool valid = true, same = true;
    for (size_t a = 0; a < spatial; ++a) {
      const int64_t before = pads[2 * a], after = pads[2 * a + 1] - crops[2 * a + 1];
      const int64_t rate = block[a], in = x.shape[a + 1];
      const int64_t filter = w.shape[spatial == 1 ? 2 : a + 1];
      if (rate < 1 || before < 0 || after < 0 || crops[2 * a] != 0) return false;
      if (in + before + after - (filter - 1) * rate != y.shape[a + 1]) return false;
      AxisGeometry g;
      if (!axis_geometry(CLTRAIN_PADDING_SAME, in, filter, 1, rate, "", &g).empty()) return false;
      valid = valid && before == 0 && after == 0;
      same = same && before == g.pad_before && before + after == (filter - 1) * rate;
    }
    if (!valid && !same) return false;
    p.padding = valid ? CLTRAIN_PADDING_VALID : CLTRAIN_PADDING_SAME;
    p.dilation_h = spatial == 1 ? 1 : block[0];
    p.dilation_w = block[spatial - 1];
    d->params = p;
    return x.shape[0] == y.shape[0];
  }

  const Model& m_;
  const std::vector<FileOperator>& ops_;
  const FileLinks& links_;
  const std::string& what_;
};

}  // namespace

std::string dilated_convolutions_pass(PassInput& in) {
  Model& m = *in.m;
  std::vector<FileOperator>& ops = *in.file;
  int n = 0;
  const FileLinks links(ops, m.tensors.size());  // the fates change below, the links do not
  for (size_t b = 0; b < ops.size(); ++b) {
    Dilated d;
    if (!Matcher(m, ops, links, in.what).match(static_cast<int32_t>(b), &d)) continue;
    FileOperator& conv = ops[static_cast<size_t>(d.conv)];
    std::vector<int32_t> conv_inputs = conv.inputs;
    const int32_t conv_out = d.expand >= 0 ? conv.outputs[0] : d.y;
    if (d.expand >= 0) {  // Conv1D: [N, L, C] -> [N, 1, L, C] -> conv -> [N, 1, L', C'] -> [N, L', C']
      // The two tensors between (read only inside the pattern) take the undivided shapes; the
      // file keeps its own (export writes the file's operators and shapes back).
      FileOperator& expand = ops[static_cast<size_t>(d.expand)];
      FileOperator& reshape = ops[static_cast<size_t>(d.reshape)];
      const int32_t et = expand.outputs[0], ct = conv.outputs[0];
      const std::vector<int32_t> xs = m.tensors[static_cast<size_t>(d.x)].shape;
      const std::vector<int32_t> ys = m.tensors[static_cast<size_t>(d.y)].shape;
      m.tensors[static_cast<size_t>(et)].shape = {xs[0], 1, xs[1], xs[2]};
      m.tensors[static_cast<size_t>(ct)].shape = {ys[0], 1, ys[1], ys[2]};
      expand.lowered = {part_of(expand, CLTRAIN_OP_RESHAPE, {d.x}, et)};
      expand.fate = FileOperator::Fate::kLowered;
      reshape.lowered = {part_of(reshape, CLTRAIN_OP_RESHAPE, {ct}, d.y)};
      reshape.fate = FileOperator::Fate::kLowered;
      conv_inputs[0] = et;
    } else {
      // The convolution reads the input itself where the file has the phases (export writes the
      // file's tensor back, Model::reads_instead).
      m.reads_instead[conv_inputs[0]] = d.x;
      conv_inputs[0] = d.x;
    }
    // Not a part: export writes the file's convolution with the inputs the model gives it (an
    // untied or added bias), its options (VALID, dilation 1) as they were.
    Operator op = part_of(conv, find_builtin(conv.code)->op, conv_inputs, conv_out);
    op.part = false;
    op.params = d.params;
    conv.lowered = {op};
    conv.fate = FileOperator::Fate::kLowered;
    for (int32_t k : {d.s2b, d.b2s}) {
      ops[static_cast<size_t>(k)].fate = FileOperator::Fate::kFolded;
      m.folded_ops.push_back(ops[static_cast<size_t>(k)].index);
    }
    ++n;
  }
  std::sort(m.folded_ops.begin(), m.folded_ops.end());
  return n ? "loaded " + std::to_string(n) + " dilated convolution" + (n == 1 ? "" : "s") +
                 " written as SPACE_TO_BATCH_ND, convolution, BATCH_TO_SPACE_ND as one convolution with its "
                 "dilation (the batch operators fold)"
           : "";
}

}  // namespace cltrain
