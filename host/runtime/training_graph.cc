#include "training_graph.h"

#include <algorithm>
#include <map>
#include <set>

#include "graph/activations.h"
#include "memory_plan.h"
#include "ops/op_descriptor.h"
#include "passes/passes.h"
#include "window_geometry.h"

namespace cltrain {
namespace {

// "FullyConnected and Conv2D": the ops onert-micro's half-weight ranks apply to.
std::string half_weight_op_names() {
  std::vector<std::string> names;
  for (const OpDescriptor* d : all_ops())
    if (d->half_weight_ranks) names.push_back(d->name);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s;
}

class GraphBuilder {
 public:
  // order: the model's operators in the order their forward steps run (a topological order);
  // the backward steps run in the reverse order.
  GraphBuilder(const Model& model, const TrainOptions& options, std::vector<size_t> order)
      : model_(model), opt_(options), order_(std::move(order)), ops_(model.operators) {}

  TrainingGraph build();

 private:
  int32_t add_tensor(const std::string& name, const std::vector<int32_t>& shape, int32_t role, bool persistent) {
    cltrain_tensor_desc d{};
    g_.names.push_back(name);
    d.name = g_.names.back().c_str();
    d.rank = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) d.dims[i] = shape[i];
    d.dtype = CLTRAIN_FLOAT32;
    d.role = role;
    d.first_step = d.last_step = -1;
    d.persistent = persistent ? 1 : 0;
    g_.tensors.push_back(d);
    return static_cast<int32_t>(g_.tensors.size() - 1);
  }
  std::vector<int32_t> shape_of(int32_t t) const {
    const auto& d = g_.tensors[static_cast<size_t>(t)];
    return std::vector<int32_t>(d.dims, d.dims + d.rank);
  }
  int32_t add_step(int32_t op, int32_t phase, int32_t model_op, std::vector<int32_t> in, std::vector<int32_t> out,
                   const cltrain_op_params& params, int32_t owner) {
    cltrain_step_desc s{};
    s.op = op;
    s.phase = phase;
    s.model_op = model_op;
    s.num_inputs = static_cast<int32_t>(in.size());
    for (size_t i = 0; i < in.size(); ++i) s.inputs[i] = in[i];
    s.num_outputs = static_cast<int32_t>(out.size());
    for (size_t i = 0; i < out.size(); ++i) s.outputs[i] = out[i];
    s.params = params;
    g_.steps.push_back(s);
    g_.owner_step.push_back(owner);
    return static_cast<int32_t>(g_.steps.size() - 1);
  }

  // The tensor a backward step writes the gradient of t into: the gradient tensor itself the
  // first time, a disposable tensor (accumulated right after the step) after that.
  int32_t grad_target(int32_t t, std::vector<std::pair<int32_t, int32_t>>* accumulate) {
    auto it = grad_.find(t);
    const bool weight = is_weight(t);
    if (it == grad_.end()) {
      const int32_t g = add_tensor(std::string(weight ? "grad/" : "backprop/") + g_.name_of(t), shape_of(t),
                                   weight ? CLTRAIN_ROLE_GRADIENT : CLTRAIN_ROLE_BACK_PROP, false);
      grad_[t] = g;
      return g;
    }
    const int32_t d =
        add_tensor(std::string("disposable/") + g_.name_of(t), shape_of(t), CLTRAIN_ROLE_DISPOSABLE, false);
    accumulate->emplace_back(d, it->second);
    return d;
  }

  // A weight that is trained (frozen weights get no gradient and no optimizer state).
  bool is_weight(int32_t t) const { return t >= 0 && trainable_[static_cast<size_t>(t)]; }
  void select_trainable();
  bool needs_grad(int32_t t) const { return t >= 0 && needs_grad_[static_cast<size_t>(t)]; }

  void fuse_pads();
  void find_consumers();
  int32_t producer_activation(int32_t x, size_t consumer) const;
  void forward_step(size_t i);
  void backward_step(size_t i);
  friend class OperatorStep;
  void update_steps_after(int32_t step, const std::vector<int32_t>& weights_done);
  void check_then_update();
  // An update step, made once its gradient is complete and added after the backward steps.
  struct PendingUpdate {
    int32_t op, model_op;
    std::vector<int32_t> in, out;
    cltrain_op_params params;
    int32_t owner;
  };
  std::vector<PendingUpdate> pending_;

