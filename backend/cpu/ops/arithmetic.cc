// ADD, SUB, MUL, DIV with numpy broadcasting (a, b and y of equal rank; a size-1 dimension of
// an operand broadcasts) and a fused activation: forward in [a, b] out [y], y = act(a op b);
// backward in [a, b, y, dy] out [da, db], where a and b are -1 where not read (ADD, SUB read
// neither; MUL reads both; DIV reads b, and a for db) and y is -1 without activation. Per element
// of y, in increasing flat index, with g = dz (cltrain_backend.h, Numerics):
//   ADD da += g, db += g;  SUB da += g, db += -g;  MUL da += g * b, db += g * a;
//   DIV da += g / b, db += -((g * a) / (b * b));
// each gradient element a sum from 0 of its contributions. SQUARED_DIFFERENCE (no activation):
// t = a - b, y = t * t; backward reads a and b, u = 2 * (a - b), da += g * u, db += -(g * u).
// MAXIMUM (MINIMUM), no activation: y = a >= b (a <= b) ? a : b; backward reads a and b, the
// gradient to a where a >= b (a <= b), else to b. GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, EQUAL,
// NOT_EQUAL (forward only, no activation): y = 1 where a > b (>=, <, <=, ==, !=), else 0.
#include <algorithm>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

enum class Kind { Add, Sub, Mul, Div, SqDiff, Max, Min, Greater, GreaterEqual, Less, LessEqual, Equal, NotEqual };

// MAXIMUM, MINIMUM: a is the one taken (and given the gradient).
template <Kind kKind>
bool takes_a(float a, float b) {
  return kKind == Kind::Max ? a >= b : a <= b;
}

// y's shape and, per operand, its offset step along each axis of y (0 where it broadcasts).
struct Broadcast {
  int rank = 0;
  int64_t dims[CLTRAIN_MAX_RANK] = {};
  int64_t a_stride[CLTRAIN_MAX_RANK] = {}, b_stride[CLTRAIN_MAX_RANK] = {};
  int64_t count = 1;
};

// Strides of operand t (absent: zeros) against y; "" or what is wrong.
std::string operand(const TensorRef& t, const TensorRef& y, const char* what, int64_t* stride) {
  if (!t.present()) return {};
  if (t.rank() != y.rank())
    return std::string(what) + " " + shape_string(t) + " differs in rank from " + shape_string(y) +
           " (broadcasting needs equal ranks)";
  int64_t s = 1;
  for (int d = t.rank(); d-- > 0;) {
    if (t.dim(d) != y.dim(d) && t.dim(d) != 1)
      return std::string(what) + " " + shape_string(t) + " does not broadcast to " + shape_string(y);
    stride[d] = t.dim(d) == 1 ? 0 : s;
    s *= t.dim(d);
  }
  return {};
}

// a, b: the operands or their gradients (whichever is present); y: y or dy.
std::string broadcast(const TensorRef& a, const TensorRef& b, const TensorRef& y, Broadcast* bc) {
  if (std::string e = operand(a, y, "a", bc->a_stride); !e.empty()) return e;
  if (std::string e = operand(b, y, "b", bc->b_stride); !e.empty()) return e;
  bc->rank = y.rank();
  for (int d = 0; d < bc->rank; ++d) {
    bc->dims[d] = y.dim(d);
    bc->count *= y.dim(d);
    // y is the broadcast shape, not larger: some operand spans each axis of more than one element.
    const bool a_spans = a.present() && a.dim(d) == y.dim(d), b_spans = b.present() && b.dim(d) == y.dim(d);
    if (a.present() && b.present() && y.dim(d) != 1 && !a_spans && !b_spans)
      return "y " + shape_string(y) + " is not the broadcast shape of " + shape_string(a) + " and " + shape_string(b);
  }
  return {};
}

