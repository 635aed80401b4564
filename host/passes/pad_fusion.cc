// Pass pad-fusion (training): a PAD that only feeds a VALID convolution whose SAME padding is
// the same pad is folded into it (the convolution reads the PAD's input with SAME padding), so
// the padded tensor is never stored. Only the training graph's copy of the operators changes.
#include <map>
#include <vector>

#include "ops/op_descriptor.h"
#include "passes/passes.h"
#include "window_geometry.h"

namespace cltrain {

std::string pad_fusion_pass(PassInput& in) {
  const Model& m = in.training->model;
  std::vector<Operator>& ops = in.training->ops;
  std::vector<bool>& fused = in.training->fused;
  std::map<int32_t, int32_t>& folded_into = in.training->folded_into;
  const int32_t prediction = in.training->prediction;
  std::vector<std::vector<size_t>> consumers(m.tensors.size());  // per tensor, the operators reading it
  for (size_t i = 0; i < ops.size(); ++i)
    if (!fused[i])
      for (int32_t t : ops[i].inputs)
        if (t >= 0) consumers[static_cast<size_t>(t)].push_back(i);
  int32_t n = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operator& pad = ops[i];
    if (pad.op != CLTRAIN_OP_PAD || pad.outputs.size() != 1) continue;
    const int32_t padded = pad.outputs[0], x = pad.inputs[0];
    const auto& users = consumers[static_cast<size_t>(padded)];
    if (users.size() != 1 || padded == prediction) continue;
    Operator& conv = ops[users[0]];
    if (!find_op(conv.op)->folds_pad || conv.inputs[0] != padded || conv.params.padding != CLTRAIN_PADDING_VALID)
      continue;
    const Tensor& xt = m.tensors[static_cast<size_t>(x)];
    const Tensor& wt = m.tensors[static_cast<size_t>(conv.inputs[1])];
    if (xt.shape.size() != 4 || wt.shape.size() != 4) continue;
    const cltrain_op_params& pp = pad.params;
    if (pp.pad_before[0] || pp.pad_after[0] || pp.pad_before[3] || pp.pad_after[3]) continue;
    bool same = true;
    for (int axis = 1; axis <= 2 && same; ++axis) {
      const int64_t extent = xt.shape[static_cast<size_t>(axis)], filter = wt.shape[static_cast<size_t>(axis)];
      const int64_t stride = axis == 1 ? conv.params.stride_h : conv.params.stride_w;
      const int64_t dilation = axis == 1 ? conv.params.dilation_h : conv.params.dilation_w;
      AxisGeometry s, v;
      same = axis_geometry(CLTRAIN_PADDING_SAME, extent, filter, stride, dilation, "", &s).empty() &&
             axis_geometry(CLTRAIN_PADDING_VALID, extent + pp.pad_before[axis] + pp.pad_after[axis], filter, stride,
                           dilation, "", &v)
                 .empty() &&
             s.out == v.out && s.pad_before == pp.pad_before[axis];
    }
    if (!same) continue;
    conv.inputs[0] = x;
    conv.params.padding = CLTRAIN_PADDING_SAME;
    fused[i] = true;
    ++n;
    folded_into[static_cast<int32_t>(i)] = static_cast<int32_t>(users[0]);
  }
  return n ? "fused " + std::to_string(n) + " PAD" + (n == 1 ? "" : "s") + " into the convolution" +
                 (n == 1 ? " that reads it" : "s that read them")
           : "";
}

}  // namespace cltrain