  const Model& model_;
  const TrainOptions& opt_;
  std::vector<size_t> order_;
  std::vector<size_t> position_;  // per operator: its place in order_
  // The model's operators as trained: a Pad that only feeds a VALID convolution whose SAME
  // padding is the same pad is folded into it (fused_[pad] set, the convolution reads the Pad's
  // input with SAME padding): the padded tensor is never stored.
  std::vector<Operator> ops_;
  std::vector<bool> fused_;
  std::vector<std::vector<size_t>> consumers_;  // per model tensor, the operators reading it
  std::vector<int32_t> producer_;               // per model tensor, its operator or -1
  std::map<size_t, int32_t> kept_;              // operator -> the tensor its forward keeps for its backward
  std::set<int32_t> act_applied_;               // outputs whose activation derivative a consumer applied
  TrainingGraph g_;
  std::vector<bool> needs_grad_;
  std::vector<bool> trainable_;
  std::map<int32_t, std::pair<int32_t, int32_t>> update_range_;  // weight -> (offset, count) updated
  std::map<int32_t, int32_t> grad_;                              // tensor -> its back-prop / gradient tensor
  std::map<int32_t, int32_t> squares_;    // weight -> the sum of its squared per-id gradient rows (Adam's v)
  std::map<int32_t, int32_t> remaining_;  // weight -> backward steps still to contribute
};

void GraphBuilder::find_consumers() {
  consumers_.assign(g_.tensors.size(), {});
  producer_.assign(g_.tensors.size(), -1);
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (fused_[i]) continue;
    for (int32_t t : ops_[i].inputs)
      if (t >= 0) consumers_[static_cast<size_t>(t)].push_back(i);
    for (int32_t t : ops_[i].outputs)
      if (t >= 0) producer_[static_cast<size_t>(t)] = static_cast<int32_t>(i);
  }
}

void GraphBuilder::fuse_pads() {
  fused_.assign(ops_.size(), false);
  TrainingOps t{model_, ops_, fused_, g_.folded_into, g_.prediction, &order_, {}};
  t.add_tensor = [this](const std::string& name, const std::vector<int32_t>& shape) {
    return add_tensor(name, shape, CLTRAIN_ROLE_NON_CONST, false);
  };
  PassInput in{nullptr, model_.source};
  in.training = &t;
  in.skip = &opt_.skip_training_passes;
  g_.rewrites = run_passes(PassStage::kTraining, in);
  // A tensor a pass added is computed: it needs a gradient where its operator's inputs do.
  needs_grad_.resize(g_.tensors.size(), false);
  trainable_.resize(g_.tensors.size(), false);
  for (size_t i : order_) {
    if (fused_[i]) continue;
    bool any = false;
    for (int32_t x : ops_[i].inputs) any = any || needs_grad(x);
    any = any && !find_op(ops_[i].op)->piecewise_constant;
    for (int32_t y : ops_[i].outputs)
      if (y >= static_cast<int32_t>(model_.tensors.size())) needs_grad_[static_cast<size_t>(y)] = any;
  }
  find_consumers();
}

// The fused activation of x's producer when the operator `consumer` may apply its derivative
// (as dx_activation): x is computed (not a weight or model input), read by that operator only
// and not the model's output, and its producer fuses an activation whose derivative comes from
// its output. NONE otherwise.
int32_t GraphBuilder::producer_activation(int32_t x, size_t consumer) const {
  if (x < 0 || !needs_grad(x) || x == g_.prediction) return CLTRAIN_ACT_NONE;
  const int32_t p = producer_[static_cast<size_t>(x)];
  if (p < 0 || consumers_[static_cast<size_t>(x)].size() != 1 || consumers_[static_cast<size_t>(x)][0] != consumer)
    return CLTRAIN_ACT_NONE;
  const Operator& prod = ops_[static_cast<size_t>(p)];
  if (prod.outputs.size() != 1 || find_op(prod.op)->fused_activation != FusedActivation::kAny) return CLTRAIN_ACT_NONE;
  const int32_t act = prod.params.activation;
  const Activation* a = find_activation(act);
  return a && a->derivative_from_y ? act : CLTRAIN_ACT_NONE;
}

