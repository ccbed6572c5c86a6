// Sibling MatMul merging: dependent siblings stay apart (Note [Dependent siblings]) and batched left
// operands merge along their last dim; each result equals the unoptimized graph's.
#include <gtest/gtest.h>

#include <cmath>

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

std::vector<Tensor> sine_args(const std::vector<Shape>& shapes) {
  std::vector<Tensor> args;
  for (const Shape& s : shapes) {
    std::vector<float> v(s.num_elements());
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i + 3 * args.size()));
    args.push_back(Tensor::from_vector<float>(v, s));
  }
  return args;
}

// Merges a copy of `fn`, prunes it, and checks it against the unoptimized graph; returns the merge count.
int merge_and_compare(const std::shared_ptr<FunctionGraph>& fn, const std::vector<Shape>& shapes) {
  auto merged = std::make_shared<FunctionGraph>(*fn);
  StatusOr<int> n = passes::merge_sibling_matmuls(*merged);
  if (!n.ok()) {
    ADD_FAILURE() << n.status().to_string();  // the graph is left half-edited: do not run it
    return -1;
  }
  rewrites(passes::prune(*merged));
  auto args = sine_args(shapes);
  expect_same_values(run_graph(fn, args), run_graph(merged, args));
  // The whole driver too: every pass after the merge must cope with what it left.
  expect_same_values(run_graph(fn, args), run_graph(fn, args, /*optimize=*/true));
  return *n;
}

TEST(MergeMatmuls, ProductOfAProductStaysApart) {
  // x @ (x @ x): the outer product's right operand is its sibling.
  std::vector<Shape> shapes = {Shape({3, 3})};
  auto fn = trace_function(
      shapes, [](std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], matmul(x[0], x[0]))}; });
  EXPECT_EQ(merge_and_compare(fn, shapes), 0);
}

TEST(MergeMatmuls, SiblingReachedThroughAnElementwiseChainStaysApart) {
  // x @ w and x @ (w + mean(tanh(x @ w))): the second right operand depends on the first product.
  std::vector<Shape> shapes = {Shape({4, 4}), Shape({4, 2})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    Tensor first = matmul(x[0], x[1]);
    Tensor second = matmul(x[0], x[1] + reduce_mean(tanh(first)));
    return std::vector<Tensor>{first, second};
  });
  EXPECT_EQ(merge_and_compare(fn, shapes), 0);
}

TEST(MergeMatmuls, IndependentSiblingsMergeBesideADependentOne) {
  // p = x @ a and q = x @ b merge; r = x @ (a * sum(p)) depends on p and stays apart.
  std::vector<Shape> shapes = {Shape({5, 4}), Shape({4, 2}), Shape({4, 3})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    Tensor p = matmul(x[0], x[1]);
    Tensor q = matmul(x[0], x[2]);
    Tensor r = matmul(x[0], x[1] * reduce_sum(p));
    return std::vector<Tensor>{p, q, r};
  });
  EXPECT_EQ(merge_and_compare(fn, shapes), 1);
}

TEST(MergeMatmuls, TwoGroupsThatWouldCloseACycleTogetherDoNot) {
  // Group x: x @ a, x @ q with q = f(y @ p). Group y: y @ b, y @ p with b = g(x @ a). Each group alone
  // is acyclic; merging both makes each merged product wait for the other.
  std::vector<Shape> shapes = {Shape({3, 4}), Shape({3, 4}), Shape({4, 2}), Shape({4, 2})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& in) {
    const Tensor &x = in[0], &y = in[1], &a = in[2], &p = in[3];
    Tensor xa = matmul(x, a);
    Tensor yp = matmul(y, p);
    Tensor q = a + reduce_mean(yp);
    Tensor b = p * reduce_mean(xa);
    return std::vector<Tensor>{xa, matmul(x, q), matmul(y, b), yp};
  });
  EXPECT_EQ(merge_and_compare(fn, shapes), 1);  // the first group merges, the second would close a cycle
}

TEST(MergeMatmuls, BatchedLeftOperandMergesAlongTheLastDim) {
  std::vector<Shape> shapes = {Shape({2, 3, 4}), Shape({4, 5}), Shape({4, 2})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{matmul(x[0], x[1]), matmul(x[0], x[2]) + 1.0f};
  });
  EXPECT_EQ(merge_and_compare(fn, shapes), 1);
}

TEST(MergeMatmuls, BatchedTransposedLeftOperandMerges) {
  std::vector<Shape> shapes = {Shape({2, 4, 3}), Shape({4, 5}), Shape({4, 2})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{matmul(x[0], x[1], /*transpose_a=*/true),
                               matmul(x[0], x[2], /*transpose_a=*/true)};
  });
  EXPECT_EQ(merge_and_compare(fn, shapes), 1);
}

TEST(MergeMatmuls, BatchedRightOperandsStayApart) {
  std::vector<Shape> shapes = {Shape({3, 4}), Shape({2, 4, 5}), Shape({2, 4, 2})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{matmul(x[0], x[1]), matmul(x[0], x[2])};
  });
  EXPECT_EQ(merge_and_compare(fn, shapes), 0);
  EXPECT_EQ(count_op(*fn, "MatMul"), 2);
}

}  // namespace
}  // namespace ember
