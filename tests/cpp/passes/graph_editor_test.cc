// GraphEditor: an edit that makes a cycle is reported as an internal error, never a crash; a node a pass
// adds takes the devices of the node it replaces or derives from, and passes join only nodes that share
// their devices.
#include <gtest/gtest.h>

#include "ember/ops/registry.h"
#include "ember/passes/optimizer.h"
#include "ember/passes/pass.h"
#include "ember/runtime/executor.h"
#include "pass_testing.h"

namespace ember {
namespace {

using testing::trace_function;

std::shared_ptr<FunctionGraph> exp_then_sin() {
  return trace_function({Shape({2})},
                        [](std::vector<Tensor>& x) { return std::vector<Tensor>{sin(exp(x[0]))}; });
}

int32_t find_node(const FunctionGraph& fn, std::string_view op) {
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i)
    if (fn.graph.node(i).op->name == op) return i;
  return -1;
}

TEST(GraphEditor, ForwardingIntoItsOwnConsumerIsAnInternalError) {
  for (bool prune : {false, true}) {
    FunctionGraph g = *exp_then_sin();
    int32_t e = find_node(g, "Exp"), s = find_node(g, "Sin");
    ASSERT_GE(e, 0);
    ASSERT_GE(s, 0);
    passes::GraphEditor editor(g);
    editor.forward(ValueRef{e, 0}, ValueRef{s, 0});  // Sin now reads itself
    Status status = editor.finish(prune);
    EXPECT_EQ(status.code(), Code::kInternal) << status.to_string();
    EXPECT_NE(status.message().find("cycle"), std::string::npos) << status.message();
  }
}

TEST(GraphEditor, ControlEdgeCycleIsAnInternalError) {
  FunctionGraph g = *exp_then_sin();
  int32_t e = find_node(g, "Exp"), s = find_node(g, "Sin");
  g.graph.add_control_input(e, s);  // Exp waits for Sin, which reads Exp
  passes::GraphEditor editor(g);
  Status status = editor.finish(/*prune=*/false);
  EXPECT_EQ(status.code(), Code::kInternal) << status.to_string();
}

TEST(GraphEditor, CompiledFunctionReportsAnOptimizerFailure) {
  // A cyclic traced graph makes the first pass's finish() fail; the call must return that error.
  auto fn = exp_then_sin();
  fn->graph.add_control_input(find_node(*fn, "Exp"), find_node(*fn, "Sin"));
  passes::OptimizerOptions options;
  EXPECT_FALSE(passes::optimize_function(*fn, options).ok());
  CompiledFunction compiled(fn, options);
  Tensor x = Tensor::from_vector<float>({1, 2});
  TensorImpl* args[] = {x.impl()};
  OutputList results;
  Status status = compiled.run(args, results);
  EXPECT_EQ(status.code(), Code::kInternal) << status.to_string();
}

constexpr char kRequested[] = "/device:CPU:1";
constexpr char kAssigned[] = "/job:localhost/replica:0/task:0/device:CPU:1";

void place(FunctionGraph& fn, int32_t node) {
  fn.graph.mutable_node(node).requested_device = kRequested;
  fn.graph.mutable_node(node).assigned_device = kAssigned;
}

void expect_placed(const Node& node) {
  EXPECT_EQ(node.requested_device, kRequested) << node.name;
  EXPECT_EQ(node.assigned_device, kAssigned) << node.name;
}

TEST(GraphEditor, AnAddedNodeTakesItsOriginsLineAndDevices) {
  FunctionGraph g = *exp_then_sin();
  const int32_t e = find_node(g, "Exp");
  place(g, e);
  g.graph.mutable_node(e).location = SourceLocation{"model.py", 42, "f"};
  passes::GraphEditor editor(g);
  const Node exp_node = g.graph.node(e);
  const ValueRef input[] = {ValueRef{e, 0}};
  const int32_t added =
      editor.add_node(op_def("Cos"), input, {}, exp_node.outputs, passes::NodeOrigin::of(exp_node));
  expect_placed(g.graph.node(added));
  EXPECT_EQ(g.graph.node(added).location.to_string(), "model.py:42");
  const int32_t bare = editor.add_node(op_def("Cos"), input, {}, exp_node.outputs, passes::NodeOrigin{});
  EXPECT_TRUE(g.graph.node(bare).requested_device.empty());
}

TEST(GraphEditor, ComposedTransposesKeepTheirDevice) {
  // transpose(transpose(x, p), q) reads x with one new permutation constant, made on the outer's device.
  auto fn = testing::trace_function({Shape({2, 3, 4})}, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{transpose(transpose(x[0], {1, 2, 0}), {1, 2, 0})};
  });
  const int32_t outer =
      fn->graph.node(fn->results[0].node).op->name == "Transpose" ? fn->results[0].node : -1;
  ASSERT_GE(outer, 0);
  place(*fn, outer);
  ASSERT_TRUE(passes::simplify_arithmetic(*fn).ok());
  const Node& transpose = fn->graph.node(fn->results[0].node);
  ASSERT_EQ(transpose.op->name, "Transpose");
  expect_placed(transpose);
  expect_placed(fn->graph.node(transpose.inputs[1].node));  // the new permutation
}

TEST(GraphEditor, ElementwiseFusionJoinsOnlyNodesOnOneDevice) {
  auto apart = exp_then_sin();
  place(*apart, find_node(*apart, "Sin"));
  EXPECT_EQ(passes::fuse_elementwise(*apart).value(), 0);
  auto together = exp_then_sin();
  place(*together, find_node(*together, "Exp"));
  place(*together, find_node(*together, "Sin"));
  EXPECT_EQ(passes::fuse_elementwise(*together).value(), 1);
  const int32_t fused = find_node(*together, "FusedElementwise");
  ASSERT_GE(fused, 0);
  expect_placed(together->graph.node(fused));
}

TEST(GraphEditor, SiblingProductsOnOtherDevicesStayApart) {
  auto trace = [] {
    return testing::trace_function({Shape({5, 4}), Shape({4, 2}), Shape({4, 3})}, [](std::vector<Tensor>& x) {
      return std::vector<Tensor>{matmul(x[0], x[1]), matmul(x[0], x[2])};
    });
  };
  auto apart = trace();
  place(*apart, apart->results[1].node);
  EXPECT_EQ(passes::merge_sibling_matmuls(*apart).value(), 0);
  auto together = trace();
  place(*together, together->results[0].node);
  place(*together, together->results[1].node);
  EXPECT_EQ(passes::merge_sibling_matmuls(*together).value(), 1);
  for (int32_t i = 0; i < together->graph.num_nodes(); ++i)
    if (together->graph.node(i).name.find("/merged") != std::string::npos ||
        together->graph.node(i).name.find("/split") != std::string::npos)
      expect_placed(together->graph.node(i));
}

}  // namespace
}  // namespace ember
