// The host's evaluator of integer shape subgraphs (shape_ops.h). Values are int32, rank at most
// CLTRAIN_MAX_RANK; each operator computes its outputs from its inputs' values (SHAPE: from its
// input's shape, whatever that input is).
#include "passes/shape_ops.h"
#include "passes/passes.h"

// GCC 12 at -O2 warns that copying a vector that may be empty passes memmove a null pointer (with
// a size of 0, which is fine): a false positive of its inliner.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnonnull"
#endif

#include <cstring>
#include <functional>

#include "circle_generated.h"
#include "graph/builtin_names.h"
#include "graph/labels.h"

namespace cltrain {
namespace {

constexpr int32_t kAdd = 0, kConcatenation = 2, kMul = 18, kReshape = 22, kGather = 36, kSqueeze = 43,
                  kStridedSlice = 45, kCast = 53, kSlice = 65, kExpandDims = 70, kShape = 77, kReduceProd = 81,
                  kPack = 83, kFloorDiv = 90, kSub = 41, kFill = 94;

struct Value {
  std::vector<int32_t> shape;
  std::vector<int32_t> v;
  int64_t size() const {
    int64_t n = 1;
    for (int32_t d : shape) n *= d;
    return n;
  }
};

[[noreturn]] void refuse(const std::string& what, const ShapeOperator& op, const std::string& why) {
  graph::fail(what, "operator " + std::to_string(op.file_index) + " (" + describe_builtin(op.code) + "): " + why);
}

std::vector<int64_t> strides_of(const std::vector<int32_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// Calls f(flat index in the input) for every element of a slice: per dimension begin, step and
// count, in the output's row-major order.
void for_slice(const std::vector<int32_t>& shape, const std::vector<int64_t>& begin, const std::vector<int64_t>& step,
               const std::vector<int64_t>& count, const std::function<void(int64_t)>& f) {
  const std::vector<int64_t> stride = strides_of(shape);
  const size_t rank = shape.size();
  int64_t total = 1;
  for (int64_t c : count) total *= c;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d) flat += (begin[d] + idx[d] * step[d]) * stride[d];
    f(flat);
    for (size_t d = rank; d-- > 0;)
      if (++idx[d] < count[d])
        break;
      else
        idx[d] = 0;
  }
}

Value strided_slice(const ShapeOperator& op, const Value& in, const Value& b, const Value& e, const Value& s,
                    const std::string& what) {
  const size_t rank = in.shape.size();
  const int32_t begin_mask = op.options[0], end_mask = op.options[1], ellipsis = op.options[2],
                new_axis = op.options[3], shrink = op.options[4], offset = op.options[5];
  if (ellipsis || new_axis) refuse(what, op, "ellipsis and new-axis masks are not supported");
  if (b.v.size() != rank || e.v.size() != rank || s.v.size() != rank)
    refuse(what, op, "begin, end and strides must have one value per input dimension");
  std::vector<int64_t> begin(rank), step(rank), count(rank);
  Value out;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t dim = in.shape[d], st = s.v[d];
    if (st == 0) refuse(what, op, "a stride is 0");
    int64_t lo = b.v[d], hi = offset ? b.v[d] + e.v[d] : e.v[d];
    if (lo < 0) lo += dim;
    if (hi < 0 && !offset) hi += dim;
    const bool shrinks = (shrink >> d) & 1;
    if (shrinks) {
      if (lo < 0 || lo >= dim) refuse(what, op, "index " + std::to_string(b.v[d]) + " is outside the dimension");
      begin[d] = lo, step[d] = 1, count[d] = 1;
      continue;
    }
    if (st > 0) {
      lo = ((begin_mask >> d) & 1) ? 0 : std::min<int64_t>(std::max<int64_t>(lo, 0), dim);
      hi = ((end_mask >> d) & 1) ? dim : std::min<int64_t>(std::max<int64_t>(hi, 0), dim);
      count[d] = hi > lo ? (hi - lo + st - 1) / st : 0;
    } else {
      lo = ((begin_mask >> d) & 1) ? dim - 1 : std::min<int64_t>(std::max<int64_t>(lo, -1), dim - 1);
      hi = ((end_mask >> d) & 1) ? -1 : std::min<int64_t>(std::max<int64_t>(hi, -1), dim - 1);
      count[d] = lo > hi ? (lo - hi - st - 1) / -st : 0;
    }
    begin[d] = lo, step[d] = st;
    out.shape.push_back(static_cast<int32_t>(count[d]));
  }
  for_slice(in.shape, begin, step, count, [&](int64_t i) { out.v.push_back(in.v[static_cast<size_t>(i)]); });
  return out;
}

