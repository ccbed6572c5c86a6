// Backprop checks the gradients rules return against their inputs (Note [Checking gradient shapes] in
// autodiff/tape.cc). A wrong rule is made here by copying Square's declaration with another rule: the copy
// is not in the registry, so no other test sees it.
#include "ember/autodiff/tape.h"

#include <gtest/gtest.h>

#include <cmath>

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

// Runs `op` on `inputs` under a tape watching x ([3]) and returns the status of d(output 0)/dx.
Status gradient_through(const OpDef& op, TensorImpl* x, std::vector<TensorImpl*> inputs, AttrList attrs) {
  auto tape = Tape::create(false, true);
  EXPECT_TRUE(tape.ok());
  EXPECT_TRUE((*tape)->push().ok());
  (*tape)->watch(x);
  OutputList outs;
  Status call = execute_op(op, {inputs.data(), inputs.size()}, {attrs.data(), attrs.size()}, outs);
  (*tape)->pop();
  if (!call.ok()) return call;
  TensorImpl* targets[] = {outs[0].get()};
  GradSource sources[] = {GradSource{x, 0}};
  return (*tape)->gradient(targets, {}, sources).status();
}

// Square (or a copy with another rule) of [1, 2, 3], differentiated eagerly.
Status eager_gradient(const OpDef& op) {
  TensorRef x = make_tensor({3}, {1.0, 2.0, 3.0}, DType::kFloat32);
  return gradient_through(op, x.get(), {x.get()}, {});
}

