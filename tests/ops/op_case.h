// An op test case: a small training graph built by hand around one op (its forward and
// backward steps, or its graph/update step), the way its inputs are filled, and its tolerances.
// The harness (op_harness.h) runs every case on every backend against the CPU backend, finite
// differences or a reference in double, with NaN/Inf checks and guard tensors around outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cltrain/cltrain_backend.h"

namespace cltrain {
namespace optest {

enum class Fill {
  Uniform,      // uniform in [-scale, scale]
  Magnitudes,   // uniform in [0, scale] (sums of squares); `fresh` tensors too
  Integers,     // whole numbers uniform in [0, scale]: many ties (a max pool's first maximum)
  SoftmaxRows,  // uniform in [-scale, scale], then softmax over the last dimension
  OneHotRows,   // one 1 per row of the last dimension
  Values,       // TensorSpec::values
  Output,       // written by a step; the harness fills it with NaN before the steps run
  None,         // left as the backend initializes it (optimizer variables start at zero)
};

struct TensorSpec {
  std::string name;
  std::vector<int32_t> dims;
  int32_t role = CLTRAIN_ROLE_NON_CONST;
  bool persistent = false;  // trainable tensors: their initial values go in as prepare's data
  Fill fill = Fill::Uniform;
  float scale = 1.0f;
  std::vector<float> values;
  // CLTRAIN_UINT8: a max pool's argmax, an output the harness reads back as floats 0..255
  // (written as 255 where it fills outputs with NaN). CLTRAIN_INT32: GATHER's ids, whole numbers
  // written and read as int32.
  int32_t dtype = CLTRAIN_FLOAT32;
};

// How close a backend must be, stated once per case. Errors are relative to
// max(|expected element|, largest |expected| of the tensor).
struct Tolerance {
  double vs_cpu = 1e-5;
  double vs_reference = 1e-5;
  double fd_eps = 1e-2;  // central differences: (L(x + eps) - L(x - eps)) / 2 eps
  double fd_tol = 1e-2;
};

// Values in double, by tensor id of the case.
using Values = std::map<int32_t, std::vector<double>>;
// Values in float, by tensor id of the case.
using Floats = std::map<int32_t, std::vector<float>>;

struct OpCase {
  std::string name;  // unique; letters, digits and '_'
  int32_t op = -1;   // the op under test (cltrain_op)
  std::vector<TensorSpec> tensors;
  std::vector<cltrain_step_desc> steps;  // in global step order
  Tolerance tol;

  // Differentiable cases (model ops and losses): steps[0] is the forward, steps[1] the backward.
  // The scalar for finite differences is sum(y * dy) for a fixed random dy, or the loss itself
  // when dy is -1.
  int32_t y = -1;
  int32_t dy = -1;
  std::vector<std::pair<int32_t, int32_t>> grads;  // (input, backward output holding dL/dinput)
  int32_t activation = CLTRAIN_ACT_NONE;           // samples whose perturbation crosses its kinks are skipped
  // A backward with params.dx_activation RELU or RELU6: its dx is the gradient through that
  // activation of x's producer, masked where the derivative at x is 0; finite differences (of x)
  // are taken where it is 1, the reference and the CPU hold it everywhere.
  int32_t dx_activation = CLTRAIN_ACT_NONE;
  int fd_samples = 64;  // elements perturbed per input; 0: no finite differences
  // Optional: the expected forward and backward outputs, given all inputs (and dy).
  std::function<Values(const Values& inputs)> reference;
  // Optional: those outputs in float, computed in the rounding order of cltrain_ops.h's
  // numerics. The CPU backend, and every backend on a device that rounds like it, must give them
  // bit for bit. (A generic lambda over the value type can serve as both.)
  std::function<Floats(const Floats& inputs)> exact;

  // Environment variables set while the backends of the case are created and prepared (a
  // backend's own settings, such as CLTRAIN_OPENCL_SCRATCH_BYTES; others ignore them).
  std::vector<std::pair<std::string, std::string>> backend_env;

  // Stateful cases (ACCUMULATE, optimizer updates): all steps run once per iteration
  // (run_args.iteration = 1, 2, ...), `fresh` inputs get new random values every iteration, and
  // `state` is compared after each with reference_step applied in double.
  bool stateful = false;
  int iterations = 1;
  float lr_override = 0.0f;  // run_args.learning_rate
  std::vector<int32_t> fresh;
  std::vector<int32_t> state;
  std::function<void(Values& values, int64_t iteration)> reference_step;

  // Builders.
  int32_t add(TensorSpec t);
  int32_t input(const std::string& name, std::vector<int32_t> dims, float scale = 1.0f);
  int32_t output(const std::string& name, std::vector<int32_t> dims, int32_t role = CLTRAIN_ROLE_NON_CONST);
  int32_t weight(const std::string& name, std::vector<int32_t> dims, float scale = 1.0f);
  void step(int32_t op_, int32_t phase, std::vector<int32_t> in, std::vector<int32_t> out,
            const cltrain_op_params& params = {});
};

// Cases are registered per op family (cases_*.cc): `const RegisterCases kCases(make_cases);`.
struct RegisterCases {
  explicit RegisterCases(std::vector<OpCase> (*make)());
};

// Every registered case, sorted by name.
const std::vector<OpCase>& all_cases();

uint64_t element_count(const std::vector<int32_t>& dims);

}  // namespace optest
}  // namespace cltrain
