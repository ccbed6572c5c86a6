// Checks an op's gradient rule against central finite differences, in float64, with no tape involved:
//   EXPECT_GRADIENT_OK("Mul", {tensor({2, 3}, {...}), tensor({3}, {...})}, {});
// The rule's input gradients for a random output gradient dy are compared with d/dx sum(dy * op(x)).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ember/ops/execute.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember::testing {

/// A tensor of `dtype` (float64 by default) and shape `dims` holding `values` (converted).
inline TensorRef make_tensor(std::vector<int64_t> dims, const std::vector<double>& values,
                             DType dtype = DType::kFloat64) {
  TensorRef t = TensorImpl::allocate(dtype, Shape(dims)).value();
  EXPECT_EQ(static_cast<size_t>(t->num_elements()), values.size());
  visit_dtype(dtype, [&]<typename T>() {
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
        t->mutable_data<T>()[i] = T(static_cast<float>(values[i]));
      else
        t->mutable_data<T>()[i] = static_cast<T>(values[i]);
    }
  });
  return t;
}

/// An int32 vector given by value: a shape-like operand (a shape, axes, a permutation, multiples).
inline TensorRef int32_vector(const std::vector<int64_t>& values) {
  return make_tensor({static_cast<int64_t>(values.size())}, std::vector<double>(values.begin(), values.end()),
                     DType::kInt32);
}

/// An int32 scalar given by value (ExpandDims' axis).
inline TensorRef int32_scalar(int64_t value) {
  return make_tensor({}, {static_cast<double>(value)}, DType::kInt32);
}

/// Values in [lo, hi), deterministic per seed.
inline std::vector<double> random_values(int64_t n, double lo = -1, double hi = 1, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(rng);
  return v;
}

/// A float64 tensor of shape `dims` with random values in [lo, hi); `seed` varies the values between inputs.
inline TensorRef random_tensor(const std::vector<int64_t>& dims, unsigned seed = 1, double lo = -1,
                               double hi = 1) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return make_tensor(dims, random_values(n, lo, hi, seed));
}

inline OutputList run_op(const OpDef& op, const std::vector<TensorRef>& inputs, const AttrList& attrs) {
  SmallVector<TensorImpl*, 4> impls;
  for (const TensorRef& t : inputs) impls.push_back(t.get());
  OutputList outs;
  Status s = run_kernel(op, {impls.data(), impls.size()}, {attrs.data(), attrs.size()}, outs);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return outs;
}

/// Runs `op`'s gradient rule on (inputs, outputs, output gradients); one gradient per input, null where
/// the rule gives none. Throws StatusError as rules do.
inline SmallVector<TensorRef, 4> apply_rule(const OpDef& op, const AttrList& attrs,
                                            std::span<TensorImpl* const> inputs,
                                            std::span<TensorImpl* const> outputs,
                                            std::span<TensorImpl* const> dys) {
  GradContext ctx;
  ctx.op = &op;
  ctx.attrs = {attrs.data(), attrs.size()};
  ctx.inputs = inputs;
  ctx.outputs = outputs;
  ctx.output_grads = dys;
  ctx.input_grads.resize(inputs.size());
  op.grad(ctx);
  return std::move(ctx.input_grads);
}

/// The same with owning containers of tensors (std::vector<TensorRef>, OutputList).
template <typename Inputs, typename Outputs, typename Grads>
SmallVector<TensorRef, 4> apply_rule(const OpDef& op, const AttrList& attrs, const Inputs& inputs,
                                     const Outputs& outputs, const Grads& dys) {
  SmallVector<TensorImpl*, 4> in, out, dy;
  for (const TensorRef& t : inputs) in.push_back(t.get());
  for (const TensorRef& t : outputs) out.push_back(t.get());
  for (const TensorRef& t : dys) dy.push_back(t.get());
  return apply_rule(op, attrs, std::span<TensorImpl* const>(in.data(), in.size()),
                    std::span<TensorImpl* const>(out.data(), out.size()),
                    std::span<TensorImpl* const>(dy.data(), dy.size()));
}

