// The control-flow passes (src/ember/passes/control_flow.cc): constant predicates fold to the branch taken,
// loop-invariant work leaves While bodies. Each rewrite: the nodes it leaves, and the results of the
// unoptimized graph.
#include <gtest/gtest.h>

#include "ember/ops/graph_ops.h"
#include "ember/passes/optimizer.h"
#include "ember/passes/pass.h"
#include "pass_testing.h"

namespace ember {
namespace {

using testing::count_op;
using testing::expect_same_values;
using testing::rewrites;
using testing::run_graph;
using testing::trace_function;

Tensor scalar(float v) { return Tensor::from_vector<float>({v}, Shape({})); }

// The function a node's attribute names.
std::shared_ptr<const FunctionGraph> callee(const FunctionGraph& fn, std::string_view op,
                                            std::string_view attr) {
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i) {
    const Node& n = fn.graph.node(i);
    if (n.op->name == op)
      return FunctionLibrary::global().find(std::get<std::string>(n.attrs[n.op->attr_index(attr)]));
  }
  return nullptr;
}

const Node* find_op(const FunctionGraph& fn, std::string_view op) {
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i)
    if (fn.graph.node(i).op->name == op) return &fn.graph.node(i);
  return nullptr;
}

TEST(FoldConstantPredicates, AnIfWithAConstPredicateCallsTheBranchTaken) {
  auto then_fn =
      trace_function({Shape({3})}, [](std::vector<Tensor>& x) { return std::vector<Tensor>{exp(x[0])}; });
  auto else_fn =
      trace_function({Shape({3})}, [](std::vector<Tensor>& x) { return std::vector<Tensor>{sin(x[0])}; });
  const std::string then_name = FunctionLibrary::global().add(then_fn);
  const std::string else_name = FunctionLibrary::global().add(else_fn);
  for (float predicate : {1.0f, 0.0f}) {
    auto fn = trace_function({Shape({3})}, [&](std::vector<Tensor>& x) {
      return call_op("StatelessIf", {scalar(predicate), x[0]}, {then_name, else_name});
    });
    FunctionGraph g = *fn;
    ASSERT_EQ(count_op(g, "StatelessIf"), 1);
    EXPECT_EQ(rewrites(passes::fold_constant_predicates(g)), 1);
    EXPECT_EQ(count_op(g, "StatelessIf"), 0);
    EXPECT_EQ(callee(g, "PartitionedCall", "f"), predicate != 0.0f ? then_fn : else_fn);
    EXPECT_EQ(rewrites(passes::inline_function_calls(g)), 1);
    EXPECT_EQ(count_op(g, "Exp"), predicate != 0.0f ? 1 : 0);
    EXPECT_EQ(count_op(g, "Sin"), predicate != 0.0f ? 0 : 1);
    Tensor x = Tensor::from_vector<float>({0.5f, -1.0f, 2.0f});
    expect_same_values(run_graph(fn, {x}), run_graph(std::make_shared<FunctionGraph>(g), {x}));
  }
}

TEST(FoldConstantPredicates, ACaseIndexOutOfRangeTakesTheLastBranch) {
  auto neg = trace_function({Shape({2})},
                            [](std::vector<Tensor>& x) { return std::vector<Tensor>{negative(x[0])}; });
  auto sq =
      trace_function({Shape({2})}, [](std::vector<Tensor>& x) { return std::vector<Tensor>{square(x[0])}; });
  const std::string branches = FunctionLibrary::global().add(neg) + "," + FunctionLibrary::global().add(sq);
  auto fn = trace_function({Shape({2})}, [&](std::vector<Tensor>& x) {
    return call_op("StatelessCase", {Tensor::from_vector<int32_t>({7}, Shape({})), x[0]}, {branches});
  });
  FunctionGraph g = *fn;
  EXPECT_EQ(rewrites(passes::fold_constant_predicates(g)), 1);
  EXPECT_EQ(callee(g, "PartitionedCall", "f"), sq);
  Tensor x = Tensor::from_vector<float>({3.0f, -2.0f});
  expect_same_values(run_graph(fn, {x}), run_graph(std::make_shared<FunctionGraph>(g), {x}));
}

TEST(FoldConstantPredicates, APredicateComputedInTheGraphStays) {
  auto id = trace_function({Shape({2})}, [](std::vector<Tensor>& x) { return std::vector<Tensor>{x[0]}; });
  const std::string name = FunctionLibrary::global().add(id);
  auto fn = trace_function({Shape({2})}, [&](std::vector<Tensor>& x) {
    return call_op("StatelessIf", {reduce_sum(x[0], {0}), x[0]}, {name, name});
  });
  FunctionGraph g = *fn;
  EXPECT_EQ(rewrites(passes::fold_constant_predicates(g)), 0);
  EXPECT_EQ(count_op(g, "StatelessIf"), 1);
}