// One operator's step as its descriptor makes it (op_descriptor.h's StepBuilder).
class OperatorStep : public StepBuilder {
 public:
  OperatorStep(GraphBuilder& g, size_t index, const cltrain_op_params& params)
      : StepBuilder(g.ops_[index], params), g_(g), index_(index) {}

  int32_t dy() const override { return g_.grad_.at(y()); }
  bool needs_grad(int32_t t) const override { return g_.needs_grad(t); }
  int32_t grad_of(int32_t t) override {
    if (!g_.needs_grad(t) || t == aliased || t == aliased_b) return -1;
    if (std::find(accumulated.begin(), accumulated.end(), t) != accumulated.end()) return -1;
    if (g_.is_weight(t)) weights_done.push_back(t);
    return g_.grad_target(t, &accumulate);
  }
  int32_t grad_so_far(int32_t t) const override {
    const auto it = g_.grad_.find(t);
    return it == g_.grad_.end() || !g_.needs_grad(t) ? -1 : it->second;
  }
  int32_t squares_of(int32_t t) override {
    if (g_.opt_.optimizer != CLTRAIN_OP_UPDATE_ADAM || !g_.is_weight(t) ||
        g_.consumers_[static_cast<size_t>(t)].size() != 1 || g_.update_range_.count(t))
      return -1;
    const int32_t q =
        g_.add_tensor(std::string("gradsq/") + g_.g_.name_of(t), g_.shape_of(t), CLTRAIN_ROLE_GRADIENT, false);
    g_.squares_[t] = q;
    return q;
  }
  int32_t producer_activation(int32_t x) override {
    const int32_t act = g_.producer_activation(x, index_);
    if (act != CLTRAIN_ACT_NONE) g_.act_applied_.insert(x);
    return act;
  }
  uint64_t elements(int32_t t) const override { return tensor_elements(g_.g_.tensors[static_cast<size_t>(t)]); }
  int32_t add_tensor(const std::string& name, int32_t like, int32_t dtype, int32_t role) override {
    const int32_t t = g_.add_tensor(name, g_.shape_of(like), role, false);
    g_.g_.tensors[static_cast<size_t>(t)].dtype = dtype;
    return t;
  }
  const char* name_of(int32_t t) const override { return g_.g_.name_of(t); }
  void keep(int32_t t) override { g_.kept_[index_] = t; }
  int32_t kept() const override {
    const auto it = g_.kept_.find(index_);
    return it == g_.kept_.end() ? -1 : it->second;
  }

  std::vector<std::pair<int32_t, int32_t>> accumulate;  // (disposable, target) after the step
  std::vector<int32_t> weights_done;                    // weights whose gradient the step writes
  int32_t aliased = -1, aliased_b = -1;                 // operands whose gradient is dy's tensor
  std::vector<int32_t> accumulated;                     // weights an ACCUMULATE_FC_GRADS step adds into

 private:
  GraphBuilder& g_;
  size_t index_;
};

// The step reads the operator's inputs less its constant operand (the graph check made that into
// params), absent optional ones as -1, and writes its outputs and whatever its descriptor adds.
void GraphBuilder::forward_step(size_t i) {
  if (fused_[i]) return;
  const OpDescriptor& d = *find_op(ops_[i].op);
  OperatorStep s(*this, i, ops_[i].params);
  for (int k = 0; k < d.max_inputs; ++k) {
    if (k == d.constant.slot) continue;
    if (static_cast<size_t>(k) < s.op.inputs.size())
      s.in.push_back(s.op.inputs[static_cast<size_t>(k)]);
    else if (d.optional_from < d.max_inputs)
      s.in.push_back(-1);
  }
  s.out = {s.op.outputs[0]};
  if (d.forward) d.forward(s);
  add_step(s.op.op, CLTRAIN_PHASE_FORWARD, static_cast<int32_t>(i), s.in, s.out, s.params, -1);
}