// Calls f(i, ia, ib) for every element i of y in increasing order.
template <typename F>
void for_each_element(const Broadcast& bc, F f) {
  int64_t coord[CLTRAIN_MAX_RANK] = {};
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < bc.count; ++i) {
    f(i, ia, ib);
    for (int d = bc.rank; d-- > 0;) {
      ia += bc.a_stride[d];
      ib += bc.b_stride[d];
      if (++coord[d] < bc.dims[d]) break;
      ia -= bc.a_stride[d] * bc.dims[d];
      ib -= bc.b_stride[d] * bc.dims[d];
      coord[d] = 0;
    }
  }
}

const TensorRef& either(const TensorRef& t, const TensorRef& u) { return t.present() ? t : u; }

bool same_shape(const TensorRef& t, const TensorRef& u) {
  return !t.present() || !u.present() ||
         (t.rank() == u.rank() && std::equal(t.desc->dims, t.desc->dims + t.rank(), u.desc->dims));
}

std::string check_forward(const StepView& s) {
  Broadcast bc;
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  if (std::string e = require(s.in[0], "a"); !e.empty()) return e;
  if (std::string e = require(s.in[1], "b"); !e.empty()) return e;
  if (std::string e = require(s.out[0], "y"); !e.empty()) return e;
  if (std::string e = broadcast(s.in[0], s.in[1], s.out[0], &bc); !e.empty()) return e;
  return require_activation(s);
}

template <Kind kKind>
std::string check_backward(const StepView& s) {
  Broadcast bc;
  const TensorRef &a = s.in[0], &b = s.in[1], &y = s.in[2], &dy = s.in[3], &da = s.out[0], &db = s.out[1];
  if (std::string e = require_slots(s, 4, 2); !e.empty()) return e;
  if (std::string e = require(dy, "dy"); !e.empty()) return e;
  if (std::string e = require_activation(s); !e.empty()) return e;
  if (s.params().activation != CLTRAIN_ACT_NONE)
    if (std::string e = require_elements(y, dy.elements, "y (the activation's output)"); !e.empty()) return e;
  const bool both = kKind == Kind::SqDiff || kKind == Kind::Max || kKind == Kind::Min;
  const bool needs_b =
      (kKind == Kind::Mul && da.present()) || ((kKind == Kind::Div || both) && (da.present() || db.present()));
  const bool needs_a =
      ((kKind == Kind::Mul || kKind == Kind::Div) && db.present()) || (both && (da.present() || db.present()));
  if (needs_a && !a.present()) return "a is missing (db needs it)";
  if (needs_b && !b.present()) return std::string("b is missing (") + (da.present() ? "da" : "db") + " needs it)";
  if (!same_shape(a, da)) return "da " + shape_string(da) + " differs from a " + shape_string(a);
  if (!same_shape(b, db)) return "db " + shape_string(db) + " differs from b " + shape_string(b);
  return broadcast(either(a, da), either(b, db), dy, &bc);
}

template <Kind kKind>
float apply(float a, float b) {
  switch (kKind) {
    case Kind::Add: return a + b;
    case Kind::Sub: return a - b;
    case Kind::Mul: return a * b;
    case Kind::SqDiff: {
      const float t = a - b;
      return t * t;
    }
    case Kind::Max:
    case Kind::Min: return takes_a<kKind>(a, b) ? a : b;
    case Kind::Greater: return a > b ? 1.0f : 0.0f;
    case Kind::GreaterEqual: return a >= b ? 1.0f : 0.0f;
    case Kind::Less: return a < b ? 1.0f : 0.0f;
    case Kind::LessEqual: return a <= b ? 1.0f : 0.0f;
    case Kind::Equal: return a == b ? 1.0f : 0.0f;
    case Kind::NotEqual: return a != b ? 1.0f : 0.0f;
    default: return a / b;
  }
}

template <Kind kKind>
std::string run_forward(const StepView& s, const cltrain_run_args&) {
  Broadcast bc;
  broadcast(s.in[0], s.in[1], s.out[0], &bc);
  const float* a = s.in[0].data;
  const float* b = s.in[1].data;
  float* y = s.out[0].data;
  const int32_t act = s.params().activation;
  for_each_element(
      bc, [&](int64_t i, int64_t ia, int64_t ib) { y[i] = apply_activation(act, apply<kKind>(a[ia], b[ib])); });
  return {};
}

