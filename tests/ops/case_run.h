// One op case prepared on one backend: the case's graph as the backend sees it, with a guard
// tensor of the same shape right before and after every output, and reads, writes and runs
// addressed by case tensor id.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "backend.h"
#include "op_case.h"
#include "op_harness.h"

namespace cltrain {
namespace optest {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b);
// The tensors written by the given steps of a case.
std::set<int32_t> step_outputs(const OpCase& c, const std::vector<int>& steps);
std::vector<int> all_steps(const OpCase& c);

// The case's graph with a guard tensor of the same shape right before and after every output.
// All tensors live over the whole step order, so the planner stacks them in table order among
// tensors of equal size: each output lands between its two guards.
struct CaseGraph {
  std::vector<std::string> names;
  std::vector<cltrain_tensor_desc> tensors;
  std::vector<cltrain_step_desc> steps;
  std::vector<uint8_t> assigned;
  std::vector<int32_t> id;  // case tensor id -> graph tensor id
  struct Guarded {
    int32_t output, before, after;  // graph ids
  };
  std::vector<Guarded> guarded;

  // in: initial values, the trainable ones passed as prepare's data (nullptr: none).
  CaseGraph(const OpCase& c, const CaseInputs* in);
  CaseGraph(const CaseGraph&) = delete;  // tensors[].name points into names
  CaseGraph& operator=(const CaseGraph&) = delete;
  cltrain_graph_desc desc() const;
};

class CaseRun {
 public:
  // Prepares the case on b, writes its inputs, fills its outputs with NaN and its guards with
  // a pattern. is_cpu: the backend is the CPU one, whose memory report and layout are known.
  CaseRun(const OpCase& c, Backend& b, const CaseInputs& in, bool is_cpu);

  std::vector<float> read(int32_t t);
  void write(int32_t t, const std::vector<float>& v);
  void run(int step, const cltrain_run_args& args);
  Checkpoint read_all();

  // Tensors other than `may_change` must be bit for bit what they were.
  void expect_unchanged(const Checkpoint& before, const Checkpoint& after, const std::set<int32_t>& may_change,
                        const std::string& when);
  void expect_guards_intact(const std::string& when);

 private:
  void write_graph(int32_t gid, const std::vector<float>& v);
  void check_report(const cltrain_memory_report& r, bool exact);
  void check_layout(bool exact);

  const OpCase& c_;
  Backend& b_;
  CaseGraph g_;
};

}  // namespace optest
}  // namespace cltrain