inline double weighted_sum(const OutputList& outs, const std::vector<TensorRef>& dys) {
  double total = 0;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (outs[j]->dtype() != DType::kFloat64) continue;
    const double* y = outs[j]->data<double>();
    const double* w = dys[j]->data<double>();
    for (int64_t k = 0; k < outs[j]->num_elements(); ++k) total += y[k] * w[k];
  }
  return total;
}

inline ::testing::AssertionResult gradient_ok(const std::string& name, std::vector<TensorRef> inputs,
                                              AttrList attrs, double tolerance = 1e-6) {
  const OpDef& op = op_def(name);
  if (op.grad == nullptr) return ::testing::AssertionFailure() << name << " has no gradient rule";
  Status s = complete_attrs(op, attrs);
  if (!s.ok()) return ::testing::AssertionFailure() << s.to_string();
  OutputList outs = run_op(op, inputs, attrs);
  std::vector<TensorRef> dys;
  for (size_t j = 0; j < outs.size(); ++j) {
    auto values = random_values(outs[j]->num_elements(), -1, 1, 100 + static_cast<unsigned>(j));
    dys.push_back(outs[j]->dtype() == DType::kFloat64
                      ? make_tensor(outs[j]->shape().dim_vector(), values)
                      : make_tensor(outs[j]->shape().dim_vector(),
                                    std::vector<double>(static_cast<size_t>(outs[j]->num_elements())),
                                    outs[j]->dtype()));
  }
  SmallVector<TensorRef, 4> input_grads;
  try {
    input_grads = apply_rule(op, attrs, inputs, outs, dys);
  } catch (const StatusError& e) {
    return ::testing::AssertionFailure() << name << "'s gradient rule failed: " << e.what();
  }
  // Shape-like operands (shapes, axes, multiples) are int tensors: they get no gradient, as in TensorFlow.
  for (size_t i = 0; i < inputs.size() && !op.inputs.empty(); ++i)
    if (op.arg_of(i, inputs.size()).shape_like && input_grads[i])
      return ::testing::AssertionFailure() << name << ": shape-like input " << i << " ('"
                                           << op.arg_of(i, inputs.size()).name << "') got a gradient";
  const double h = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->dtype() != DType::kFloat64) continue;  // int operands: nothing to differentiate
    const TensorRef& analytic = input_grads[i];
    for (int64_t k = 0; k < inputs[i]->num_elements(); ++k) {
      std::vector<TensorRef> plus = inputs, minus = inputs;
      std::vector<double> base(inputs[i]->data<double>(),
                               inputs[i]->data<double>() + inputs[i]->num_elements());
      auto vp = base, vm = base;
      vp[k] += h;
      vm[k] -= h;
      plus[i] = make_tensor(inputs[i]->shape().dim_vector(), vp);
      minus[i] = make_tensor(inputs[i]->shape().dim_vector(), vm);
      double numeric =
          (weighted_sum(run_op(op, plus, attrs), dys) - weighted_sum(run_op(op, minus, attrs), dys)) /
          (2 * h);
      double got = 0;
      if (analytic) {
        if (analytic->shape() != inputs[i]->shape())
          return ::testing::AssertionFailure()
                 << name << ": gradient of input " << i << " has shape " << analytic->shape().to_string()
                 << ", expected " << inputs[i]->shape().to_string();
        got = analytic->data<double>()[k];
      }
      if (std::abs(got - numeric) > tolerance * std::max(1.0, std::abs(numeric)) * 1000)
        return ::testing::AssertionFailure() << name << ": d/d input " << i << "[" << k << "] is " << got
                                             << ", finite differences give " << numeric;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace ember::testing

#define EXPECT_GRADIENT_OK(...) EXPECT_TRUE(::ember::testing::gradient_ok(__VA_ARGS__))