void GraphBuilder::backward_step(size_t i) {
  const Operator& op = ops_[i];
  const OpDescriptor& d = *find_op(op.op);
  if (!d.backward)
    throw ModelError(std::string("operator ") + std::to_string(i) + " (" + d.name + ") has no backward step");
  const int32_t fwd = static_cast<int32_t>(i);
  // A SLICE whose x already has a gradient (a SPLIT's or UNPACK's later parts) adds dy into its
  // box: one step, where its backward into a whole disposable and an ACCUMULATE were two.
  if (op.op == CLTRAIN_OP_SLICE && needs_grad(op.inputs[0]) && grad_.count(op.inputs[0])) {
    const int32_t x = op.inputs[0];
    cltrain_op_params p{};
    std::copy(op.params.pad_before, op.params.pad_before + CLTRAIN_MAX_RANK, p.pad_before);
    std::copy(op.params.pad_after, op.params.pad_after + CLTRAIN_MAX_RANK, p.pad_after);
    const int32_t step = add_step(CLTRAIN_OP_ACCUMULATE_BOX, CLTRAIN_PHASE_BACKWARD, fwd, {grad_.at(op.outputs[0])},
                                  {grad_.at(x)}, p, -1);
    update_steps_after(step, is_weight(x) ? std::vector<int32_t>{x} : std::vector<int32_t>{});
    return;
  }
  OperatorStep s(*this, i, op.params);
  // ADD's (and SUB's) da is dy where no activation is fused and a has y's shape: a computed
  // operand that has no gradient yet takes dy's tensor as its gradient (no step writes it; later
  // contributions accumulate into it, dy being read by no later step).
  if ((op.op == CLTRAIN_OP_ADD || op.op == CLTRAIN_OP_SUB) && op.params.activation == CLTRAIN_ACT_NONE) {
    const int32_t a = op.inputs[0], y = op.outputs[0];
    if (needs_grad(a) && !is_weight(a) && !grad_.count(a) && a != op.inputs[1] && shape_of(a) == shape_of(y)) {
      grad_[a] = grad_.at(y);
      s.aliased = a;
      // ADD's db is dy as well where a and b are read by this ADD alone (no later contribution
      // reaches either gradient) and the operand whose backward runs first only reads it: a SLICE
      // whose x has a gradient, which adds dy into its box (ACCUMULATE_BOX reads a, where a backward
      // may overwrite its dy). Then both are dy's tensor and the step writes nothing (the sum of a
      // recurrent step's projection slice and its state's projection).
      const int32_t b = op.inputs[1];
      if (op.op == CLTRAIN_OP_ADD && needs_grad(b) && !is_weight(b) && !grad_.count(b) && shape_of(b) == shape_of(y) &&
          consumers_[static_cast<size_t>(a)].size() == 1 && consumers_[static_cast<size_t>(b)].size() == 1 &&
          producer_[static_cast<size_t>(a)] >= 0 && producer_[static_cast<size_t>(b)] >= 0) {
        const size_t pa = static_cast<size_t>(producer_[static_cast<size_t>(a)]);
        const size_t pb = static_cast<size_t>(producer_[static_cast<size_t>(b)]);
        const Operator& first = ops_[position_[pa] > position_[pb] ? pa : pb];  // its backward runs first
        if (first.op == CLTRAIN_OP_SLICE && needs_grad(first.inputs[0]) && grad_.count(first.inputs[0])) {
          grad_[b] = grad_.at(y);
          s.aliased_b = b;
        }
      }
    }
  }
  // A consumer that applied this op's activation derivative leaves it none to apply.
  if (act_applied_.count(op.outputs[0])) s.params.activation = CLTRAIN_ACT_NONE;
  // A FullyConnected without activation whose weight (or bias) already has a gradient (a
  // recurrent step's shared W, U, b) adds its dW and db into it in an ACCUMULATE_FC_GRADS step
  // before its backward, which then computes dx alone (and stays dy's last reader, as backends may
  // overwrite dy): no disposable, no ACCUMULATE.
  int32_t acc_w = -1, acc_b = -1;
  if (op.op == CLTRAIN_OP_FULLY_CONNECTED && s.params.activation == CLTRAIN_ACT_NONE) {
    const auto has_grad = [&](int32_t t) { return is_weight(t) && grad_.count(t) ? grad_.at(t) : -1; };
    acc_w = has_grad(op.inputs[1]);
    acc_b = op.inputs.size() > 2 ? has_grad(op.inputs[2]) : -1;
    if (acc_w >= 0) s.accumulated.push_back(op.inputs[1]);
    if (acc_b >= 0) s.accumulated.push_back(op.inputs[2]);
    if (!s.accumulated.empty()) {
      const int32_t acc = add_step(CLTRAIN_OP_ACCUMULATE_FC_GRADS, CLTRAIN_PHASE_BACKWARD, fwd,
                                   {acc_w >= 0 ? op.inputs[0] : -1, grad_.at(op.outputs[0])}, {acc_w, acc_b}, {}, -1);
      update_steps_after(acc, s.accumulated);
    }
  }
  d.backward(s);
  // Nothing to write: ADD's operands both take dy's tensor, or a FullyConnected's weights are all
  // accumulated and its x needs no gradient.
  if ((s.aliased_b >= 0 || !s.accumulated.empty()) &&
      std::none_of(s.out.begin(), s.out.end(), [](int32_t t) { return t >= 0; }))
    return;
  const int32_t step = add_step(op.op, CLTRAIN_PHASE_BACKWARD, fwd, s.in, s.out, s.params, -1);
  for (const auto& [disposable, target] : s.accumulate)
    add_step(CLTRAIN_OP_ACCUMULATE, CLTRAIN_PHASE_BACKWARD, fwd, {disposable}, {target}, {}, step);
  update_steps_after(step, s.weights_done);
}