// Element-wise int32 arithmetic where one side is a single value or both have the same shape.
Value arithmetic(const ShapeOperator& op, const Value& a, const Value& b, const std::string& what) {
  if (a.v.size() != b.v.size() && a.v.size() != 1 && b.v.size() != 1)
    refuse(what, op, "only same-shape or single-value operands are supported");
  Value out = a.v.size() >= b.v.size() ? a : b;
  for (size_t i = 0; i < out.v.size(); ++i) {
    const int64_t x = a.v[a.v.size() == 1 ? 0 : i], y = b.v[b.v.size() == 1 ? 0 : i];
    int64_t r = 0;
    switch (op.code) {
      case kAdd: r = x + y; break;
      case kSub: r = x - y; break;
      case kMul: r = x * y; break;
      default:
        if (y == 0) refuse(what, op, "division by zero");
        r = x / y - ((x % y != 0) && ((x < 0) != (y < 0)));  // floor
    }
    out.v[i] = static_cast<int32_t>(r);
  }
  return out;
}

int32_t axis_of(const ShapeOperator& op, int32_t axis, size_t rank, const std::string& what) {
  const int32_t r = static_cast<int32_t>(rank);
  if (axis < -r || axis >= r)
    refuse(what, op, "axis " + std::to_string(axis) + " is outside rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

// Stacks (PACK: new axis) or joins (CONCATENATION: existing axis) values along axis.
Value join(const ShapeOperator& op, const std::vector<Value>& parts, int32_t axis, bool stack,
           const std::string& what) {
  Value out;
  const std::vector<int32_t>& first = parts.at(0).shape;
  const size_t rank = first.size() + (stack ? 1 : 0);
  const size_t a = static_cast<size_t>(axis_of(op, axis, rank, what));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < a; ++d) outer *= first[d];
  for (size_t d = stack ? a : a + 1; d < first.size(); ++d) inner *= first[d];
  int32_t joined = 0;
  for (const Value& p : parts) {
    if (p.shape.size() != first.size()) refuse(what, op, "the operands differ in rank");
    for (size_t d = 0; d < first.size(); ++d)
      if ((stack || d != a) && p.shape[d] != first[d]) refuse(what, op, "the operands differ in shape");
    joined += stack ? 1 : p.shape[a];
  }
  out.shape.assign(first.begin(), first.end());
  if (stack)
    out.shape.insert(out.shape.begin() + static_cast<long>(a), joined);
  else
    out.shape[a] = joined;
  for (int64_t o = 0; o < outer; ++o)
    for (const Value& p : parts) {
      const int64_t n = stack ? inner : p.shape[a] * inner;
      for (int64_t i = 0; i < n; ++i) out.v.push_back(p.v[static_cast<size_t>(o * n + i)]);
    }
  return out;
}

Value evaluate(const ShapeOperator& op, const std::vector<Value>& in, const Model& m, const std::string& what) {
  auto need = [&](size_t n) {
    if (in.size() < n) refuse(what, op, "needs " + std::to_string(n) + " inputs");
  };
  switch (op.code) {
    case kShape: {
      need(1);
      const Tensor& x = m.tensors[static_cast<size_t>(op.inputs[0])];
      Value out;
      out.shape = {static_cast<int32_t>(x.shape.size())};
      out.v.assign(x.shape.begin(), x.shape.end());
      return out;
    }
    case kStridedSlice: need(4); return strided_slice(op, in[0], in[1], in[2], in[3], what);
    case kSlice: {
      need(3);
      const size_t rank = in[0].shape.size();
      if (in[1].v.size() != rank || in[2].v.size() != rank)
        refuse(what, op, "begin and size need one value per dimension");
      std::vector<int64_t> begin(rank), step(rank, 1), count(rank);
      Value out;
      for (size_t d = 0; d < rank; ++d) {
        begin[d] = in[1].v[d];
        count[d] = in[2].v[d] < 0 ? in[0].shape[d] - begin[d] : in[2].v[d];
        if (begin[d] < 0 || count[d] < 0 || begin[d] + count[d] > in[0].shape[d])
          refuse(what, op, "slice out of range");
        out.shape.push_back(static_cast<int32_t>(count[d]));
      }
      for_slice(in[0].shape, begin, step, count, [&](int64_t i) { out.v.push_back(in[0].v[static_cast<size_t>(i)]); });
      return out;
    }
    case kPack: need(1); return join(op, in, op.options[0], true, what);
    case kConcatenation: need(1); return join(op, in, op.options[0], false, what);
    case kGather: {
      need(2);
      if (op.options[1] != 0) refuse(what, op, "batch_dims other than 0 is not supported");
      const Value& p = in[0];
      const size_t a = static_cast<size_t>(axis_of(op, op.options[0], p.shape.size(), what));
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < a; ++d) outer *= p.shape[d];
      for (size_t d = a + 1; d < p.shape.size(); ++d) inner *= p.shape[d];
      Value out;
      out.shape.assign(p.shape.begin(), p.shape.begin() + static_cast<long>(a));
      out.shape.insert(out.shape.end(), in[1].shape.begin(), in[1].shape.end());
      out.shape.insert(out.shape.end(), p.shape.begin() + static_cast<long>(a) + 1, p.shape.end());
      for (int64_t o = 0; o < outer; ++o)
        for (int32_t idx : in[1].v) {
          if (idx < 0 || idx >= p.shape[a]) refuse(what, op, "index " + std::to_string(idx) + " is out of range");
          for (int64_t i = 0; i < inner; ++i)
            out.v.push_back(p.v[static_cast<size_t>((o * p.shape[a] + idx) * inner + i)]);
        }
      return out;
    }
    case kReduceProd: {
      need(2);
      const Value& x = in[0];
      std::vector<bool> reduce(x.shape.size(), false);
      for (int32_t axis : in[1].v) reduce[static_cast<size_t>(axis_of(op, axis, x.shape.size(), what))] = true;
      Value out;
      for (size_t d = 0; d < x.shape.size(); ++d)
        if (!reduce[d])
          out.shape.push_back(x.shape[d]);
        else if (op.options[0])
          out.shape.push_back(1);
      std::vector<int64_t> acc(static_cast<size_t>(out.size()), 1);
      const std::vector<int64_t> stride = strides_of(x.shape);
      for (int64_t i = 0; i < x.size(); ++i) {
        int64_t o = 0;
        for (size_t d = 0; d < x.shape.size(); ++d)
          if (!reduce[d]) o = o * x.shape[d] + (i / stride[d]) % x.shape[d];
        acc[static_cast<size_t>(o)] *= x.v[static_cast<size_t>(i)];
      }
      for (int64_t a : acc) out.v.push_back(static_cast<int32_t>(a));
      return out;
    }
    case kCast: need(1); return in[0];
    case kReshape: {
      need(1);
      Value out = in[0];
      if (in.size() < 2) refuse(what, op, "needs its shape operand");
      out.shape.assign(in[1].v.begin(), in[1].v.end());
      int64_t known = 1;
      int infer = -1;
      for (size_t d = 0; d < out.shape.size(); ++d)
        if (out.shape[d] == -1)
          infer = static_cast<int>(d);
        else
          known *= out.shape[d];
      if (infer >= 0 && known > 0) out.shape[static_cast<size_t>(infer)] = static_cast<int32_t>(in[0].size() / known);
      if (out.size() != in[0].size()) refuse(what, op, "the new shape holds another number of values");
      return out;
    }
    case kSqueeze: {
      need(1);
      Value out = in[0];
      out.shape.clear();
      for (size_t d = 0; d < in[0].shape.size(); ++d) {
        bool drop = false;
        for (int32_t sd : op.options)
          drop = drop || axis_of(op, sd, in[0].shape.size(), what) == static_cast<int32_t>(d);
        if (op.options.empty()) drop = in[0].shape[d] == 1;
        if (!drop) out.shape.push_back(in[0].shape[d]);
      }
      return out;
    }
    case kExpandDims: {
      need(2);
      Value out = in[0];
      const int32_t a = axis_of(op, in[1].v.at(0), in[0].shape.size() + 1, what);
      out.shape.insert(out.shape.begin() + a, 1);
      return out;
    }
    case kFill: {
      need(2);
      Value out;
      out.shape.assign(in[0].v.begin(), in[0].v.end());
      out.v.assign(static_cast<size_t>(out.size()), in[1].v.at(0));
      return out;
    }
    case kAdd:
    case kSub:
    case kMul:
    case kFloorDiv: need(2); return arithmetic(op, in[0], in[1], what);
    default: refuse(what, op, "is not a shape operator cltrain evaluates");
  }
}

}  // namespace

