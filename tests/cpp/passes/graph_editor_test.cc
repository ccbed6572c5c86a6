// GraphEditor: an edit that makes a cycle is reported as an internal error, never a crash.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ember