// A weight's update is made once the last backward step that contributes to its gradient is
// made; the updates run after every backward step, behind the check of the loss and the gradients
// (check_then_update), so that a step whose loss or gradients are not finite changes nothing.
void GraphBuilder::update_steps_after(int32_t step, const std::vector<int32_t>& weights_done) {
  for (int32_t w : weights_done) {
    if (--remaining_[w] > 0) continue;
    cltrain_op_params p{};
    p.learning_rate = opt_.learning_rate;
    p.beta1 = opt_.beta1;
    p.beta2 = opt_.beta2;
    p.epsilon = opt_.epsilon;
    std::vector<int32_t> state_shape = shape_of(w);
    if (const auto r = update_range_.find(w); r != update_range_.end()) {
      p.update_offset = r->second.first;
      p.update_count = r->second.second;
      state_shape = {r->second.second};
    }
    const std::string name = g_.name_of(w);
    const int32_t model_op = g_.steps[static_cast<size_t>(step)].model_op;
    if (opt_.optimizer == CLTRAIN_OP_UPDATE_ADAM) {
      const int32_t m = add_tensor("adam_m/" + name, state_shape, CLTRAIN_ROLE_OPTIMIZER, true);
      const int32_t v = add_tensor("adam_v/" + name, state_shape, CLTRAIN_ROLE_OPTIMIZER, true);
      g_.adam_state[w] = {m, v};
      const auto q = squares_.find(w);
      std::vector<int32_t> in = {grad_.at(w)};
      if (q != squares_.end()) in.push_back(q->second);
      pending_.push_back({q != squares_.end() ? CLTRAIN_OP_UPDATE_ADAM_SQUARES : CLTRAIN_OP_UPDATE_ADAM,
                          model_op,
                          in,
                          {w, m, v},
                          p,
                          step});
    } else {
      pending_.push_back({CLTRAIN_OP_UPDATE_SGD, model_op, {grad_.at(w)}, {w}, p, step});
    }
  }
}

// After the backward steps: the flag set to 0 (FILL), CHECK_FINITE steps over the loss and every
// tensor an update reads (up to 8 a step, each where the backward step that made its first
// gradient runs), then the updates. The host reads the flag before the first update (plan.h's
// gate) and runs the updates only when it is 0.
void GraphBuilder::check_then_update() {
  if (pending_.empty()) return;
  g_.finite_flag = add_tensor("finite_flag", {1}, CLTRAIN_ROLE_NON_CONST, false);
  add_step(CLTRAIN_OP_FILL, CLTRAIN_PHASE_FORWARD, -1, {}, {g_.finite_flag}, {}, -1);
  std::vector<int32_t> group = {g_.loss};
  int32_t owner = g_.loss_step;
  auto flush = [&] {
    if (!group.empty())
      add_step(CLTRAIN_OP_CHECK_FINITE, CLTRAIN_PHASE_BACKWARD, -1, group, {g_.finite_flag}, {}, owner);
    group.clear();
  };
  for (const PendingUpdate& u : pending_)
    for (int32_t t : u.in) {
      if (group.size() == CLTRAIN_MAX_STEP_IO) flush();
      if (group.empty()) owner = u.owner;
      group.push_back(t);
    }
  flush();
  for (const PendingUpdate& u : pending_)
    add_step(u.op, CLTRAIN_PHASE_UPDATE, u.model_op, u.in, u.out, u.params, u.owner);
}

