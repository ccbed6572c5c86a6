// MatMul fusion (passes/fuse_matmul.cc, Note [Matching a MatMul chain]): what becomes a _FusedMatMul,
// what is refused because an intermediate value has another reader, and the values against the
// unoptimized graph.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/passes/pass.h"
#include "pass_testing.h"

namespace ember {
namespace {

using testing::count_op;
using testing::rewrites;
using testing::run_graph;
using testing::trace_function;

std::vector<Tensor> args_of(const std::vector<Shape>& shapes) {
  std::vector<Tensor> args;
  for (const Shape& s : shapes) {
    std::vector<float> v(s.num_elements());
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i + 5 * args.size()));
    args.push_back(Tensor::from_vector<float>(v, s));
  }
  return args;
}

// Runs the pass on a copy of `fn` (pruned after), checks the values against the unoptimized graph within
// float rounding, and returns the fused copy.
std::shared_ptr<FunctionGraph> fuse_and_compare(const std::shared_ptr<FunctionGraph>& fn,
                                                const std::vector<Shape>& shapes, int expected_chains) {
  auto fused = std::make_shared<FunctionGraph>(*fn);
  EXPECT_EQ(rewrites(passes::fuse_matmul(*fused)), expected_chains);
  rewrites(passes::prune(*fused));
  const auto args = args_of(shapes);
  const auto want = run_graph(fn, args), got = run_graph(fused, args);
  const auto optimized = run_graph(fn, args, /*optimize=*/true);  // with every other pass after it
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    const auto w = want[i].to_vector<float>(), g = got[i].to_vector<float>(),
               o = optimized[i].to_vector<float>();
    EXPECT_EQ(w.size(), g.size());
    if (w.size() != g.size() || w.size() != o.size()) continue;
    for (size_t k = 0; k < w.size(); ++k) {
      EXPECT_NEAR(g[k], w[k], 1e-5f * (1 + std::abs(w[k]))) << "result " << i << " element " << k;
      EXPECT_NEAR(o[k], w[k], 1e-5f * (1 + std::abs(w[k]))) << "result " << i << " element " << k;
    }
  }
  return fused;
}

const std::string& fused_ops(const FunctionGraph& fn) {
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i) {
    const Node& node = fn.graph.node(i);
    if (node.op->name == "_FusedMatMul")
      return std::get<std::string>(node.attrs[node.op->attr_index("fused_ops")]);
  }
  static const std::string none;
  return none;
}

TEST(FuseMatMul, BiasAddAndActivationBecomeOneNode) {
  const std::vector<Shape> shapes = {Shape({6, 5}), Shape({5, 40}), Shape({40})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{tanh(bias_add(matmul(x[0], x[1]), x[2]))};
  });
  auto fused = fuse_and_compare(fn, shapes, 1);
  EXPECT_EQ(fused_ops(*fused), "BiasAdd,Tanh");
  EXPECT_EQ(count_op(*fused, "MatMul") + count_op(*fused, "BiasAdd") + count_op(*fused, "Tanh"), 0);
}

TEST(FuseMatMul, AnAddOfARowVectorIsABiasAndTransposesCarryOver) {
  const std::vector<Shape> shapes = {Shape({5, 6}), Shape({40, 5}), Shape({40})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{relu(x[2] + matmul(x[0], x[1], true, true))};
  });
  auto fused = fuse_and_compare(fn, shapes, 1);
  EXPECT_EQ(fused_ops(*fused), "BiasAdd,Relu");
}

TEST(FuseMatMul, APreActivationReadElsewhereKeepsTheActivationApart) {
  const std::vector<Shape> shapes = {Shape({6, 5}), Shape({5, 8}), Shape({8})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    Tensor pre = bias_add(matmul(x[0], x[1]), x[2]);
    return std::vector<Tensor>{sigmoid(pre), pre * pre};
  });
  auto fused = fuse_and_compare(fn, shapes, 1);
  EXPECT_EQ(fused_ops(*fused), "BiasAdd");
  EXPECT_EQ(count_op(*fused, "Sigmoid"), 1);
}

TEST(FuseMatMul, AProductReadTwiceOrAFullAddendIsNotFused) {
  const std::vector<Shape> shapes = {Shape({6, 5}), Shape({5, 8}), Shape({8}), Shape({6, 8})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    Tensor product = matmul(x[0], x[1]);
    Tensor lstm_like = matmul(x[0], x[1] * x[1]) + x[3];  // an addend of the product's shape: no bias
    return std::vector<Tensor>{relu(bias_add(product, x[2])), product, tanh(lstm_like)};
  });
  auto fused = fuse_and_compare(fn, shapes, 0);
  EXPECT_EQ(count_op(*fused, "_FusedMatMul"), 0);
}

TEST(FuseMatMul, ChainsThroughAFusedNodeAndBatches) {
  // Two layers, the second reading the first's fused output; a batched left operand.
  const std::vector<Shape> shapes = {Shape({2, 3, 5}), Shape({5, 7}), Shape({7}), Shape({7, 4}), Shape({4})};
  auto fn = trace_function(shapes, [](std::vector<Tensor>& x) {
    Tensor h = elu(bias_add(matmul(x[0], x[1]), x[2]));
    return std::vector<Tensor>{bias_add(matmul(h, x[3]), x[4])};
  });
  auto fused = fuse_and_compare(fn, shapes, 2);
  EXPECT_EQ(count_op(*fused, "_FusedMatMul"), 2);
}

}  // namespace
}  // namespace ember
