// The session (session.h): prepares the backends with the plan and replays its schedules.
#include "session.h"

#include "memory_plan.h"

namespace cltrain {

Session::Session(TrainingGraph graph, std::vector<std::unique_ptr<Backend>> backends)
    : graph_(std::move(graph)), backends_(std::move(backends)) {
  if (backends_.empty()) throw BackendError("no backend to run on");
  if (backends_.size() > 32) throw BackendError("too many backends");
}

int32_t Session::batch() const { return graph_.tensors[static_cast<size_t>(graph_.input)].dims[0]; }

uint64_t Session::input_elements() const { return tensor_elements(graph_.tensors[static_cast<size_t>(graph_.input)]); }

uint64_t Session::prediction_elements() const {
  return tensor_elements(graph_.tensors[static_cast<size_t>(graph_.prediction)]);
}

void Session::prepare(uint64_t memory_budget, bool dry) {
  plan_ = Planner(graph_, backends_, half_storage_).make(memory_budget);
  memory_.clear();
  for (size_t b = 0; b < backends_.size(); ++b) {
    std::vector<uint8_t> assigned(graph_.steps.size(), 0);
    bool any = false;
    for (size_t s = 0; s < graph_.steps.size(); ++s)
      if (plan_.step_backend[s] == static_cast<int32_t>(b)) assigned[s] = 1, any = true;
    if (!any) continue;
    cltrain_graph_desc g = graph_desc(plan_.tensors[b], graph_.steps, assigned.data());
    g.pool_limit = plan_.pool_limits[b];
    std::optional<cltrain_memory_report> report;
    if (dry) report = backends_[b]->plan(g);
    memory_.push_back({backends_[b]->name(), backends_[b]->device_name(), report ? *report : backends_[b]->prepare(g)});
  }
  if (memory_budget > 0) {  // what the dry plans promised, kept: never silently over the budget
    uint64_t total = 0;
    for (const BackendMemory& m : memory_) total += m.report.pool_bytes;
    if (total > memory_budget)
      throw MemoryBudgetError("memory budget: the backends' pools take " + std::to_string(total) + " bytes, over the " +
                              std::to_string(memory_budget) + " their plans fitted in");
  }
}

float Session::run(RunMode mode, const float* input, const float* expected, const cltrain_run_args& args,
                   float* prediction, bool* applied) {
  auto bytes_of = [&](int32_t t) { return tensor_bytes(graph_.tensors[static_cast<size_t>(t)]); };
  float loss = 0.0f;
  bool closed = false;  // a gate found the flag set: no more runs or copies
  if (applied) *applied = true;
  for (const ScheduleAction& a : plan_.schedule(mode).actions) {
    if (closed && (a.kind == ScheduleAction::kRun || a.kind == ScheduleAction::kCopy)) continue;
    switch (a.kind) {
      case ScheduleAction::kWrite:
        backends_[static_cast<size_t>(a.to)]->write(a.tensor, a.tensor == graph_.input ? input : expected,
                                                    bytes_of(a.tensor));
        break;
      case ScheduleAction::kCopy: {
        const uint64_t bytes = bytes_of(a.tensor);
        staging_.resize((bytes + 3) / 4);  // a UINT8 tensor need not be whole floats
        backends_[static_cast<size_t>(a.from)]->read(a.tensor, staging_.data(), bytes);
        backends_[static_cast<size_t>(a.to)]->write(a.tensor, staging_.data(), bytes);
        break;
      }
      case ScheduleAction::kRun: backends_[static_cast<size_t>(a.to)]->run(a.steps, args); break;
      case ScheduleAction::kGate: {
        float flag = 0.0f;
        backends_[static_cast<size_t>(a.from)]->read(a.tensor, &flag, sizeof(float));
        closed = flag != 0.0f;
        if (closed && applied) *applied = false;
        updating_ = !closed;
        break;
      }
      case ScheduleAction::kRead:
        if (a.tensor == graph_.loss)
          backends_[static_cast<size_t>(a.from)]->read(a.tensor, &loss, sizeof(float));
        else if (prediction)
          backends_[static_cast<size_t>(a.from)]->read(a.tensor, prediction, bytes_of(a.tensor));
        break;
    }
  }
  return loss;
}

float Session::train_step(const float* input, const float* expected, float* prediction, bool* applied) {
  cltrain_run_args args{};
  args.struct_size = sizeof(args);
  args.iteration = iterations_ + 1;
  args.learning_rate = 0.0f;
  bool done = true;
  float loss = 0.0f;
  updating_ = false;
  try {
    loss = run(RunMode::kTrain, input, expected, args, prediction, &done);
  } catch (...) {
    // Past the gate, the updates may have run in part. Before it, an earlier step's updates may
    // have been running on a device still (runs return before the device finishes): they are
    // known good only if every backend's queue now completes; if not, nothing is trusted.
    if (updating_) consistent_ = false;
    if (consistent_ && updates_pending_) {
      try {
        for (auto& b : backends_) b->sync();
      } catch (...) {
        consistent_ = false;
      }
    }
    updating_ = false;
    throw;
  }
  if (updating_) updates_pending_ = true;
  updating_ = false;
  if (done) ++iterations_;
  if (applied) *applied = done;
  return loss;
}

float Session::evaluate(const float* input, const float* expected, float* prediction) {
  cltrain_run_args args{};
  args.struct_size = sizeof(args);
  args.iteration = 1;
  return run(RunMode::kEvaluate, input, expected, args, prediction, nullptr);
}

void Session::predict(const float* input, float* prediction) {
  cltrain_run_args args{};
  args.struct_size = sizeof(args);
  args.iteration = 1;
  run(RunMode::kPredict, input, nullptr, args, prediction, nullptr);
}

std::vector<float> Session::read_persistent(int32_t t) {
  const auto& d = graph_.tensors.at(static_cast<size_t>(t));
  if (!d.persistent) throw BackendError(std::string("internal: ") + d.name + " is not persistent");
  // Every run leaves a persistent tensor on all of its holders (plan.h): read the first's.
  const int32_t from = lowest_bit(plan_.holders[static_cast<size_t>(t)]);
  if (from < 0) throw BackendError(std::string("internal: no backend holds ") + d.name);
  std::vector<float> out(tensor_elements(d));
  backends_[static_cast<size_t>(from)]->read(t, out.data(), out.size() * sizeof(float));
  return out;
}

void Session::write_persistent(int32_t t, const std::vector<float>& values) {
  const auto& d = graph_.tensors.at(static_cast<size_t>(t));
  if (!d.persistent || values.size() != tensor_elements(d))
    throw BackendError(std::string("internal: cannot write ") + d.name);
  for (size_t b = 0; b < backends_.size(); ++b)
    if (plan_.holders[static_cast<size_t>(t)] & (1u << b))
      backends_[b]->write(t, values.data(), values.size() * sizeof(float));
}

std::vector<std::string> Session::model_op_placement() const {
  std::vector<std::string> out;
  for (int32_t s = 0; s < graph_.num_forward; ++s) {
    const auto& st = graph_.steps[static_cast<size_t>(s)];
    if (st.model_op >= static_cast<int32_t>(out.size())) out.resize(static_cast<size_t>(st.model_op) + 1);
    out[static_cast<size_t>(st.model_op)] =
        backends_[static_cast<size_t>(plan_.step_backend[static_cast<size_t>(s)])]->name();
  }
  for (const auto& [op, into] : graph_.folded_into)  // a folded op runs inside the one it is folded into
    if (static_cast<size_t>(op) < out.size() && static_cast<size_t>(into) < out.size())
      out[static_cast<size_t>(op)] = out[static_cast<size_t>(into)];
  return out;
}

std::string Session::backend_names() const {
  std::string out;
  for (const auto& m : memory_) out += (out.empty() ? "" : ",") + m.backend;
  return out;
}

std::string Session::device_names() const {
  std::string out;
  for (const auto& m : memory_) out += (out.empty() ? "" : "; ") + m.device;
  return out;
}

}  // namespace cltrain