// Float constants of the trained operators are trained: all of them, or those of the last
// num_trainable_ops operators, or per operator as op_ranks says.
void GraphBuilder::select_trainable() {
  trainable_.assign(model_.tensors.size(), false);
  const int32_t n = static_cast<int32_t>(model_.operators.size());
  std::vector<int32_t> ranks = opt_.op_ranks;
  if (ranks.empty()) {
    ranks.assign(static_cast<size_t>(n), kRankNone);
    const int32_t first = opt_.num_trainable_ops < 0 ? 0 : std::max(0, n - opt_.num_trainable_ops);
    for (int32_t i = first; i < n; ++i) ranks[static_cast<size_t>(i)] = kRankAll;
  }
  if (static_cast<int32_t>(ranks.size()) != n)
    throw ModelError("the trainable configuration covers " + std::to_string(ranks.size()) +
                     " operators, the model has " + std::to_string(n));
  g_.op_ranks = ranks;
  for (int32_t i = 0; i < n; ++i) {
    const Operator& op = model_.operators[static_cast<size_t>(i)];
    const int32_t rank = ranks[static_cast<size_t>(i)];
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const int32_t t = op.inputs[k];
      if (t < 0) continue;
      const Tensor& tensor = model_.tensors[static_cast<size_t>(t)];
      if (!tensor.is_constant() || tensor.dtype != CLTRAIN_FLOAT32) continue;
      if (std::find(model_.fixed_constants.begin(), model_.fixed_constants.end(), t) != model_.fixed_constants.end())
        continue;
      const OpDescriptor& d = *find_op(op.op);
      // A single value that an element-wise operator reads (a LayerNormalization's epsilon, a
      // Rescaling's scale, hard-sigmoid's 3 and 1/6) is a fixed constant of its layer, as the
      // framework has it: not trained (docs/training-rules.md).
      if ((d.broadcasts && tensor.elements() == 1) || d.fixed_constants) continue;
      const bool is_bias = static_cast<int>(k) == d.bias_slot;
      if (rank == kRankAll || (rank == kRankOnlyBias && is_bias)) trainable_[static_cast<size_t>(t)] = true;
      if (rank == kRankUpperHalf || rank == kRankLowerHalf) {
        if (!d.half_weight_ranks)
          throw ModelError("operator " + std::to_string(i) + " (" + d.name + "): the half-weight ranks apply to " +
                           half_weight_op_names() + " only");
        const int32_t rows = tensor.shape.empty() ? 1 : tensor.shape[0];
        const int32_t per_row = static_cast<int32_t>(tensor.elements() / static_cast<uint64_t>(rows));
        const int32_t half = rows / 2;
        trainable_[static_cast<size_t>(t)] = true;
        update_range_[t] = rank == kRankUpperHalf ? std::make_pair(0, half * per_row)
                                                  : std::make_pair(half * per_row, (rows - half) * per_row);
      }
    }
  }
}

