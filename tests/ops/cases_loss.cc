// LOSS_MSE and LOSS_CCE, each with both reductions: forward in [pred, expected] out [loss],
// backward in [pred, expected] out [dpred]. The scalar for finite differences is the loss.
#include <algorithm>
#include <cmath>

#include "op_case.h"

namespace cltrain {
namespace optest {
namespace {

// Per sample (first dimension): MSE mean of (p - e)^2; CCE -sum e log clamp(p, 1e-7, 1 - 1e-7),
// its derivative zero where p was clamped. The reduction scales the sum over samples.
Values loss_reference(int32_t op, int32_t reduction, const std::vector<double>& p, const std::vector<double>& e,
                      int32_t batch, int32_t pred, int32_t loss, int32_t dpred) {
  const double scale = reduction == CLTRAIN_REDUCTION_SUM ? 1.0 : 1.0 / batch;
  const double per_sample = static_cast<double>(p.size()) / batch;
  double total = 0.0;
  std::vector<double> d(p.size());
  const double lo = 1e-7, hi = 1.0 - 1e-7;
  for (size_t i = 0; i < p.size(); ++i) {
    if (op == CLTRAIN_OP_LOSS_MSE) {
      total += (p[i] - e[i]) * (p[i] - e[i]) / per_sample;
      d[i] = scale * 2.0 * (p[i] - e[i]) / per_sample;
    } else {
      total -= e[i] * std::log(std::min(std::max(p[i], lo), hi));
      d[i] = (p[i] < lo || p[i] > hi) ? 0.0 : -scale * e[i] / p[i];
    }
  }
  (void)pred;
  return {{loss, {total * scale}}, {dpred, d}};
}

OpCase loss_case(int32_t op, int32_t reduction, const std::string& tag, std::vector<int32_t> dims,
                 std::vector<float> pred_values = {}, std::vector<float> expected_values = {}) {
  const bool mse = op == CLTRAIN_OP_LOSS_MSE;
  OpCase c;
  c.name = std::string(mse ? "MeanSquaredError_" : "CategoricalCrossEntropy_") +
           (reduction == CLTRAIN_REDUCTION_SUM ? "sum_" : "sobs_") + tag;
  c.op = op;
  const int32_t pred = c.input("pred", dims);
  const int32_t expected = c.input("expected", dims);
  if (!mse) {
    c.tensors[pred].fill = Fill::SoftmaxRows;
    c.tensors[expected].fill = Fill::OneHotRows;
  }
  if (!pred_values.empty()) {
    c.tensors[pred].fill = Fill::Values;
    c.tensors[pred].values = pred_values;
    c.tensors[expected].fill = Fill::Values;
    c.tensors[expected].values = expected_values;
  }
  const int32_t loss = c.output("loss", {1});
  const int32_t dpred = c.output("dpred", dims, CLTRAIN_ROLE_BACK_PROP);
  cltrain_op_params p{};
  p.reduction = reduction;
  c.step(op, CLTRAIN_PHASE_FORWARD, {pred, expected}, {loss}, p);
  c.step(op, CLTRAIN_PHASE_BACKWARD, {pred, expected}, {dpred}, p);
  c.y = loss;
  c.dy = -1;
  c.grads = {{pred, dpred}};
  c.tol.vs_cpu = 1e-5;
  c.tol.vs_reference = 1e-5;
  c.tol.fd_eps = mse ? 1e-2 : 1e-3;  // log is curved: a smaller step
  c.tol.fd_tol = 1e-2;
  // Finite differences cannot see a clamp: a case with clamped predictions relies on the reference.
  if (!pred_values.empty()) c.fd_samples = 0;
  const int32_t batch = dims[0];
  c.reference = [=](const Values& in) {
    return loss_reference(op, reduction, in.at(pred), in.at(expected), batch, pred, loss, dpred);
  };
  return c;
}

// LOSS_CCE_LOGITS: rows of the last dimension; per row lse = log sum exp z, the loss sums
// -e (z - lse), dz = softmax(z) * sum(e) - e; the reduction scales both.
OpCase logits_case(int32_t reduction, const std::string& tag, std::vector<int32_t> dims, float scale,
                   bool soft_labels) {
  OpCase c;
  c.name =
      std::string("CategoricalCrossEntropyFromLogits_") + (reduction == CLTRAIN_REDUCTION_SUM ? "sum_" : "sobs_") + tag;
  c.op = CLTRAIN_OP_LOSS_CCE_LOGITS;
  const int32_t pred = c.input("pred", dims, scale);
  const int32_t expected = c.input("expected", dims);
  c.tensors[expected].fill = soft_labels ? Fill::SoftmaxRows : Fill::OneHotRows;
  const int32_t loss = c.output("loss", {1});
  const int32_t dpred = c.output("dpred", dims, CLTRAIN_ROLE_BACK_PROP);
  cltrain_op_params p{};
  p.reduction = reduction;
  c.step(c.op, CLTRAIN_PHASE_FORWARD, {pred, expected}, {loss}, p);
  c.step(c.op, CLTRAIN_PHASE_BACKWARD, {pred, expected}, {dpred}, p);
  c.y = loss;
  c.dy = -1;
  c.grads = {{pred, dpred}};
  c.tol.vs_cpu = 1e-6;
  c.tol.vs_reference = 1e-5;
  c.tol.fd_eps = 1e-3;
  c.tol.fd_tol = 1e-2;
  if (scale > 10.0f) c.fd_samples = 0;  // a loss in the hundreds: float sums hide a 1e-3 step
  const size_t classes = static_cast<size_t>(dims.back());
  const double n = reduction == CLTRAIN_REDUCTION_SUM ? 1.0 : dims[0];
  c.reference = [=](const Values& in) {
    const std::vector<double>& z = in.at(pred);
    const std::vector<double>& e = in.at(expected);
    double total = 0.0;
    std::vector<double> d(z.size());
    for (size_t r = 0; r < z.size() / classes; ++r) {
      double m = z[r * classes], s = 0.0, se = 0.0;
      for (size_t i = r * classes; i < (r + 1) * classes; ++i) m = std::max(m, z[i]);
      for (size_t i = r * classes; i < (r + 1) * classes; ++i) s += std::exp(z[i] - m), se += e[i];
      const double lse = m + std::log(s);
      for (size_t i = r * classes; i < (r + 1) * classes; ++i) {
        total -= e[i] * (z[i] - lse);
        d[i] = (std::exp(z[i] - lse) * se - e[i]) / n;
      }
    }
    return Values{{loss, {total / n}}, {dpred, d}};
  };
  return c;
}

std::vector<OpCase> make_cases() {
  const int32_t MSE = CLTRAIN_OP_LOSS_MSE, CCE = CLTRAIN_OP_LOSS_CCE;
  const int32_t SOBS = CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE, SUM = CLTRAIN_REDUCTION_SUM;
  // The expected class sits on the upper clamp (p = 1), on the lower clamp (p = 0), and on an
  // unclamped prediction: the derivative must be zero on both clamps.
  const std::vector<float> clamped = {0.0f, 1.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.0f, 0.0f, 0.1f, 0.2f, 0.3f, 0.4f};
  const std::vector<float> classes = {0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f};
  return {
      loss_case(MSE, SOBS, "x4x6", {4, 6}),
      loss_case(MSE, SUM, "x3x5", {3, 5}),
      loss_case(MSE, SOBS, "x2x4x8", {2, 4, 8}),
      loss_case(CCE, SOBS, "x4x10", {4, 10}),
      loss_case(CCE, SUM, "x4x16", {4, 16}),
      loss_case(CCE, SOBS, "x32x10", {32, 10}),  // Fashion-MNIST at batch 32
      loss_case(CCE, SOBS, "clamped_x3x4", {3, 4}, clamped, classes),
      loss_case(CCE, SUM, "clamped_x3x4", {3, 4}, clamped, classes),
      logits_case(SOBS, "x4x10", {4, 10}, 3.0f, false),
      logits_case(SUM, "x3x7", {3, 7}, 3.0f, false),
      logits_case(SOBS, "x32x10", {32, 10}, 3.0f, false),
      // Logits far beyond a softmax's float range (|z| up to 90): the max-shifted form stays finite.
      logits_case(SOBS, "wide_x4x6", {4, 6}, 90.0f, false),
      // Soft labels (each row sums to 1) over sequences [N, T, C]: rows are the last dimension.
      logits_case(SOBS, "soft_x2x3x5", {2, 3, 5}, 2.0f, true),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
