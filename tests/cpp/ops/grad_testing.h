// Helpers for gradient-rule tests beyond first-order finite differences (grad_check.h): running a rule
// directly on chosen output gradients, to check values at points where finite differences cannot (ties,
// kinks, zeros) and dtypes they do not cover; and checking that a rule can itself be differentiated
// (second order) by recording it on a GradientTape.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/autodiff/tape.h"
#include "tests/cpp/ops/grad_check.h"

namespace ember::testing {

/// Runs `name` on `inputs`, then its gradient rule with output gradients `dys` (one per output);
/// returns one gradient per input (null where the rule gives none).
inline std::vector<TensorRef> rule_grads(const std::string& name, const std::vector<TensorRef>& inputs,
                                         AttrList attrs, const std::vector<TensorRef>& dys) {
  const OpDef& op = op_def(name);
  EXPECT_NE(op.grad, nullptr) << name;
  Status s = complete_attrs(op, attrs);
  EXPECT_TRUE(s.ok()) << s.to_string();
  OutputList outs = run_op(op, inputs, attrs);
  auto grads = ::ember::testing::apply_rule(op, attrs, inputs, outs, dys);
  return {grads.begin(), grads.end()};
}

/// The elements of a float64 tensor.
inline std::vector<double> values(const TensorRef& t) {
  EXPECT_EQ(t->dtype(), DType::kFloat64);
  return {t->data<double>(), t->data<double>() + t->num_elements()};
}

namespace internal {

// The rule's input gradients at `inputs` for output gradients `dys`, with outputs computed by `op`.
// While a tape records, both the forward op and the rule's ops land on it.
inline std::vector<TensorRef> run_op_and_rule(const OpDef& op, const std::vector<TensorRef>& inputs,
                                              const AttrList& attrs, const std::vector<TensorRef>& dys) {
  SmallVector<TensorImpl*, 4> in_impls;
  for (const TensorRef& t : inputs) in_impls.push_back(t.get());
  OutputList outs;
  Status s = execute_op(op, {in_impls.data(), in_impls.size()}, {attrs.data(), attrs.size()}, outs);
  if (!s.ok()) throw StatusError(s);
  auto grads = ::ember::testing::apply_rule(op, attrs, inputs, outs, dys);
  return {grads.begin(), grads.end()};
}

}  // namespace internal

/// Second order: with fixed output gradients dy and weights w, F(x) = sum_i <w_i, rule(x, dy)_i> is
/// differentiated by a tape that recorded the op and its rule, and compared with central finite
/// differences of F (the rule run eagerly). This exercises the rule's own ops' rules, so it fails if the
/// rule uses an op in a way that is not differentiable.
inline ::testing::AssertionResult second_order_ok(const std::string& name, std::vector<TensorRef> inputs,
                                                  AttrList attrs, double tolerance = 1e-6) {
  const OpDef& op = op_def(name);
  if (op.grad == nullptr) return ::testing::AssertionFailure() << name << " has no gradient rule";
  Status s = complete_attrs(op, attrs);
  if (!s.ok()) return ::testing::AssertionFailure() << s.to_string();
  try {
    OutputList outs = run_op(op, inputs, attrs);
    std::vector<TensorRef> dys, weights;
    for (size_t j = 0; j < outs.size(); ++j)
      dys.push_back(
          make_tensor(outs[j]->shape().dim_vector(),
                      random_values(outs[j]->num_elements(), -1, 1, 200 + static_cast<unsigned>(j))));
    for (size_t i = 0; i < inputs.size(); ++i)
      weights.push_back(
          make_tensor(inputs[i]->shape().dim_vector(),
                      random_values(inputs[i]->num_elements(), -1, 1, 300 + static_cast<unsigned>(i))));
    auto f = [&](const std::vector<TensorRef>& x) {
      std::vector<TensorRef> g = internal::run_op_and_rule(op, x, attrs, dys);
      double total = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        if (!g[i] || g[i]->dtype() != DType::kFloat64) continue;
        for (int64_t k = 0; k < g[i]->num_elements(); ++k)
          total += g[i]->data<double>()[k] * weights[i]->data<double>()[k];
      }
      return total;
    };
    auto tape = autodiff::Tape::create(/*persistent=*/false, /*watch_accessed_variables=*/false);
    if (!tape.ok()) return ::testing::AssertionFailure() << tape.status().to_string();
    if (Status pushed = (*tape)->push(); !pushed.ok())
      return ::testing::AssertionFailure() << pushed.to_string();
    for (const TensorRef& t : inputs) (*tape)->watch(t.get());
    std::vector<TensorRef> g;
    try {
      g = internal::run_op_and_rule(op, inputs, attrs, dys);
    } catch (...) {
      (*tape)->pop();
      throw;
    }
    (*tape)->pop();
    std::vector<TensorImpl*> targets, target_weights;
    std::vector<autodiff::GradSource> sources;
    for (size_t i = 0; i < g.size(); ++i) {
      if (!g[i] || g[i]->dtype() != DType::kFloat64) continue;
      targets.push_back(g[i].get());
      target_weights.push_back(weights[i].get());
    }
    for (const TensorRef& t : inputs) sources.push_back(autodiff::GradSource{t.get(), 0});
    if (targets.empty()) return ::testing::AssertionSuccess();
    auto second = (*tape)->gradient(targets, target_weights, sources);
    if (!second.ok()) return ::testing::AssertionFailure() << name << ": " << second.status().to_string();
    const double h = 1e-5;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]->dtype() != DType::kFloat64) continue;  // integer inputs (indices, labels)
      const TensorRef& analytic = (*second)[i];
      for (int64_t k = 0; k < inputs[i]->num_elements(); ++k) {
        std::vector<double> base = values(inputs[i]);
        std::vector<TensorRef> plus = inputs, minus = inputs;
        base[k] += h;
        plus[i] = make_tensor(inputs[i]->shape().dim_vector(), base);
        base[k] -= 2 * h;
        minus[i] = make_tensor(inputs[i]->shape().dim_vector(), base);
        double numeric = (f(plus) - f(minus)) / (2 * h);
        double got = analytic ? analytic->data<double>()[k] : 0.0;
        if (analytic && analytic->shape() != inputs[i]->shape())
          return ::testing::AssertionFailure() << name << ": second-order gradient of input " << i
                                               << " has shape " << analytic->shape().to_string();
        if (std::abs(got - numeric) > tolerance * std::max(1.0, std::abs(numeric)) * 1000)
          return ::testing::AssertionFailure() << name << ": second order, d/d input " << i << "[" << k
                                               << "] is " << got << ", finite differences give " << numeric;
      }
    }
  } catch (const StatusError& e) {
    return ::testing::AssertionFailure() << name << ": " << e.what();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace ember::testing

#define EXPECT_SECOND_ORDER_OK(...) EXPECT_TRUE(::ember::testing::second_order_ok(__VA_ARGS__))