TrainingGraph GraphBuilder::build() {
  if (model_.inputs.size() != 1 || model_.outputs.size() != 1)
    throw ModelError("training needs a model with one input and one output (this one has " +
                     std::to_string(model_.inputs.size()) + " and " + std::to_string(model_.outputs.size()) + ")");
  // Model tensors first, with their model index as id.
  for (const Tensor& t : model_.tensors) {
    const bool weight = t.is_constant() && t.dtype == CLTRAIN_FLOAT32;
    const int32_t id = add_tensor(t.name, t.shape, weight ? CLTRAIN_ROLE_TRAINABLE : CLTRAIN_ROLE_NON_CONST, weight);
    // int32 activations (the model's token ids) keep their type; int32 constants are params and
    // reach no backend.
    if (t.dtype == CLTRAIN_INT32 && !t.is_constant()) g_.tensors[static_cast<size_t>(id)].dtype = CLTRAIN_INT32;
    if (weight) {  // the graph keeps its own copy: the model may go before prepare
      g_.initial_data.push_back(t.data);
      g_.tensors[static_cast<size_t>(id)].data = g_.initial_data.back().data();
      g_.tensors[static_cast<size_t>(id)].data_bytes = t.data.size();
    }
  }
  g_.input = model_.inputs[0];
  g_.prediction = model_.outputs[0];
  const int32_t input_type = model_.tensors[static_cast<size_t>(g_.input)].dtype;
  if (input_type != CLTRAIN_FLOAT32 && input_type != CLTRAIN_INT32)
    throw ModelError("the model input must be float32 or int32");

  select_trainable();
  // Which tensors need a gradient: weights, and everything computed from one.
  needs_grad_.assign(model_.tensors.size(), false);
  for (size_t t = 0; t < model_.tensors.size(); ++t) needs_grad_[t] = is_weight(static_cast<int32_t>(t));
  for (const Operator& op : model_.operators) {
    bool any = false;
    for (int32_t in : op.inputs) any = any || needs_grad(in);
    any = any && !find_op(op.op)->piecewise_constant;  // a comparison's mask: no gradient
    for (int32_t out : op.outputs) needs_grad_[static_cast<size_t>(out)] = any;
  }
  fuse_pads();
  position_.assign(ops_.size(), 0);
  for (size_t k = 0; k < order_.size(); ++k) position_[order_[k]] = k;
  // Only the operators whose outputs reach the loss run a backward step, so only they hold a
  // weight's update back: a weight also read by a branch nobody reads (a gate whose value an
  // unrolled step does not use) is updated after its live readers, not never. Counted on the
  // operators as trained (a training pass may change which operators read a weight).
  std::vector<bool> live(g_.tensors.size(), false);
  live[static_cast<size_t>(g_.prediction)] = true;
  for (size_t k = order_.size(); k-- > 0;) {
    const size_t i = order_[k];
    if (fused_[i]) continue;
    const Operator& op = ops_[i];
    bool reaches = false;
    for (int32_t out : op.outputs) reaches = reaches || (out >= 0 && live[static_cast<size_t>(out)]);
    if (!reaches) continue;
    for (int32_t in : op.inputs) {
      if (in >= 0) live[static_cast<size_t>(in)] = true;
      if (is_weight(in)) ++remaining_[in];
    }
  }
  for (const auto& [w, n] : remaining_) g_.weights.push_back(w);

  for (size_t i : order_) forward_step(i);
  g_.num_forward = static_cast<int32_t>(g_.steps.size());

  // The loss.
  const auto pred_shape = shape_of(g_.prediction);
  g_.expected = add_tensor("expected", pred_shape, CLTRAIN_ROLE_NON_CONST, false);
  g_.loss = add_tensor("loss", {1}, CLTRAIN_ROLE_NON_CONST, false);
  cltrain_op_params lp{};
  lp.reduction = opt_.reduction;
  g_.loss_step = add_step(opt_.loss, CLTRAIN_PHASE_FORWARD, -1, {g_.prediction, g_.expected}, {g_.loss}, lp, -1);
  if (!needs_grad(g_.prediction)) return std::move(g_);  // nothing to train
  const int32_t dpred =
      add_tensor(std::string("backprop/") + g_.name_of(g_.prediction), pred_shape, CLTRAIN_ROLE_BACK_PROP, false);
  grad_[g_.prediction] = dpred;
  add_step(opt_.loss, CLTRAIN_PHASE_BACKWARD, -1, {g_.prediction, g_.expected}, {dpred}, lp, g_.loss_step);

  for (size_t k = order_.size(); k-- > 0;) {
    const size_t i = order_[k];
    const Operator& op = ops_[i];
    if (fused_[i] || !needs_grad(op.outputs[0]) || !grad_.count(op.outputs[0])) continue;
    backward_step(i);
  }
  check_then_update();
  return std::move(g_);
}

