// Helpers for pass tests: trace a C++ body into a FunctionGraph, and run a graph.
#pragma once

#include <gtest/gtest.h>

#include <functional>

#include "ember/ember.h"
#include "ember/passes/pass.h"
#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"

namespace ember::testing {

using TracedBody = std::function<std::vector<Tensor>(std::vector<Tensor>&)>;

/// Traces `body` over arguments x0, x1, ... of the given specs.
inline std::shared_ptr<FunctionGraph> trace_function(const std::vector<TensorSpec>& arg_specs,
                                                     const TracedBody& body) {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "f";
  TraceContext ctx(fn.get());
  TraceScope scope(ctx);
  std::vector<Tensor> args;
  for (size_t i = 0; i < arg_specs.size(); ++i)
    args.emplace_back(ctx.add_argument(arg_specs[i].dtype, arg_specs[i].shape, "x" + std::to_string(i)));
  for (const Tensor& r : body(args)) {
    auto v = ctx.value_of(r.impl());
    EXPECT_TRUE(v.ok());
    fn->results.push_back(*v);
  }
  ctx.seal();
  return fn;
}

/// Traces `body` over arguments of the given shapes, all of `dtype`.
inline std::shared_ptr<FunctionGraph> trace_function(const std::vector<Shape>& arg_shapes,
                                                     const TracedBody& body, DType dtype = DType::kFloat32) {
  std::vector<TensorSpec> specs;
  for (const Shape& shape : arg_shapes) specs.push_back(TensorSpec{dtype, shape});
  return trace_function(specs, body);
}

/// Runs a compiled function on `args`, expecting success.
inline std::vector<Tensor> run_compiled(const CompiledFunction& compiled, const std::vector<Tensor>& args) {
  std::vector<TensorImpl*> impls;
  for (const Tensor& a : args) impls.push_back(a.impl());
  OutputList results;
  Status s = compiled.run({impls.data(), impls.size()}, results);
  EXPECT_TRUE(s.ok()) << s.to_string();
  std::vector<Tensor> out;
  for (TensorRef& r : results) out.emplace_back(std::move(r));
  return out;
}

/// Runs `fn` unoptimized (every pass off) or as given.
inline std::vector<Tensor> run_graph(std::shared_ptr<const FunctionGraph> fn, const std::vector<Tensor>& args,
                                     bool optimize = false) {
  passes::OptimizerOptions options;
  options.disable_meta_optimizer = !optimize;
  return run_compiled(CompiledFunction(std::move(fn), options), args);
}

/// A pass's rewrite count, expecting success (-1 after a failure).
inline int rewrites(const StatusOr<int>& result) {
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? result.value() : -1;
}

inline int count_op(const FunctionGraph& fn, std::string_view op) {
  int n = 0;
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i) n += fn.graph.node(i).op->name == op;
  return n;
}

inline void expect_same_values(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape()) << "result " << i;
    auto va = a[i].to_vector<float>(), vb = b[i].to_vector<float>();
    for (size_t k = 0; k < va.size(); ++k)
      EXPECT_FLOAT_EQ(va[k], vb[k]) << "result " << i << " element " << k;
  }
}

}  // namespace ember::testing
