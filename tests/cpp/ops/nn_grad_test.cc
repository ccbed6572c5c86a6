// Gradient rules of the nn ops (ops/nn.cc) against finite differences. The two-output cross-entropy ops
// are checked with a gradient arriving at both outputs, so the rules' dependence on the backprop output
// (what second derivatives go through) is checked too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/grad_testing.h"
#include "tests/cpp/ops/grad_trace_check.h"

namespace ember {
namespace {

using testing::make_tensor;
using Dims = std::vector<int64_t>;

TensorRef rand(const Dims& dims, unsigned seed = 1, double lo = -2, double hi = 2) {
  return testing::random_tensor(dims, seed, lo, hi);
}

AttrValue i64(int64_t v) { return v; }

TEST(NnGrad, Softmax) {
  EXPECT_GRADIENT_OK("Softmax", {rand({2, 4})}, {i64(-1)});
  EXPECT_GRADIENT_OK("Softmax", {rand({2, 4})}, {i64(0)});
  EXPECT_GRADIENT_OK("Softmax", {rand({2, 3, 4})}, {i64(1)});
  EXPECT_GRADIENT_OK("Softmax", {rand({5})}, {i64(0)});
}

TEST(NnGrad, IsotonicRegression) {
  // Random rows pool into segments with distinct means, away from the ties where the pooling changes.
  EXPECT_GRADIENT_OK("IsotonicRegression", {rand({3, 6})}, {DType::kFloat64});
  EXPECT_GRADIENT_OK("IsotonicRegression", {rand({2, 3, 4})}, {DType::kFloat64});
}

TEST(NnGrad, LogSoftmax) {
  EXPECT_GRADIENT_OK("LogSoftmax", {rand({2, 4})}, {i64(-1)});
  EXPECT_GRADIENT_OK("LogSoftmax", {rand({3, 2})}, {i64(0)});
  EXPECT_GRADIENT_OK("LogSoftmax", {rand({2, 3, 4})}, {i64(-2)});
}

TEST(NnGrad, BiasAdd) {
  EXPECT_GRADIENT_OK("BiasAdd", {rand({2, 3}, 1), rand({3}, 2)}, {std::string("NHWC")});
  EXPECT_GRADIENT_OK("BiasAdd", {rand({2, 4, 3}, 1), rand({3}, 2)}, {std::string("NHWC")});
  EXPECT_GRADIENT_OK("BiasAdd", {rand({2, 3, 4, 2}, 1), rand({3}, 2)}, {std::string("NCHW")});
  EXPECT_GRADIENT_OK("BiasAdd", {rand({2, 3}, 1), rand({3}, 2)}, {std::string("NCHW")});
}

TEST(NnGrad, L2Loss) {
  EXPECT_GRADIENT_OK("L2Loss", {rand({2, 3})}, {});
  EXPECT_GRADIENT_OK("L2Loss", {rand({})}, {});
}

TEST(NnGrad, SigmoidCrossEntropyWithLogits) {
  // Labels get a gradient too (-logits), as in TensorFlow.
  EXPECT_GRADIENT_OK("SigmoidCrossEntropyWithLogits", {rand({2, 3}, 1, 0, 1), rand({2, 3}, 2, -4, 4)}, {});
  EXPECT_GRADIENT_OK("SigmoidCrossEntropyWithLogits", {rand({4}, 3, 0, 1), rand({4}, 4, -30, 30)}, {});
}

TEST(NnGrad, SoftmaxCrossEntropyWithLogits) {
  // Labels as distributions (rows summing to 1) and as arbitrary values: the gradient is exact for both.
  TensorRef dist = make_tensor({2, 3}, {0.2, 0.5, 0.3, 1, 0, 0});
  EXPECT_GRADIENT_OK("SoftmaxCrossEntropyWithLogits", {rand({2, 3}), dist}, {});
  EXPECT_GRADIENT_OK("SoftmaxCrossEntropyWithLogits", {rand({2, 4}, 1), rand({2, 4}, 2, 0, 1)}, {});
  EXPECT_GRADIENT_OK("SoftmaxCrossEntropyWithLogits", {rand({2, 2, 3}, 1), rand({2, 2, 3}, 2, 0, 1)}, {});
  EXPECT_GRADIENT_OK("SoftmaxCrossEntropyWithLogits", {rand({5}, 1), rand({5}, 2, 0, 1)}, {});
}

TEST(NnGrad, SparseSoftmaxCrossEntropyWithLogits) {
  EXPECT_GRADIENT_OK("SparseSoftmaxCrossEntropyWithLogits",
                     {rand({3, 4}), make_tensor({3}, {0, 3, 1}, DType::kInt32)}, {});
  EXPECT_GRADIENT_OK("SparseSoftmaxCrossEntropyWithLogits",
                     {rand({2, 2, 3}), make_tensor({2, 2}, {2, 0, 1, 1}, DType::kInt64)}, {});
  EXPECT_GRADIENT_OK("SparseSoftmaxCrossEntropyWithLogits", {rand({4}), make_tensor({}, {2}, DType::kInt32)},
                     {});
}

// The rules differentiated again on a tape (Hessian-vector products), against finite differences of the
// rules. The cross-entropy rules are built from Softmax and OneHot, not the saved backprop output, so this
// is where that matters.
TEST(NnGrad, SecondOrder) {
  EXPECT_SECOND_ORDER_OK("Softmax", {rand({2, 4})}, {i64(-1)});
  EXPECT_SECOND_ORDER_OK("Softmax", {rand({3, 2})}, {i64(0)});
  EXPECT_SECOND_ORDER_OK("LogSoftmax", {rand({2, 4})}, {i64(-1)});
  EXPECT_SECOND_ORDER_OK("LogSoftmax", {rand({2, 3, 2})}, {i64(1)});
  EXPECT_SECOND_ORDER_OK("L2Loss", {rand({2, 3})}, {});
  EXPECT_SECOND_ORDER_OK("BiasAdd", {rand({2, 3, 2}, 1), rand({3}, 2)}, {std::string("NCHW")});
  EXPECT_SECOND_ORDER_OK("SigmoidCrossEntropyWithLogits", {rand({2, 3}, 1, 0, 1), rand({2, 3}, 2)}, {});
  EXPECT_SECOND_ORDER_OK("SoftmaxCrossEntropyWithLogits", {rand({2, 4}, 1), rand({2, 4}, 2, 0, 1)}, {});
  EXPECT_SECOND_ORDER_OK("SparseSoftmaxCrossEntropyWithLogits",
                         {rand({3, 4}), make_tensor({3}, {0, 3, 1}, DType::kInt32)}, {});
}

TEST(NnGrad, RulesTrace) {
  EXPECT_TRACED_GRADIENT_OK("Softmax", {rand({2, 3, 4})}, {i64(1)});
  EXPECT_TRACED_GRADIENT_OK("LogSoftmax", {rand({2, 4})}, {i64(-1)});
  EXPECT_TRACED_GRADIENT_OK("BiasAdd", {rand({2, 3, 4, 2}, 1), rand({3}, 2)}, {std::string("NCHW")});
  EXPECT_TRACED_GRADIENT_OK("L2Loss", {rand({2, 3})}, {});
  EXPECT_TRACED_GRADIENT_OK("SigmoidCrossEntropyWithLogits", {rand({2, 3}, 1, 0, 1), rand({2, 3}, 2)}, {});
  EXPECT_TRACED_GRADIENT_OK("SoftmaxCrossEntropyWithLogits", {rand({2, 4}, 1), rand({2, 4}, 2, 0, 1)}, {});
  EXPECT_TRACED_GRADIENT_OK("SparseSoftmaxCrossEntropyWithLogits",
                            {rand({2, 2, 3}), make_tensor({2, 2}, {2, 0, 1, 1}, DType::kInt64)}, {});
}

TEST(NnGrad, SparseLabelsGetNoGradient) {
  const OpDef& op = op_def("SparseSoftmaxCrossEntropyWithLogits");
  TensorRef x = rand({2, 3}), labels = make_tensor({2}, {0, 2}, DType::kInt32);
  TensorImpl* in[] = {x.get(), labels.get()};
  OutputList outs;
  ASSERT_TRUE(run_kernel(op, in, {}, outs).ok());
  TensorRef dloss = make_tensor({2}, {1, 1}), dbackprop = make_tensor({2, 3}, std::vector<double>(6, 0.0));
  TensorImpl* out[] = {outs[0].get(), outs[1].get()};
  TensorImpl* dys[] = {dloss.get(), dbackprop.get()};
  GradContext ctx;
  ctx.op = &op;
  ctx.inputs = in;
  ctx.outputs = out;
  ctx.output_grads = dys;
  ctx.input_grads.resize(2);
  op.grad(ctx);
  ASSERT_TRUE(ctx.input_grads[0]);
  EXPECT_FALSE(ctx.input_grads[1]);
  // With only the loss used, the logits' gradient is the op's own backprop output.
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(ctx.input_grads[0]->data<double>()[i], outs[1]->data<double>()[i], 1e-12) << i;
}

TEST(NnGrad, EveryNnOpHasARule) {
  for (const char* name : {"Softmax", "LogSoftmax", "BiasAdd", "L2Loss", "SigmoidCrossEntropyWithLogits",
                           "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"})
    EXPECT_NE(op_def(name).grad, nullptr) << name;
}

}  // namespace
}  // namespace ember