::testing::AssertionResult fails_with(const Status& s, Code code, const std::string& text) {
  if (s.code() == code && s.message().find(text) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected code " << static_cast<int>(code) << " and \"" << text << "\", got " << s.to_string();
}

TEST(GradientShapeCheck, AWrongShapeFromARuleIsAnInternalErrorNamingTheOpAndBothShapes) {
  EXPECT_TRUE(
      fails_with(eager_gradient(square_with_rule(&summed_rule)), Code::kInternal,
                 "Square's gradient rule returned a gradient of float32[1] for input 0 ('x'), which is "
                 "float32[3]"));
}

TEST(GradientShapeCheck, AWrongDtypeFromARuleIsAnInternalError) {
  EXPECT_TRUE(fails_with(eager_gradient(square_with_rule(&widened_rule)), Code::kInternal,
                         "float64[3] for input 0 ('x'), which is float32[3]"));
}

TEST(GradientShapeCheck, TheRegistrysRulePasses) { EXPECT_TRUE(eager_gradient(op_def("Square")).ok()); }

// x^2 through the wrong rule, traced for [?]: the rule's [1] fits [?] while tracing.
std::shared_ptr<FunctionGraph> square_with_a_wrong_rule() {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "square_with_a_wrong_rule";
  TraceContext ctx(fn.get());
  TraceScope scope(ctx);
  TensorRef x = ctx.add_argument(DType::kFloat32, Shape({kUnknownDim}), "x");
  TensorRef y = run1(square_with_rule(&summed_rule), x.get());
  fn->results.push_back(ValueRef{y->graph_node(), y->graph_output()});
  return fn;
}

// A function's backward, and an If's, is checked again when it runs, against the call's input.
TEST(GradientShapeCheck, AFunctionsBackwardIsCheckedAgainstTheCallsInputWhenItRuns) {
  auto fn = square_with_a_wrong_rule();
  AttrList attrs;
  attrs.push_back(FunctionLibrary::global().add(fn));
  TensorRef x = make_tensor({3}, {1.0, 2.0, 3.0}, DType::kFloat32);
  EXPECT_TRUE(
      fails_with(gradient_through(op_def("PartitionedCall"), x.get(), {x.get()}, attrs), Code::kInternal,
                 "the gradient function of 'square_with_a_wrong_rule' returned a gradient of float32[1] "
                 "for input 0, which is float32[3]"));
}

TEST(GradientShapeCheck, AnIfsBackwardIsCheckedAgainstItsInputWhenItRuns) {
  auto fn = square_with_a_wrong_rule();
  const std::string name = FunctionLibrary::global().add(fn);
  AttrList attrs;
  attrs.push_back(name);
  attrs.push_back(name);
  TensorRef x = make_tensor({3}, {1.0, 2.0, 3.0}, DType::kFloat32);
  TensorRef predicate = make_tensor({}, {1.0}, DType::kBool);
  EXPECT_TRUE(
      fails_with(gradient_through(op_def("If"), x.get(), {predicate.get(), x.get()}, attrs), Code::kInternal,
                 "the gradient of If over branches 'square_with_a_wrong_rule' 'square_with_a_wrong_rule' "
                 "returned a gradient of float32[1] for input 0, which is float32[3]"));
}

// ---- Note [Tape slots and generations]

// d(Square(x))/dx on `tape`, or NaN where the gradient is None.
double square_gradient(Tape& tape, TensorImpl* y, TensorImpl* x) {
  TensorImpl* targets[] = {y};
  GradSource sources[] = {GradSource{x, 0}};
  auto grads = tape.gradient(targets, {}, sources);
  EXPECT_TRUE(grads.ok()) << grads.status().to_string();
  if (!grads.ok() || !(*grads)[0]) return std::nan("");
  return (*grads)[0]->data<float>()[0];
}

std::unique_ptr<Tape> new_tape(bool persistent) {
  auto tape = Tape::create(persistent, false);
  EXPECT_TRUE(tape.ok());
  return std::move(tape).value();
}

TEST(TapeSlots, FarMoreTapesThanSlotsKeptAfterRecordingEachOwnTheirNodesOnly) {
  std::vector<std::unique_ptr<Tape>> tapes;
  std::vector<TensorRef> xs, ys;
  for (int k = 0; k < 100; ++k) {
    tapes.push_back(new_tape(true));
    xs.push_back(make_tensor({}, {static_cast<double>(k)}, DType::kFloat32));
    ASSERT_TRUE(tapes.back()->push().ok());
    tapes.back()->watch(xs.back().get());
    ys.push_back(run1(op_def("Square"), xs.back().get()));
    tapes.back()->pop();
    EXPECT_EQ(tapes.back()->bit(), 0u);  // the slot went back
  }
  for (int k = 0; k < 100; ++k) {
    EXPECT_EQ(square_gradient(*tapes[k], ys[k].get(), xs[k].get()), 2.0 * k);
    for (int other : {(k + 1) % 100, (k + 32) % 100})  // another tape's records, maybe on the same slot
      EXPECT_TRUE(std::isnan(square_gradient(*tapes[k], ys[other].get(), xs[other].get())));
  }
}

TEST(TapeSlots, ALaterHolderOfASlotDoesNotClaimTheTensorsOfEarlierOnes) {
  TensorRef x = make_tensor({}, {3.0}, DType::kFloat32);
  auto first = new_tape(true);
  ASSERT_TRUE(first->push().ok());
  first->watch(x.get());
  first->pop();
  for (int k = 0; k < 40; ++k) {  // the slots go round, so one of these holds the first tape's
    auto later = new_tape(false);
    ASSERT_TRUE(later->push().ok());
    TensorRef y = run1(op_def("Square"), x.get());
    later->pop();
    EXPECT_TRUE(std::isnan(square_gradient(*later, y.get(), x.get())));
  }
}

TEST(TapeSlots, The33rdTapeToRecordAtOnceIsRefusedAndTheOthersGoOn) {
  TensorRef x = make_tensor({}, {2.0}, DType::kFloat32);
  std::vector<std::unique_ptr<Tape>> tapes;
  for (int k = 0; k < 32; ++k) {
    tapes.push_back(new_tape(true));
    ASSERT_TRUE(tapes.back()->push().ok());
    tapes.back()->watch(x.get());
  }
  auto extra = new_tape(false);
  Status refused = extra->push();
  EXPECT_EQ(refused.code(), Code::kResourceExhausted);
  EXPECT_NE(refused.message().find("at most 32 tapes can record at once"), std::string::npos);
  TensorRef y = run1(op_def("Square"), x.get());
  for (auto& tape : tapes) tape->pop();
  for (auto& tape : tapes) EXPECT_EQ(square_gradient(*tape, y.get(), x.get()), 4.0);
  EXPECT_TRUE(extra->push().ok());
  extra->pop();
}

}  // namespace
}  // namespace ember::autodiff
