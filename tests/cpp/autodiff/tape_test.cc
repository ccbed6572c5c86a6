// Backprop checks the gradients rules return against their inputs (Note [Checking gradient shapes] in
// autodiff/tape.cc). A wrong rule is made here by copying Square's declaration with another rule: the copy
// is not in the registry, so no other test sees it.
#include "ember/autodiff/tape.h"

#include <gtest/gtest.h>

#include "ember/ops/registry.h"
#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"
#include "tests/cpp/ops/grad_check.h"

namespace ember::autodiff {
namespace {

using ::ember::testing::make_tensor;
using namespace ::ember::gradient;  // NOLINT(google-build-using-namespace): a rule's arithmetic

// d(x^2)/dx summed over axis 0 (keeping it): [1] where the input is [n].
void summed_rule(GradContext& ctx) {
  ctx.set(0, sum(ctx.grad() * ctx.input(0) * 2.0, {0}, /*keepdims=*/true));
}
// The right values in float64 where the input is float32.
void widened_rule(GradContext& ctx) { ctx.set(0, cast(ctx.grad() * ctx.input(0) * 2.0, DType::kFloat64)); }

const OpDef& square_with_rule(GradFn rule) {
  static std::vector<std::unique_ptr<OpDef>> defs;
  for (const auto& d : defs)
    if (d->grad == rule) return *d;
  defs.push_back(std::make_unique<OpDef>(op_def("Square")));
  defs.back()->grad = rule;
  return *defs.back();
}

TensorRef run1(const OpDef& op, TensorImpl* x) {
  OutputList outs;
  TensorImpl* inputs[] = {x};
  Status s = execute_op(op, inputs, {}, outs);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return outs[0];
}

Status eager_gradient(const OpDef& op) {
  TensorRef x = make_tensor({3}, {1.0, 2.0, 3.0}, DType::kFloat32);
  auto tape = Tape::create(false, true);
  EXPECT_TRUE(tape.ok());
  (*tape)->push();
  (*tape)->watch(x.get());
  TensorRef y = run1(op, x.get());
  (*tape)->pop();
  TensorImpl* targets[] = {y.get()};
  GradSource sources[] = {GradSource{x.get(), 0}};
  return (*tape)->gradient(targets, {}, sources).status();
}

TEST(GradientShapeCheck, AWrongShapeFromARuleIsAnInternalErrorNamingTheOpAndBothShapes) {
  Status s = eager_gradient(square_with_rule(&summed_rule));
  ASSERT_EQ(s.code(), Code::kInternal) << s.to_string();
  EXPECT_NE(s.message().find("Square's gradient rule returned a gradient of float32[1] for input 0 ('x'), "
                             "which is float32[3]"),
            std::string::npos)
      << s.message();
}

TEST(GradientShapeCheck, AWrongDtypeFromARuleIsAnInternalError) {
  Status s = eager_gradient(square_with_rule(&widened_rule));
  ASSERT_EQ(s.code(), Code::kInternal) << s.to_string();
  EXPECT_NE(s.message().find("float64[3] for input 0 ('x'), which is float32[3]"), std::string::npos)
      << s.message();
}

TEST(GradientShapeCheck, TheRegistrysRulePasses) { EXPECT_TRUE(eager_gradient(op_def("Square")).ok()); }

// Traced with an unknown dim, the wrong rule's [1] fits [?]; the function's backward is checked again when
// it runs, against the call's input.
TEST(GradientShapeCheck, AFunctionsBackwardIsCheckedAgainstTheCallsInputWhenItRuns) {
  const OpDef& wrong = square_with_rule(&summed_rule);
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "square_with_a_wrong_rule";
  {
    TraceContext ctx(fn.get());
    TraceScope scope(ctx);
    TensorRef x = ctx.add_argument(DType::kFloat32, Shape({kUnknownDim}), "x");
    TensorRef y = run1(wrong, x.get());
    fn->results.push_back(ValueRef{y->graph_node(), y->graph_output()});
  }
  AttrList attrs;
  attrs.push_back(FunctionLibrary::global().add(fn));
  TensorRef x = make_tensor({3}, {1.0, 2.0, 3.0}, DType::kFloat32);
  auto tape = Tape::create(false, true);
  ASSERT_TRUE(tape.ok());
  (*tape)->push();
  (*tape)->watch(x.get());
  OutputList outs;
  TensorImpl* inputs[] = {x.get()};
  Status call = execute_op(op_def("PartitionedCall"), inputs, {attrs.data(), attrs.size()}, outs);
  (*tape)->pop();
  ASSERT_TRUE(call.ok()) << call.to_string();
  TensorImpl* targets[] = {outs[0].get()};
  GradSource sources[] = {GradSource{x.get(), 0}};
  Status s = (*tape)->gradient(targets, {}, sources).status();
  ASSERT_EQ(s.code(), Code::kInternal) << s.to_string();
  EXPECT_NE(s.message().find("the gradient function of 'square_with_a_wrong_rule' returned a gradient of "
                             "float32[1] for input 0, which is float32[3]"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace ember::autodiff