bool is_shape_op_code(int32_t code) {
  switch (code) {
    case kShape:
    case kStridedSlice:
    case kSlice:
    case kPack:
    case kConcatenation:
    case kGather:
    case kReduceProd:
    case kCast:
    case kReshape:
    case kSqueeze:
    case kExpandDims:
    case kFill:
    case kAdd:
    case kSub:
    case kMul:
    case kFloorDiv: return true;
    default: return false;
  }
}

std::vector<int32_t> read_shape_op_options(int32_t code, const fb::Operator& op) {
  switch (code) {
    case kStridedSlice:
      if (const auto* o = op.builtin_options_as_StridedSliceOptions())
        return {o->begin_mask(),    o->end_mask(),         o->ellipsis_mask(),
                o->new_axis_mask(), o->shrink_axis_mask(), o->offset() ? 1 : 0};
      return {0, 0, 0, 0, 0, 0};
    case kPack:
      if (const auto* o = op.builtin_options_as_PackOptions()) return {o->axis()};
      return {0};
    case kGather:
      if (const auto* o = op.builtin_options_as_GatherOptions()) return {o->axis(), o->batch_dims()};
      return {0, 0};
    case kConcatenation:
      if (const auto* o = op.builtin_options_as_ConcatenationOptions()) return {o->axis()};
      return {0};
    case kReduceProd:
      if (const auto* o = op.builtin_options_as_ReducerOptions()) return {o->keep_dims() ? 1 : 0};
      return {0};
    case kSqueeze:
      if (const auto* o = op.builtin_options_as_SqueezeOptions())
        if (o->squeeze_dims()) return std::vector<int32_t>(o->squeeze_dims()->begin(), o->squeeze_dims()->end());
      return {};
    default: return {};
  }
}

