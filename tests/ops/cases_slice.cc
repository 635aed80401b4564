// SLICE (a box of x, params.pad_before / pad_after cut at either end of each axis; y may drop the
// box's size-1 axes): forward in [x] out [y], backward in [dy] out [dx] (dy in the box, zeros
// around); copies, exact. The shapes are those SPLIT, UNPACK and STRIDED_SLICE load as.
#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

// The cuts into p, the box they leave of dims, and the box's tensor dims (its size-1 axes kept, or
// dropped: squeeze).
void cut(const std::vector<int32_t>& dims, const std::vector<int32_t>& before, const std::vector<int32_t>& after,
         bool squeeze, cltrain_op_params* p, std::vector<int32_t>* box, std::vector<int32_t>* tensor_dims) {
  *box = dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    p->pad_before[d] = before[d];
    p->pad_after[d] = after[d];
    (*box)[d] -= before[d] + after[d];
    if (!squeeze || (*box)[d] != 1) tensor_dims->push_back((*box)[d]);
  }
}

OpCase slice_case(const std::string& tag, std::vector<int32_t> xdims, std::vector<int32_t> before,
                  std::vector<int32_t> after, bool squeeze = false) {
  cltrain_op_params p{};
  std::vector<int32_t> box, ydims;
  cut(xdims, before, after, squeeze, &p, &box, &ydims);
  OpCase c = unary_case(CLTRAIN_OP_SLICE, "Slice_" + tag, xdims, ydims, p);
  std::vector<uint64_t> xstride(xdims.size());
  uint64_t s = 1;
  for (size_t d = xdims.size(); d-- > 0;) {
    xstride[d] = s;
    s *= static_cast<uint64_t>(xdims[d]);
  }
  const std::vector<uint64_t> src = y_index(box, xstride, before);  // x's index of each y element
  const uint64_t x_count = s;
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 0.0;
  gather_reference(c, src, x_count);
  return c;
}

// ACCUMULATE_BOX (backward phase): in [a] out [acc], acc's box += a, acc elsewhere unchanged;
// run twice so that it accumulates.
OpCase accumulate_box_case(const std::string& tag, std::vector<int32_t> accdims, std::vector<int32_t> before,
                           std::vector<int32_t> after, bool squeeze = false) {
  cltrain_op_params p{};
  std::vector<int32_t> box, adims;
  cut(accdims, before, after, squeeze, &p, &box, &adims);
  std::vector<uint64_t> stride(accdims.size());
  uint64_t n = 1;
  for (size_t d = accdims.size(); d-- > 0;) {
    stride[d] = n;
    n *= static_cast<uint64_t>(accdims[d]);
  }
  const std::vector<uint64_t> dst = y_index(box, stride, before);  // acc's index of each element of a
  OpCase c;
  c.name = "AccumulateBox_" + tag;
  c.op = CLTRAIN_OP_ACCUMULATE_BOX;
  const int32_t a = c.input("a", adims);
  c.tensors[a].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t acc = c.input("acc", accdims);
  c.tensors[acc].role = CLTRAIN_ROLE_BACK_PROP;
  c.step(CLTRAIN_OP_ACCUMULATE_BOX, CLTRAIN_PHASE_BACKWARD, {a}, {acc}, p);
  c.stateful = true;
  c.iterations = 2;
  c.fresh = {a};
  c.state = {acc};
  c.tol.vs_cpu = 0.0;
  c.tol.vs_reference = 1e-6;
  c.reference_step = [=](Values& v, int64_t) {
    for (size_t i = 0; i < dst.size(); ++i) v[acc][dst[i]] += v[a][i];
  };
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      // A SPLIT's second gate part into the [B, 4*H] gradient its first part wrote.
      accumulate_box_case("split_gate_n2_x16", {2, 16}, {0, 4}, {0, 8}),
      // An UNPACK's step 3 of 5 (the axis dropped) into [B, T, D].
      accumulate_box_case("unpack_step_n2_t5_d3", {2, 5, 3}, {0, 3, 0}, {0, 1, 0}, true),
      // Three cut axes of a rank-4 tensor, 70 wide in the last.
      accumulate_box_case("box_n2_h4w3_c70", {2, 4, 3, 70}, {0, 1, 0, 3}, {0, 1, 2, 0}),
      // An LSTM's SPLIT of [B, 4*64] into its gates: the third of four.
      slice_case("split_gate_n2_x16", {2, 16}, {0, 8}, {0, 4}),
      // GRU's STRIDED_SLICE [0,64]:[0,128] of the recurrent projection, here on [2, 9].
      slice_case("middle_n2_x9", {2, 9}, {0, 3}, {0, 3}),
      // UNPACK along the time axis of [B, T, D]: step 2 of 5, the axis dropped.
      slice_case("unpack_step_n2_t5_d3", {2, 5, 3}, {0, 2, 0}, {0, 2, 0}, true),
      // A box in three axes of a rank-4 tensor, 70 wide in the last (more than a work-group row).
      slice_case("box_n2_h4w3_c70", {2, 4, 3, 70}, {0, 1, 0, 3}, {0, 1, 2, 0}),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