// The operators in an order that keeps few bytes live: of the operators whose inputs are ready,
// the one that adds the fewest bytes (outputs written less inputs read for the last time), the
// model's order on ties. Where the graph has no branches this is the model's order.
std::vector<size_t> low_memory_order(const Model& m) {
  const size_t n = m.operators.size();
  std::vector<int32_t> producer(m.tensors.size(), -1), uses(m.tensors.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    for (int32_t t : m.operators[i].outputs)
      if (t >= 0) producer[static_cast<size_t>(t)] = static_cast<int32_t>(i);
    for (int32_t t : m.operators[i].inputs)
      if (t >= 0) ++uses[static_cast<size_t>(t)];
  }
  auto bytes = [&](int32_t t) { return static_cast<int64_t>(m.tensors[static_cast<size_t>(t)].elements() * 4); };
  std::vector<bool> done(n, false), written(m.tensors.size(), false);
  for (size_t t = 0; t < m.tensors.size(); ++t) written[t] = producer[t] < 0;
  std::vector<size_t> order;
  for (size_t k = 0; k < n; ++k) {
    int64_t best_delta = 0;
    size_t best = n;
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      const Operator& op = m.operators[i];
      bool ready = true;
      for (int32_t t : op.inputs) ready = ready && (t < 0 || written[static_cast<size_t>(t)]);
      if (!ready) continue;
      int64_t delta = 0;
      for (int32_t t : op.outputs)
        if (t >= 0) delta += bytes(t);
      for (int32_t t : op.inputs)
        if (t >= 0 && uses[static_cast<size_t>(t)] == 1 && producer[static_cast<size_t>(t)] >= 0) delta -= bytes(t);
      if (best == n || delta < best_delta) best = i, best_delta = delta;
    }
    if (best == n) break;  // a cycle: the loader refuses those; keep the model's order
    done[best] = true;
    order.push_back(best);
    for (int32_t t : m.operators[best].outputs)
      if (t >= 0) written[static_cast<size_t>(t)] = true;
    for (int32_t t : m.operators[best].inputs)
      if (t >= 0) --uses[static_cast<size_t>(t)];
  }
  return order;
}

// The largest sum of bytes of the tensors live at one step, lifetimes from the steps' accesses
// (persistent tensors over all steps).
uint64_t peak_live_bytes(const TrainingGraph& g) {
  const size_t steps = g.steps.size();
  std::vector<int32_t> first(g.tensors.size(), -1), last(g.tensors.size(), -1);
  for (size_t s = 0; s < steps; ++s) {
    const auto& st = g.steps[s];
    for (int k = 0; k < st.num_inputs + st.num_outputs; ++k) {
      const int32_t t = k < st.num_inputs ? st.inputs[k] : st.outputs[k - st.num_inputs];
      if (t < 0) continue;
      auto& f = first[static_cast<size_t>(t)];
      f = f < 0 ? static_cast<int32_t>(s) : f;
      last[static_cast<size_t>(t)] = static_cast<int32_t>(s);
    }
  }
  std::vector<uint64_t> live(steps + 1, 0);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (first[t] < 0) continue;
    const bool whole = g.tensors[t].persistent != 0;
    for (size_t s = whole ? 0 : static_cast<size_t>(first[t]); s <= (whole ? steps - 1 : static_cast<size_t>(last[t]));
         ++s)
      live[s] += tensor_bytes(g.tensors[t]);
  }
  return *std::max_element(live.begin(), live.end());
}

}  // namespace

TrainingGraph build_training_graph(const Model& model, const TrainOptions& options) {
  if (options.loss != CLTRAIN_OP_LOSS_MSE && options.loss != CLTRAIN_OP_LOSS_CCE &&
      options.loss != CLTRAIN_OP_LOSS_CCE_LOGITS)
    throw ModelError("unknown loss");
  if (options.optimizer != CLTRAIN_OP_UPDATE_SGD && options.optimizer != CLTRAIN_OP_UPDATE_ADAM)
    throw ModelError("unknown optimizer");
  // Where the graph leaves a choice of order (branches), the order with the lower peak.
  std::vector<size_t> model_order(model.operators.size());
  for (size_t i = 0; i < model_order.size(); ++i) model_order[i] = i;
  TrainingGraph g = GraphBuilder(model, options, model_order).build();
  std::vector<size_t> other = low_memory_order(model);
  if (other.size() == model_order.size() && other != model_order) {
    TrainingGraph h = GraphBuilder(model, options, std::move(other)).build();
    if (peak_live_bytes(h) < peak_live_bytes(g)) return h;
  }
  return g;
}

}  // namespace cltrain