// while k < 3: k, acc, w = k + 1, acc * 0.5 + exp(w) * 2, w
struct Loop {
  std::shared_ptr<FunctionGraph> cond, body, fn;
};

Loop invariant_loop() {
  Loop loop;
  const std::vector<Shape> vars = {Shape({}), Shape({3}), Shape({3})};
  loop.cond = trace_function(vars, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{call_op1("Less", {x[0], scalar(3.0f)})};
  });
  loop.body = trace_function(vars, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{x[0] + 1.0f, x[1] * 0.5f + exp(x[2]) * 2.0f, x[2]};
  });
  const std::string cond_name = FunctionLibrary::global().add(loop.cond);
  const std::string body_name = FunctionLibrary::global().add(loop.body);
  loop.fn = trace_function({Shape({3}), Shape({3})}, [&](std::vector<Tensor>& x) {
    auto out = call_op("StatelessWhile", {scalar(0.0f), x[0], x[1]}, {cond_name, body_name, int64_t{10}});
    return std::vector<Tensor>{out[1]};
  });
  return loop;
}

TEST(HoistLoopInvariants, InvariantWorkLeavesTheBodyAsANewLoopVariable) {
  Loop loop = invariant_loop();
  FunctionGraph g = *loop.fn;
  EXPECT_EQ(rewrites(passes::hoist_loop_invariants(g)), 2);  // exp(w) and exp(w) * 2
  EXPECT_EQ(count_op(g, "Exp"), 1);
  const Node* w = find_op(g, "StatelessWhile");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->inputs.size(), 4u);
  EXPECT_EQ(w->outputs.size(), 4u);
  auto body = callee(g, "StatelessWhile", "body");
  auto cond = callee(g, "StatelessWhile", "cond");
  ASSERT_NE(body, nullptr);
  ASSERT_NE(cond, nullptr);
  EXPECT_EQ(count_op(*body, "Exp"), 0);
  EXPECT_EQ(body->num_call_args(), 4);
  EXPECT_EQ(cond->num_call_args(), 4);  // the condition takes the new loop variable, unused
  ASSERT_EQ(body->results.size(), 4u);
  EXPECT_EQ(body->results[3], (ValueRef{body->args[3], 0}));  // passed through
  Tensor x = Tensor::from_vector<float>({0.5f, -1.0f, 2.0f}),
         wv = Tensor::from_vector<float>({0.1f, 0.2f, -0.3f});
  expect_same_values(run_graph(loop.fn, {x, wv}), run_graph(std::make_shared<FunctionGraph>(g), {x, wv}));
  // Nothing more to move: a second run leaves the graph alone.
  EXPECT_EQ(rewrites(passes::hoist_loop_invariants(g)), 0);
}

TEST(HoistLoopInvariants, LoopVariablesThatChangeAndStatefulOpsStay) {
  const std::vector<Shape> vars = {Shape({}), Shape({3})};
  auto cond = trace_function(vars, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{call_op1("Less", {x[0], scalar(3.0f)})};
  });
  // acc changes every iteration: exp(acc) depends on it.
  auto body = trace_function(vars, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{x[0] + 1.0f, exp(x[1]) * 0.5f};
  });
  const std::string cond_name = FunctionLibrary::global().add(cond),
                    body_name = FunctionLibrary::global().add(body);
  auto fn = trace_function({Shape({3})}, [&](std::vector<Tensor>& x) {
    auto out = call_op("StatelessWhile", {scalar(0.0f), x[0]}, {cond_name, body_name, int64_t{10}});
    return std::vector<Tensor>{out[1]};
  });
  FunctionGraph g = *fn;
  EXPECT_EQ(rewrites(passes::hoist_loop_invariants(g)), 0);
  EXPECT_EQ(callee(g, "StatelessWhile", "body"), body);
}

TEST(HoistLoopInvariants, TheOptimizerRunsItAndKeepsTheResults) {
  Loop loop = invariant_loop();
  passes::OptimizerOptions options;
  auto optimized = passes::optimize_function(*loop.fn, options);
  ASSERT_TRUE(optimized.ok()) << optimized.status().to_string();
  EXPECT_EQ(callee(**optimized, "StatelessWhile", "body")->num_call_args(), 4);
  options.loop_optimization = false;
  auto kept = passes::optimize_function(*loop.fn, options);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(callee(**kept, "StatelessWhile", "body"), loop.body);
}

}  // namespace
}  // namespace ember
