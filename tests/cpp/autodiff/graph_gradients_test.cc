// graph_gradients (tf.gradients): gradients of values a trace built with no tape recording, added to the
// same trace and computed when the function runs.
#include "ember/autodiff/graph_gradients.h"

#include <gtest/gtest.h>

#include "ember/ops/registry.h"
#include "ember/trace/trace_context.h"
#include "tests/cpp/ops/grad_check.h"

namespace ember::autodiff {
namespace {

using ::ember::testing::make_tensor;

TensorRef run1(const char* op, TensorImpl* x) {
  OutputList outs;
  TensorImpl* inputs[] = {x};
  Status s = execute_op(op_def(op), inputs, {}, outs);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return outs[0];
}

// f(x) = [d(x^4)/dx, d(x^4)/dx with x^2 stopped (unconnected: the function returns x instead)].
std::shared_ptr<FunctionGraph> quartic_gradients() {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "quartic_gradients";
  TraceContext ctx(fn.get());
  TraceScope scope(ctx);
  TensorRef x = ctx.add_argument(DType::kFloat64, Shape({3}), "x");
  TensorRef squared = run1("Square", x.get());
  TensorRef y = run1("Square", squared.get());
  TensorImpl* ys[] = {y.get()};
  GradSource xs[] = {GradSource{x.get(), 0}};
  auto grads = graph_gradients(ys, {}, xs, {});
  EXPECT_TRUE(grads.ok()) << grads.status().to_string();
  TensorImpl* stops[] = {squared.get()};
  auto stopped = graph_gradients(ys, {}, xs, stops);
  EXPECT_TRUE(stopped.ok()) << stopped.status().to_string();
  EXPECT_FALSE((*stopped)[0]);
  fn->results.push_back(ValueRef{(*grads)[0]->graph_node(), (*grads)[0]->graph_output()});
  return fn;
}

TEST(GraphGradients, DifferentiatesNodesTracedWithoutATape) {
  auto fn = quartic_gradients();  // the library holds functions weakly
  AttrList attrs;
  attrs.push_back(FunctionLibrary::global().add(fn));
  TensorRef x = make_tensor({3}, {1.0, 2.0, -0.5});
  TensorImpl* inputs[] = {x.get()};
  OutputList outs;
  Status s = execute_op(op_def("PartitionedCall"), inputs, {attrs.data(), attrs.size()}, outs);
  ASSERT_TRUE(s.ok()) << s.to_string();
  const double* got = outs[0]->data<double>();
  EXPECT_DOUBLE_EQ(got[0], 4.0);
  EXPECT_DOUBLE_EQ(got[1], 32.0);
  EXPECT_DOUBLE_EQ(got[2], -0.5);
}

TEST(GraphGradients, EagerlyItFailsAsTensorFlowDoes) {
  TensorRef x = make_tensor({}, {1.0});
  TensorImpl* ys[] = {x.get()};
  GradSource xs[] = {GradSource{x.get(), 0}};
  Status s = graph_gradients(ys, {}, xs, {}).status();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("tf.gradients is not supported when eager execution is enabled"),
            std::string::npos);
}

}  // namespace
}  // namespace ember::autodiff
