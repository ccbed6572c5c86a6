// Checks that an op's gradient rule also works while tracing (the backward half of a graph function):
//   EXPECT_TRACED_GRADIENT_OK("Tile", {x, int32_vector({2, 1})}, {attrs});
// The op and its rule are traced with the inputs and output gradients as function arguments, so every op
// the rule emits becomes a graph node (nothing may read a buffer); running the compiled function must give
// the eager rule's input gradients. Shape-like operands (ArgDef::shape_like) are captured by value, as a
// constant shape is in a TensorFlow graph; TraceMode makes them arguments too, or traces the other
// arguments with every dim unknown, so that the rule has to read shapes at run time.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"
#include "tests/cpp/ops/grad_check.h"

namespace ember::testing {

struct TraceMode {
  bool shape_operands_as_arguments = false;  // their values then unknown while tracing
  bool unknown_dims = false;                 // the other arguments (and dys) traced as [?, ?, ...]
};

inline ::testing::AssertionResult traced_gradient_ok(const std::string& name, std::vector<TensorRef> inputs,
                                                     AttrList attrs, TraceMode mode = {}) {
  const OpDef& op = op_def(name);
  Status s = complete_attrs(op, attrs);
  if (!s.ok()) return ::testing::AssertionFailure() << s.to_string();
  OutputList outs = run_op(op, inputs, attrs);
  std::vector<TensorRef> dys;
  for (size_t j = 0; j < outs.size(); ++j)
    dys.push_back(make_tensor(outs[j]->shape().dim_vector(),
                              random_values(outs[j]->num_elements(), -1, 1, 200 + static_cast<unsigned>(j)),
                              outs[j]->dtype()));
  SmallVector<TensorImpl*, 4> in_impls, out_impls, dy_impls;
  for (auto& t : inputs) in_impls.push_back(t.get());
  for (auto& t : outs) out_impls.push_back(t.get());
  for (auto& t : dys) dy_impls.push_back(t.get());
  SmallVector<TensorRef, 4> eager;
  try {
    eager = apply_rule(op, attrs, {in_impls.data(), in_impls.size()}, {out_impls.data(), out_impls.size()},
                       {dy_impls.data(), dy_impls.size()});
  } catch (const StatusError& e) {
    return ::testing::AssertionFailure() << name << "'s rule failed eagerly: " << e.what();
  }

  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "grad_of_" + name;
  std::vector<size_t> with_grad;
  // Inputs passed by value rather than as arguments: the op's shape-like operands, by default.
  std::vector<bool> by_value(inputs.size(), false), shape_like(inputs.size(), false);
  for (size_t i = 0; i < inputs.size() && !op.inputs.empty(); ++i) {
    shape_like[i] = op.arg_of(i, inputs.size()).shape_like;
    by_value[i] = shape_like[i] && !mode.shape_operands_as_arguments;
  }
  auto traced_shape = [&](const Shape& s, bool keep) {
    if (keep || !mode.unknown_dims) return s;
    return Shape(std::vector<int64_t>(static_cast<size_t>(s.rank()), kUnknownDim));
  };
  {
    TraceContext trace(fn.get());
    TraceScope scope(trace);
    std::vector<TensorRef> sym_in, sym_dy;
    SmallVector<TensorImpl*, 4> sym_in_impls, sym_out_impls, sym_dy_impls;
    for (size_t i = 0; i < inputs.size(); ++i) {
      sym_in.push_back(by_value[i] ? inputs[i]
                                   : trace.add_argument(inputs[i]->dtype(),
                                                        traced_shape(inputs[i]->shape(), shape_like[i]),
                                                        "x" + std::to_string(i)));
      sym_in_impls.push_back(sym_in.back().get());
    }
    for (size_t j = 0; j < dys.size(); ++j) {
      sym_dy.push_back(trace.add_argument(dys[j]->dtype(), traced_shape(dys[j]->shape(), false),
                                          "dy" + std::to_string(j)));
      sym_dy_impls.push_back(sym_dy.back().get());
    }
    OutputList sym_out;
    s = execute_op(op, {sym_in_impls.data(), sym_in_impls.size()}, {attrs.data(), attrs.size()}, sym_out);
    if (!s.ok()) return ::testing::AssertionFailure() << "tracing " << name << ": " << s.to_string();
    for (auto& t : sym_out) sym_out_impls.push_back(t.get());
    SmallVector<TensorRef, 4> grads;
    try {
      grads = apply_rule(op, attrs, {sym_in_impls.data(), sym_in_impls.size()},
                         {sym_out_impls.data(), sym_out_impls.size()},
                         {sym_dy_impls.data(), sym_dy_impls.size()});
    } catch (const StatusError& e) {
      return ::testing::AssertionFailure() << name << "'s rule failed while tracing: " << e.what();
    }
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i] != !eager[i])
        return ::testing::AssertionFailure() << name << ": input " << i << " has a gradient only in one mode";
      if (!grads[i]) continue;
      auto value = trace.value_of(grads[i].get());
      if (!value.ok()) return ::testing::AssertionFailure() << value.status().to_string();
      fn->results.push_back(*value);
      with_grad.push_back(i);
    }
    trace.seal();
  }
  CompiledFunction compiled(fn);
  SmallVector<TensorImpl*, 8> args;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!by_value[i]) args.push_back(inputs[i].get());
  for (auto& t : dys) args.push_back(t.get());
  OutputList results;
  s = compiled.run({args.data(), args.size()}, results);
  if (!s.ok())
    return ::testing::AssertionFailure()
           << "running the traced gradient of " << name << ": " << s.to_string();
  for (size_t r = 0; r < with_grad.size(); ++r) {
    const TensorImpl& want = *eager[with_grad[r]];
    const TensorImpl& got = *results[r];
    if (got.shape() != want.shape() || got.dtype() != want.dtype())
      return ::testing::AssertionFailure()
             << name << ": traced gradient of input " << with_grad[r] << " is " << got.shape().to_string()
             << ", eager " << want.shape().to_string();
    for (int64_t k = 0; k < want.num_elements(); ++k)
      if (std::abs(got.data<double>()[k] - want.data<double>()[k]) > 1e-12)
        return ::testing::AssertionFailure()
               << name << ": traced gradient of input " << with_grad[r] << "[" << k << "] is "
               << got.data<double>()[k] << ", eager " << want.data<double>()[k];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace ember::testing

#define EXPECT_TRACED_GRADIENT_OK(...) EXPECT_TRUE(::ember::testing::traced_gradient_ok(__VA_ARGS__))
