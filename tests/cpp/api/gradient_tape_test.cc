#include "ember/api/gradient_tape.h"

#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

TEST(CppGradientTape, NestedTapesGiveTheSecondDerivative) {
  Tensor x(3.0f);
  GradientTape outer;
  outer.watch(x);
  GradientTape inner;
  inner.watch(x);
  Tensor y = x * x;
  inner.stop();
  Tensor dy_dx = inner.gradient(y, {x})[0];
  outer.stop();
  Tensor d2y_dx2 = outer.gradient(dy_dx, {x})[0];
  EXPECT_EQ(dy_dx.item<float>(), 6.0f);
  EXPECT_EQ(d2y_dx2.item<float>(), 2.0f);
}

TEST(CppGradientTape, TrainableVariablesAreWatchedAndTrainingConverges) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor y = Tensor::from_vector<float>({1, 2}, {2, 1});
  Variable w(Tensor::from_vector<float>({0.f, 0.f}, {2, 1}), "w");
  float first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    GradientTape tape;
    Tensor loss = reduce_mean(square(matmul(x, w.read()) - y));
    tape.stop();
    Tensor dw = tape.gradient(loss, std::vector<Variable>{w})[0];
    ASSERT_TRUE(dw.defined());
    w.assign_sub(dw * 0.05f);
    (step == 0 ? first : last) = loss.item<float>();
  }
  EXPECT_LT(last, first * 0.01f);
}

TEST(CppGradientTape, DifferentiatesThroughStagedFunctions) {
  auto cube = function([](const Tensor& t) { return t * t * t; }, "cube");
  Tensor x(2.0f);
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor staged = cube(x);
  Tensor eager = x * x * x;
  tape.stop();
  EXPECT_EQ(tape.gradient(staged, {x})[0].item<float>(), 12.0f);
  EXPECT_EQ(tape.gradient(eager, {x})[0].item<float>(), 12.0f);
}

TEST(CppGradientTape, UnconnectedSourcesAreUndefinedAndReuseIsAnError) {
  Tensor x(1.0f), z(5.0f);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * 2.0f;
  tape.stop();
  auto grads = tape.gradient(y, {x, z});
  EXPECT_EQ(grads[0].item<float>(), 2.0f);
  EXPECT_FALSE(grads[1].defined());
  EXPECT_THROW(tape.gradient(y, {x}), StatusError);
}

TEST(CppGradientTape, PersistentTapeRecordsGradientsTakenWhileItRecords) {
  // As TensorFlow: a gradient taken inside a persistent tape's block is recorded by that tape, so it can be
  // differentiated again by the same tape (x^3 at 3: 27, 18, 6).
  Tensor x(3.0f);
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor y = x * x * x;
  Tensor dy = tape.gradient(y, {x})[0];
  Tensor d2 = tape.gradient(dy, {x})[0];
  tape.stop();
  Tensor d3 = tape.gradient(d2, {x})[0];
  EXPECT_EQ(dy.item<float>(), 27.0f);
  EXPECT_EQ(d2.item<float>(), 18.0f);
  EXPECT_EQ(d3.item<float>(), 6.0f);
}

}  // namespace
}  // namespace ember
