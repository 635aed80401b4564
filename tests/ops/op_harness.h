// Runs op cases on a backend and checks them: outputs against the CPU backend or a reference,
// gradients against finite differences, no NaN/Inf, guard tensors untouched, and nothing
// written outside a step's outputs. Failures are reported as gtest failures naming the case,
// the backend, the tensor and the element.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "op_case.h"

namespace cltrain {
namespace optest {

// Opens "cpu" or "opencl" for a test. Returns nullptr with *skip set when the backend cannot
// run here (plugin not built, no device), or with *error set when it should run but is broken.
std::unique_ptr<Backend> open_test_backend(const std::string& name, std::string* skip, std::string* error);

// Fixed random inputs of a case, seeded from its name: the same on every backend.
struct CaseInputs {
  std::map<int32_t, std::vector<float>> initial;             // by case tensor id
  std::vector<std::map<int32_t, std::vector<float>>> fresh;  // per iteration (stateful cases)
};
CaseInputs make_inputs(const OpCase& c);

// What a case produced: for a differentiable case one checkpoint holding y and the gradients,
// for a stateful case one checkpoint of the state per iteration.
using Checkpoint = std::map<int32_t, std::vector<float>>;
using Outputs = std::vector<Checkpoint>;

struct RunOptions {
  bool finite_differences = true;  // and the case's reference, if any
  bool fd_runs = true;             // the finite differences themselves (the reference is cheap)
  bool is_cpu = false;             // the backend is the CPU one: exact memory report and layout
};

// The graph of a case as a backend sees it (guards added), for supports() queries.
struct AbiGraph {
  std::vector<cltrain_tensor_desc> tensors;
  std::vector<cltrain_step_desc> steps;
};
AbiGraph abi_graph(const OpCase& c);

// Runs the case; checks as it goes (gtest failures). Backend failures throw BackendError.
Outputs run_case(const OpCase& c, Backend& backend, const CaseInputs& in, const RunOptions& options);

// got vs want per checkpoint and tensor, with tol relative to each tensor's scale.
void expect_outputs_close(const OpCase& c, const Outputs& got, const Outputs& want, double tol,
                          const std::string& what);

// A device that rounds IEEE-754 single precision exactly as the CPU does (POCL's CPU device), by
// its device line: there the OpenCL backend must equal the CPU backend bit for bit.
bool rounds_like_the_cpu(const std::string& device);

// Distance of two floats in units in the last place: adjacent floats are 1 apart, +0 and -0 are
// 0 apart (though their bits differ).
int64_t ulp_distance(float a, float b);

// got vs want bit for bit; a failure names the tensor, how many elements differ, the first one
// with both values and their ulp distance, and the largest distance.
void expect_outputs_bitwise(const OpCase& c, const Outputs& got, const Outputs& want, const std::string& what);

}  // namespace optest
}  // namespace cltrain
