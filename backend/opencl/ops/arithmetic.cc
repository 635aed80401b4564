// ADD, SUB, MUL, DIV with numpy broadcasting and a fused activation, and SQUARED_DIFFERENCE,
// MAXIMUM, MINIMUM, and the comparisons GREATER ... NOT_EQUAL (forward only: a 0/1 mask)
// (kernels/arithmetic.cl).
//   forward:  in [a, b]          out [y]         arith_forward, one work-item per element of y
//   backward: in [a, b, y, dy]   out [da, db]    arith_grad_a / arith_grad_b, one work-item per
//             gradient element, summing over the broadcast dims in increasing flat index of y;
//             arith_grad_ab where both are asked for and neither is broadcast (one launch).
// a and b may be the same tensor; in the backward a and b are -1 where the op does not read them
// (ADD, SUB neither; MUL b for da and a for db; DIV b, and a for db), y is -1 without an
// activation, and da or db may be -1. The shapes of a and b come from whichever of the operand
// and its gradient is present. All of forward and backward of one op instance share a program.
#include "ops/dims.h"
#include "ops/op.h"

namespace cltrain::ocl {
namespace {

constexpr const char* kFamily = "arithmetic.cl";

struct ArithShape {
  std::vector<uint64_t> y, a, b;          // equal rank
  bool a_known = false, b_known = false;  // false where neither the operand nor its gradient is given
};

// The ops whose gradients read both operands, whichever gradient is asked for.
bool reads_both(int op) {
  return op == CLTRAIN_OP_SQUARED_DIFFERENCE || op == CLTRAIN_OP_MAXIMUM || op == CLTRAIN_OP_MINIMUM;
}
bool reads_a(int op, bool da, bool db) {
  return (op == CLTRAIN_OP_MUL && db) || (op == CLTRAIN_OP_DIV && db) || (reads_both(op) && (da || db));
}
bool reads_b(int op, bool da, bool db) {
  return (op == CLTRAIN_OP_MUL && da) || ((op == CLTRAIN_OP_DIV || reads_both(op)) && (da || db));
}

// GREATER ... NOT_EQUAL: forward only (no gradient flows through a 0/1 mask).
static_assert(CLTRAIN_OP_NOT_EQUAL - CLTRAIN_OP_GREATER == 5, "the comparisons are listed together");
bool comparison(int op) { return op >= CLTRAIN_OP_GREATER && op <= CLTRAIN_OP_NOT_EQUAL; }

// The kernel's OP definition (kernels/arithmetic.cl).
int op_code(int op) {
  switch (op) {
    case CLTRAIN_OP_SQUARED_DIFFERENCE: return 4;
    case CLTRAIN_OP_MAXIMUM: return 5;
    case CLTRAIN_OP_MINIMUM: return 6;
    case CLTRAIN_OP_GREATER: return 7;
    case CLTRAIN_OP_GREATER_EQUAL: return 8;
    case CLTRAIN_OP_LESS: return 9;
    case CLTRAIN_OP_LESS_EQUAL: return 10;
    case CLTRAIN_OP_EQUAL: return 11;
    case CLTRAIN_OP_NOT_EQUAL: return 12;
    default: return op - CLTRAIN_OP_ADD;
  }
}

// One operand's shape against y's: equal rank, each dim equal to y's or 1.
std::string check_operand(const std::vector<uint64_t>& y, const std::vector<uint64_t>& x, const char* role) {
  if (x.size() != y.size())
    return std::string(role) + " " + dims_string(x) + " and output " + dims_string(y) + " differ in rank";
  for (size_t d = 0; d < y.size(); ++d)
    if (x[d] != y[d] && x[d] != 1)
      return std::string(role) + " " + dims_string(x) + " does not broadcast to output " + dims_string(y);
  return {};
}

// The shape of operand `value` (or, if absent, of its gradient `grad`); *known is false if both
// are absent. Where both are given, they must agree.
std::string operand_shape(const StepView& s, int32_t value, int32_t grad, const char* role, std::vector<uint64_t>& out,
                          bool* known) {
  out.clear();
  *known = value >= 0 || grad >= 0;
  if (value >= 0) out = dims_of(s.tensor(value));
  if (grad >= 0) {
    const std::vector<uint64_t> g = dims_of(s.tensor(grad));
    if (value >= 0 && g != out)
      return std::string(role) + " gradient " + dims_string(g) + " and " + role + " " + dims_string(out) + " differ";
    out = g;
  }
  return {};
}

std::string check_shape(const StepView& s, ArithShape& sh) {
  std::string why;
  if (!activation_supported(s.step.params.activation))
    return "fused activation " + std::to_string(s.step.params.activation) + " is not supported";
  const int op = s.step.op;
  const bool act = s.step.params.activation != CLTRAIN_ACT_NONE;
  int32_t a = s.in(0), b = s.in(1), y, da = -1, db = -1;
  if (s.step.phase == CLTRAIN_PHASE_FORWARD) {
    if (!(why = require_tensor(s, a, "first operand")).empty()) return why;
    if (!(why = require_tensor(s, b, "second operand")).empty()) return why;
    y = s.out(0);
    if (!(why = require_tensor(s, y, "output")).empty()) return why;
  } else if (s.step.phase == CLTRAIN_PHASE_BACKWARD && !comparison(op)) {
    y = s.in(3);  // dy has y's shape
    da = s.out(0), db = s.out(1);
    if (!(why = require_tensor(s, y, "output gradient")).empty()) return why;
    if (reads_a(op, da >= 0, db >= 0) && (why = require_tensor(s, a, "first operand")) != "") return why;
    if (reads_b(op, da >= 0, db >= 0) && (why = require_tensor(s, b, "second operand")) != "") return why;
    if (act && (why = require_count(s, s.in(2), "output", s.count(y))) != "") return why;
    if (act && dims_of(s.tensor(s.in(2))) != dims_of(s.tensor(y))) return "output and output gradient differ in shape";
  } else {
    return "has no " + phase_name(s.step.phase) + " step";
  }
  sh.y = dims_of(s.tensor(y));
  if (!(why = operand_shape(s, a, da, "first operand", sh.a, &sh.a_known)).empty()) return why;
  if (!(why = operand_shape(s, b, db, "second operand", sh.b, &sh.b_known)).empty()) return why;
  for (uint64_t d : sh.y)
    if (d == 0) return "output " + dims_string(sh.y) + " is empty";
  if (sh.a_known && !(why = check_operand(sh.y, sh.a, "first operand")).empty()) return why;
  if (sh.b_known && !(why = check_operand(sh.y, sh.b, "second operand")).empty()) return why;
  // y must be the broadcast of a and b where both are known.
  if (sh.a_known && sh.b_known)
    for (size_t d = 0; d < sh.y.size(); ++d)
      if (sh.y[d] != std::max(sh.a[d], sh.b[d]))
        return "output " + dims_string(sh.y) + " is not the broadcast of " + dims_string(sh.a) + " and " +
               dims_string(sh.b);
  if (s.count(y) > UINT32_MAX) return "is too large for 32-bit indexing";
  return {};
}

std::string check(const StepView& s) {
  ArithShape sh;
  return check_shape(s, sh);
}

// The definitions of the op instance: the merged view of y with the strides of y, a and b.
// An operand of unknown shape (absent and not needed) is taken as full-size: its strides are
// never used then, but the forward and backward of the same instance must build the same text.
Defines arith_defines(const StepView& s, const ArithShape& sh) {
  const size_t rank = sh.y.size();
  std::vector<unsigned> masks(rank);
  for (size_t d = 0; d < rank; ++d) {
    const bool a_spans = !sh.a_known || sh.a[d] == sh.y[d];
    const bool b_spans = !sh.b_known || sh.b[d] == sh.y[d];
    masks[d] = 1u | (a_spans ? 2u : 0u) | (b_spans ? 4u : 0u);
  }
  const SpanView v = make_span_view(sh.y, masks);
  const View6 sa = v.strides(1), sb = v.strides(2);
  uint64_t count_a = 1, count_b = 1;
  for (int k = 0; k < kViewDims; ++k) {
    if (sa[k]) count_a *= v.size[k];
    if (sb[k]) count_b *= v.size[k];
  }
  Defines d;
  d.set("OP", op_code(s.step.op)).set("ACT", s.step.params.activation);
  d.set("COUNT", static_cast<long long>(view_count(v.size)));
  d.set("COUNT_A", static_cast<long long>(count_a)).set("COUNT_B", static_cast<long long>(count_b));
  define_view(d, "Y", v.size);
  define_view(d, "YS", v.strides(0));
  define_view(d, "SA", sa);
  define_view(d, "SB", sb);
  return d;
}

StepRun prepare(const OpContext& c) {
  const StepView& s = c.s;
  ArithShape sh;
  check_shape(s, sh);
  Defines d = arith_defines(s, sh);
  const bool fwd = s.step.phase == CLTRAIN_PHASE_FORWARD;
  c.storage(c.storage(c.storage(d, "A_H", s.in(0)), "B_H", s.in(1)), "Y_H", fwd ? s.out(0) : s.in(2));
  if (!fwd) c.storage(c.storage(c.storage(d, "DY_H", s.in(3)), "DA_H", s.out(0)), "DB_H", s.out(1));
  if (fwd) {
    Kernel k = c.kernel(kFamily, d, "arith_forward");
    set_args(k, c.pool(), c.offset(s.in(0)), c.offset(s.in(1)), c.offset(s.out(0)));
    const uint64_t count = s.count(s.out(0));
    return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
  }
  const cl_uint a_off = c.offset_or_zero(s.in(0)), b_off = c.offset_or_zero(s.in(1));
  const cl_uint y_off = c.offset_or_zero(s.in(2)), dy_off = c.offset(s.in(3));
  const uint64_t count = s.count(s.in(3));
  if (s.out(0) >= 0 && s.out(1) >= 0 && s.count(s.out(0)) == count && s.count(s.out(1)) == count) {
    Kernel k = c.kernel(kFamily, d, "arith_grad_ab");
    set_args(k, c.pool(), a_off, b_off, y_off, dy_off, c.offset(s.out(0)), c.offset(s.out(1)));
    return [k, count](const Queue& q, const cltrain_run_args*) { q.launch_1d(k, count); };
  }
  Kernel ka, kb;
  uint64_t count_a = 0, count_b = 0;
  if (s.out(0) >= 0) {
    ka = c.kernel(kFamily, d, "arith_grad_a");
    set_args(ka, c.pool(), a_off, b_off, y_off, dy_off, c.offset(s.out(0)));
    count_a = s.count(s.out(0));
  }
  if (s.out(1) >= 0) {
    kb = c.kernel(kFamily, d, "arith_grad_b");
    set_args(kb, c.pool(), a_off, b_off, y_off, dy_off, c.offset(s.out(1)));
    count_b = s.count(s.out(1));
  }
  return [ka, kb, count_a, count_b](const Queue& q, const cltrain_run_args*) {
    if (ka) q.launch_1d(ka, count_a);
    if (kb) q.launch_1d(kb, count_b);
  };
}

}  // namespace

const OpFamily kOp_ADD = {check, prepare, nullptr, true};
const OpFamily kOp_SUB = {check, prepare, nullptr, true};
const OpFamily kOp_MUL = {check, prepare, nullptr, true};
const OpFamily kOp_DIV = {check, prepare, nullptr, true};
const OpFamily kOp_SQUARED_DIFFERENCE = {check, prepare, nullptr, true};
const OpFamily kOp_MAXIMUM = {check, prepare, nullptr, true};
const OpFamily kOp_MINIMUM = {check, prepare, nullptr, true};
const OpFamily kOp_GREATER = {check, prepare, nullptr, true};
const OpFamily kOp_GREATER_EQUAL = {check, prepare, nullptr, true};
const OpFamily kOp_LESS = {check, prepare, nullptr, true};
const OpFamily kOp_LESS_EQUAL = {check, prepare, nullptr, true};
const OpFamily kOp_EQUAL = {check, prepare, nullptr, true};
const OpFamily kOp_NOT_EQUAL = {check, prepare, nullptr, true};

}  // namespace cltrain::ocl
