#include "ember/graph/rebind.h"

#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/ops/registry.h"
#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"

namespace ember {
namespace {

// `a += 1; return a`, traced.
std::shared_ptr<FunctionGraph> trace_increment(Variable& a) {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "increment";
  TraceContext ctx(fn.get());
  TraceScope scope(ctx);
  a.assign_add(Tensor(1.0f));
  Tensor r = a.read();
  fn->results.push_back(ValueRef{r.impl()->graph_node(), r.impl()->graph_output()});
  return fn;
}

// `return (a, increment())`: reads `a` itself and calls a library function that writes it.
std::shared_ptr<FunctionGraph> trace_caller(Variable& a, std::shared_ptr<const FunctionGraph> callee,
                                            const std::string& callee_name) {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "caller";
  {
    TraceContext ctx(fn.get());
    TraceScope scope(ctx);
    Tensor r = a.read();
    fn->results.push_back(ValueRef{r.impl()->graph_node(), r.impl()->graph_output()});
  }
  SmallVector<TensorSpec, 2> specs;
  specs.push_back(callee->graph.spec(callee->results[0]));
  AttrList attrs;
  attrs.push_back(callee_name);
  int32_t call = fn->graph.add_node(op_def("PartitionedCall"), {}, std::move(attrs), std::move(specs), {});
  fn->results.push_back(ValueRef{call, 0});
  fn->control_outputs.push_back(call);
  fn->callees.push_back(std::move(callee));
  return fn;
}

std::vector<float> run(std::shared_ptr<const FunctionGraph> fn) {
  CompiledFunction compiled(std::move(fn));
  OutputList results;
  Status s = compiled.run({}, results);
  EXPECT_TRUE(s.ok()) << s.to_string();
  std::vector<float> out;
  for (TensorRef& r : results) out.push_back(Tensor(r).item<float>());
  return out;
}

TEST(RebindVariables, ResourceOpsAndCalleesNameTheNewVariable) {
  Variable a(Tensor(1.0f), "a"), b(Tensor(10.0f), "b");
  std::shared_ptr<const FunctionGraph> inner = trace_increment(a);
  std::string inner_name = FunctionLibrary::global().add(inner);
  auto outer = trace_caller(a, inner, inner_name);

  auto rebound = rebind_variables(*outer, {{a.id(), b.id()}});
  ASSERT_TRUE(rebound.ok()) << rebound.status().to_string();
  // The call now names a rebound copy of the callee; the original is left as it was.
  EXPECT_NE(std::get<std::string>((*rebound)->graph.node((*rebound)->results[1].node).attrs[0]), inner_name);
  std::vector<float> got = run(*rebound);
  EXPECT_EQ(got[1], 11.0f);
  EXPECT_EQ(b.read().item<float>(), 11.0f);
  EXPECT_EQ(a.read().item<float>(), 1.0f);  // the traced variable is untouched
  got = run(outer);
  EXPECT_EQ(got[1], 2.0f);
  EXPECT_EQ(a.read().item<float>(), 2.0f);
  EXPECT_EQ(b.read().item<float>(), 11.0f);
}

TEST(RebindVariables, IdsTheFunctionDoesNotNameLeaveAnEqualCopy) {
  Variable a(Tensor(1.0f), "a"), b(Tensor(10.0f), "b"), c(Tensor(0.0f), "c");
  auto fn = trace_increment(a);
  auto rebound = rebind_variables(*fn, {{c.id(), b.id()}});
  ASSERT_TRUE(rebound.ok());
  EXPECT_EQ((*rebound)->graph.to_text(), fn->graph.to_text());
}

TEST(RebindVariables, SwappingTwoVariablesSubstitutesEachOnce) {
  Variable a(Tensor(1.0f), "a"), b(Tensor(10.0f), "b");
  auto fn = trace_increment(a);
  auto swapped = rebind_variables(*fn, {{a.id(), b.id()}, {b.id(), a.id()}});
  ASSERT_TRUE(swapped.ok());
  EXPECT_EQ(run(*swapped)[0], 11.0f);
  EXPECT_EQ(a.read().item<float>(), 1.0f);
}

TEST(RebindVariables, AFunctionWithACustomGradientIsRefused) {
  Variable a(Tensor(1.0f), "a"), b(Tensor(10.0f), "b");
  auto fn = trace_increment(a);
  fn->custom_gradient_regions.emplace_back();
  auto rebound = rebind_variables(*fn, {{a.id(), b.id()}});
  ASSERT_FALSE(rebound.ok());
  EXPECT_EQ(rebound.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(rebound.status().message().find("custom gradient"), std::string::npos);
}

}  // namespace
}  // namespace ember