void fold_shape_op(Model& m, const ShapeOperator& op, const std::string& what) {
  {
    std::vector<Value> in;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const int32_t t = op.inputs[k];
      // No shape op has an optional input: a missing one would shift the others' places.
      if (t < 0) refuse(what, op, "input " + std::to_string(k) + " is missing (-1)");
      const Tensor& x = m.tensors[static_cast<size_t>(t)];
      Value v;
      v.shape.assign(x.shape.begin(), x.shape.end());
      if (op.code != kShape || k > 0) {
        if (x.dtype != CLTRAIN_INT32 || !x.is_constant())
          refuse(what, op,
                 "input " + std::to_string(k) + " " + graph::tensor_label(m, t) + " is not a known int32 value");
        v.v.resize(x.data.size() / 4);
        if (!v.v.empty()) std::memcpy(v.v.data(), x.data.data(), v.v.size() * 4);
      }
      in.push_back(std::move(v));
    }
    Value out = evaluate(op, in, m, what);
    if (static_cast<int64_t>(out.v.size()) != out.size()) refuse(what, op, "computed a value of the wrong size");
    if (op.outputs.size() != 1) refuse(what, op, "must have one output");
    Tensor& t = m.tensors[static_cast<size_t>(op.outputs[0])];
    t.shape.assign(out.shape.begin(), out.shape.end());
    // A rank-0 or empty result still counts as computed: keep at least one element's bytes.
    t.data.resize(std::max<size_t>(out.v.size(), 1) * 4, 0);
    if (!out.v.empty()) std::memcpy(t.data.data(), out.v.data(), out.v.size() * 4);
  }
}

void fold_shape_ops(Model& m, const std::string& what) {
  for (const ShapeOperator& op : m.shape_ops) fold_shape_op(m, op, what);
}

// Pass shape-operators (import): the integer operators over shapes whose inputs the host knows
// (constants, and what earlier shape operators compute) leave the graph for Model::shape_ops.
std::string shape_operators_pass(PassInput& in) {
  Model& m = *in.m;
  const size_t nt = m.tensors.size();
  // int32 tensors whose values the host knows at load: constants, and what shape operators compute.
  std::vector<bool> known_int(nt, false);
  for (size_t t = 0; t < nt; ++t) known_int[t] = m.tensors[t].dtype == CLTRAIN_INT32 && m.tensors[t].is_constant();
  size_t taken = 0;
  for (FileOperator& fo : *in.file) {
    if (fo.fate != FileOperator::Fate::kPending || !is_shape_op_code(fo.code)) continue;
    ShapeOperator so;
    so.code = fo.code;
    so.inputs = fo.inputs;
    so.outputs = fo.outputs;
    bool ints = !so.outputs.empty();
    for (int32_t t : so.outputs) ints = ints && t >= 0 && m.tensors[static_cast<size_t>(t)].dtype == CLTRAIN_INT32;
    for (size_t k = fo.code == kShape ? 1 : 0; k < so.inputs.size(); ++k)
      ints = ints && (so.inputs[k] < 0 || known_int[static_cast<size_t>(so.inputs[k])]);
    if (!ints) continue;
    so.options = read_shape_op_options(fo.code, *fo.op);
    so.file_index = fo.index;
    for (int32_t t : so.outputs) known_int[static_cast<size_t>(t)] = true;
    m.shape_ops.push_back(std::move(so));
    fo.fate = FileOperator::Fate::kHost;
    ++taken;
  }
  return taken ? "computes " + std::to_string(taken) + " shape operator" + (taken == 1 ? "" : "s") +
                     " on the host (int32 constants for the operators that read them)"
               : "";
}

}  // namespace cltrain