template <Kind kKind>
std::string run_backward(const StepView& s, const cltrain_run_args&) {
  Broadcast bc;
  broadcast(either(s.in[0], s.out[0]), either(s.in[1], s.out[1]), s.in[3], &bc);
  const float* a = s.in[0].data;
  const float* b = s.in[1].data;
  const float* y = s.in[2].data;
  const float* dy = s.in[3].data;
  float* da = s.out[0].data;
  float* db = s.out[1].data;
  const int32_t act = s.params().activation;
  if (da) std::fill(da, da + s.out[0].elements, 0.0f);
  if (db) std::fill(db, db + s.out[1].elements, 0.0f);
  for_each_element(bc, [&](int64_t i, int64_t ia, int64_t ib) {
    const float g = act == CLTRAIN_ACT_NONE ? dy[i] : activation_backward(act, y[i], dy[i]);
    switch (kKind) {
      case Kind::Add:
        if (da) da[ia] = da[ia] + g;
        if (db) db[ib] = db[ib] + g;
        break;
      case Kind::Sub:
        if (da) da[ia] = da[ia] + g;
        if (db) db[ib] = db[ib] + -g;
        break;
      case Kind::Mul:
        if (da) da[ia] = da[ia] + g * b[ib];
        if (db) db[ib] = db[ib] + g * a[ia];
        break;
      case Kind::Div:
        if (da) da[ia] = da[ia] + g / b[ib];
        if (db) db[ib] = db[ib] + -((g * a[ia]) / (b[ib] * b[ib]));
        break;
      case Kind::SqDiff: {
        const float u = 2.0f * (a[ia] - b[ib]);
        if (da) da[ia] = da[ia] + g * u;
        if (db) db[ib] = db[ib] + -(g * u);
        break;
      }
      case Kind::Max:
      case Kind::Min: {
        const bool to_a = takes_a<kKind>(a[ia], b[ib]);
        if (da) da[ia] = da[ia] + (to_a ? g : 0.0f);
        if (db) db[ib] = db[ib] + (to_a ? 0.0f : g);
        break;
      }
      default: break;  // the comparisons have no backward step
    }
  });
  return {};
}

template <Kind kKind>
constexpr CpuOp arithmetic() {
  return {{{check_forward, run_forward<kKind>}, {check_backward<kKind>, run_backward<kKind>}, {}}};
}

}  // namespace

extern const CpuOp kCpuOp_ADD = arithmetic<Kind::Add>();
extern const CpuOp kCpuOp_SUB = arithmetic<Kind::Sub>();
extern const CpuOp kCpuOp_MUL = arithmetic<Kind::Mul>();
extern const CpuOp kCpuOp_DIV = arithmetic<Kind::Div>();
extern const CpuOp kCpuOp_SQUARED_DIFFERENCE = arithmetic<Kind::SqDiff>();
extern const CpuOp kCpuOp_MAXIMUM = arithmetic<Kind::Max>();
extern const CpuOp kCpuOp_MINIMUM = arithmetic<Kind::Min>();

// Forward only: a comparison's output is piecewise constant (no gradient flows through it).
template <Kind kKind>
constexpr CpuOp comparison() {
  return {{{check_forward, run_forward<kKind>}, {}, {}}, true};
}

extern const CpuOp kCpuOp_GREATER = comparison<Kind::Greater>();
extern const CpuOp kCpuOp_GREATER_EQUAL = comparison<Kind::GreaterEqual>();
extern const CpuOp kCpuOp_LESS = comparison<Kind::Less>();
extern const CpuOp kCpuOp_LESS_EQUAL = comparison<Kind::LessEqual>();
extern const CpuOp kCpuOp_EQUAL = comparison<Kind::Equal>();
extern const CpuOp kCpuOp_NOT_EQUAL = comparison<Kind::NotEqual>();

}  // namespace cpu
}  // namespace cltrain
