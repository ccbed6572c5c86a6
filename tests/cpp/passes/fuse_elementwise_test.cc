// Element-wise fusion on traced graphs: which nodes fuse, that the result stays a valid topologically
// sorted graph, and that the fused function computes what the same body computes eagerly.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "ember/ember.h"
#include "ember/passes/pass.h"
#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"
#include "pass_testing.h"

namespace ember::passes {
namespace {

using Body = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::shared_ptr<FunctionGraph> trace(const std::vector<TensorSpec>& args, const Body& body) {
  return testing::trace_function(args, body);
}

// Fuses a copy of `fn`, then prunes the members the fused nodes replaced.
std::shared_ptr<FunctionGraph> fused_copy(const FunctionGraph& fn, int* groups = nullptr) {
  auto copy = std::make_shared<FunctionGraph>(fn);
  int fused = testing::rewrites(fuse_elementwise(*copy));
  if (groups != nullptr) *groups = fused;
  testing::rewrites(prune(*copy));
  return copy;
}

void expect_topologically_sorted(const FunctionGraph& fn) {
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i) {
    for (ValueRef in : fn.graph.node(i).inputs) EXPECT_LT(in.node, i) << fn.graph.to_text();
    for (int32_t c : fn.graph.node(i).control_inputs) EXPECT_LT(c, i) << fn.graph.to_text();
  }
}

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
  std::vector<float> values(shape.num_elements());
  for (float& v : values) v = dist(gen);
  return Tensor::from_vector<float>(values, shape);
}

// Runs the fused graph and compares with the body run eagerly on the same arguments.
void expect_same_as_eager(const FunctionGraph& fused, const std::vector<TensorSpec>& args, const Body& body) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < args.size(); ++i)
    inputs.push_back(random_tensor(args[i].shape, static_cast<uint32_t>(i + 1)));
  std::vector<Tensor> expected = body(inputs);
  std::vector<Tensor> results =
      testing::run_compiled(CompiledFunction(std::make_shared<FunctionGraph>(fused)), inputs);
  ASSERT_EQ(results.size(), expected.size());
  for (size_t j = 0; j < expected.size(); ++j) {
    const Tensor& got = results[j];
    ASSERT_EQ(got.shape(), expected[j].shape());
    std::vector<float> e = expected[j].to_vector<float>(), g = got.to_vector<float>();
    for (size_t i = 0; i < e.size(); ++i)
      ASSERT_NEAR(g[i], e[i], 1e-5f * (1 + std::abs(e[i]))) << j << "/" << i;
  }
}

TEST(FuseElementwise, ChainBecomesOneNode) {
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({4, 3})}};
  Body body = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{tanh(x[0] * 2.0f + 1.0f) - x[0]};
  };
  auto fn = trace(args, body);
  int groups = 0;
  auto fused = fused_copy(*fn, &groups);
  EXPECT_EQ(groups, 1);
  EXPECT_EQ(
      fused->graph.to_text(),
      "x0 = Placeholder() {dtype=float32, shape=[4,3], unknown_rank=false} -> float32[4,3]\n"
      "Const = Const() {value=<float32[]>} -> float32[]\n"
      "Const_1 = Const() {value=<float32[]>} -> float32[]\n"
      "fused/Mul = FusedElementwise(x0:0, Const:0, Const_1:0) {program=[2,2,0,1,2,0,3,2,1,13,4,-1,2,1,5,0], "
      "results=[6], shape=[4,3]} -> float32[4,3]\n");
  expect_topologically_sorted(*fused);
  expect_same_as_eager(*fused, args, body);
}

TEST(FuseElementwise, DagWithSharedInputBecomesOneNode) {
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({5000})}, {DType::kFloat32, Shape({5000})}};
  Body body = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{x[0] * x[1] + sin(x[0])}; };
  auto fused = fused_copy(*trace(args, body));
  EXPECT_EQ(testing::count_op(*fused, "FusedElementwise"), 1);
  EXPECT_EQ(
      testing::count_op(*fused, "Mul") + testing::count_op(*fused, "Sin") + testing::count_op(*fused, "Add"),
      0);
  expect_same_as_eager(*fused, args, body);
}

TEST(FuseElementwise, ValuesUsedOutsideBecomeOutputs) {
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({3, 3})}};
  // a is returned and read by MatMul; b only inside; the group's last value is returned too.
  Body body = [](const std::vector<Tensor>& x) {
    Tensor a = exp(x[0]);
    Tensor b = a * x[0];
    Tensor c = sigmoid(b) + a;
    return std::vector<Tensor>{a, c, matmul(a, x[0])};
  };
  auto fused = fused_copy(*trace(args, body));
  ASSERT_EQ(testing::count_op(*fused, "FusedElementwise"), 1);
  for (int32_t i = 0; i < fused->graph.num_nodes(); ++i) {
    const Node& node = fused->graph.node(i);
    if (node.op->name == "FusedElementwise") EXPECT_EQ(node.outputs.size(), 2u) << fused->graph.to_text();
  }
  expect_topologically_sorted(*fused);
  expect_same_as_eager(*fused, args, body);
}

TEST(FuseElementwise, NeverFusesAcrossAPathThatLeavesTheGroup) {
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({4, 4})}};
  // exp feeds both MatMul and the add that consumes MatMul: exp cannot join add and sin without making
  // the fused node both feed and consume the MatMul.
  Body body = [](const std::vector<Tensor>& x) {
    Tensor a = exp(x[0]);
    Tensor m = matmul(a, x[0]);
    return std::vector<Tensor>{sin(a + m)};
  };
  auto fused = fused_copy(*trace(args, body));
  EXPECT_EQ(testing::count_op(*fused, "FusedElementwise"), 1);
  EXPECT_EQ(testing::count_op(*fused, "Exp"), 1);
  EXPECT_EQ(testing::count_op(*fused, "MatMul"), 1);
  expect_topologically_sorted(*fused);
  expect_same_as_eager(*fused, args, body);

  // The same danger between two groups that a later node would join: neg(x) and square(x) each feed the
  // final add, but square also feeds a MatMul that feeds neg's branch.
  Body diamond = [](const std::vector<Tensor>& x) {
    Tensor s = square(x[0]);
    Tensor m = matmul(s, x[0]);
    Tensor n = negative(m) * 2.0f;
    return std::vector<Tensor>{abs(s) + n};
  };
  auto fused2 = fused_copy(*trace(args, diamond));
  expect_topologically_sorted(*fused2);
  expect_same_as_eager(*fused2, args, diamond);
}

TEST(FuseElementwise, TwoConvexGroupsThatWouldFeedEachOtherDoNotBothFuse) {
  // A = {a1, a2} on [4], B = {b1, b2, b3} on [3, 4]. Each is convex, but a1 -> b1 and b2 -> sum -> a2:
  // contracted, A feeds B and B feeds A. One of them must stay unfused.
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({4})}, {DType::kFloat32, Shape({3, 4})}};
  Body body = [](const std::vector<Tensor>& x) {
    Tensor a1 = exp(x[0] * 0.5f);
    Tensor b1 = a1 + x[1];
    Tensor b2 = sin(x[1]) * 3.0f;
    Tensor b3 = b1 * b2;
    Tensor a2 = a1 * reduce_sum(b2, {0});
    return std::vector<Tensor>{a2, b3};
  };
  auto fused = fused_copy(*trace(args, body));
  EXPECT_GE(testing::count_op(*fused, "FusedElementwise"), 1);
  expect_topologically_sorted(*fused);
  expect_same_as_eager(*fused, args, body);
}

TEST(FuseElementwise, NonFusibleOpsSplitChains) {
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({8, 8})}};
  Body body = [](const std::vector<Tensor>& x) {
    Tensor h = relu(x[0] * 0.5f + 0.25f);
    return std::vector<Tensor>{tanh(matmul(h, h) - 1.0f) * 3.0f};
  };
  int groups = 0;
  auto fused = fused_copy(*trace(args, body), &groups);
  EXPECT_EQ(groups, 2);
  EXPECT_EQ(testing::count_op(*fused, "FusedElementwise"), 2);
  EXPECT_EQ(testing::count_op(*fused, "MatMul"), 1);
  expect_same_as_eager(*fused, args, body);
}

TEST(FuseElementwise, GroupsKeepOneDomainAndBroadcastInputsIn) {
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({300, 40})}, {DType::kFloat32, Shape({40})}};
  // The bias chain runs on [40], the activation on [300, 40] with the bias broadcast into it.
  Body body = [](const std::vector<Tensor>& x) {
    Tensor bias = x[1] * 2.0f + 1.0f;
    return std::vector<Tensor>{relu(x[0] + bias) * x[1]};
  };
  int groups = 0;
  auto fused = fused_copy(*trace(args, body), &groups);
  EXPECT_EQ(groups, 2);
  EXPECT_EQ(testing::count_op(*fused, "FusedElementwise"), 2);
  expect_same_as_eager(*fused, args, body);
}

TEST(FuseElementwise, LeavesUnknownRanksAndSingleOpsAlone) {
  std::vector<TensorSpec> unknown{{DType::kFloat32, Shape::unknown_rank()}};
  auto fn =
      trace(unknown, [](const std::vector<Tensor>& x) { return std::vector<Tensor>{exp(x[0]) + 1.0f}; });
  std::string before = fn->graph.to_text();
  EXPECT_EQ(testing::rewrites(fuse_elementwise(*fn)), 0);
  EXPECT_EQ(fn->graph.to_text(), before);

  std::vector<TensorSpec> known{{DType::kFloat32, Shape({3, 2})}};
  auto single = trace(known, [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{reduce_sum(exp(x[0]), {0}) + 1.0f};  // exp alone on [3, 2], add alone on [2]
  });
  EXPECT_EQ(testing::rewrites(fuse_elementwise(*single)), 0);
  // A single op does fuse with a reduction over its trailing axes (Note [Absorbed reductions]).
  auto reduced = trace(known, [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{reduce_sum(exp(x[0])) + 1.0f};
  });
  EXPECT_EQ(testing::rewrites(fuse_elementwise(*reduced)), 1);
  EXPECT_EQ(testing::count_op(*reduced, "FusedReduction"), 1);
}

// Runs `fn` optimized (fusion included) and with every pass off on the same arguments.
void expect_fused_same_as_unfused(std::shared_ptr<const FunctionGraph> fn,
                                  const std::vector<Tensor>& inputs) {
  std::vector<Tensor> plain = testing::run_graph(fn, inputs);
  std::vector<Tensor> fused = testing::run_graph(fn, inputs, /*optimize=*/true);
  testing::expect_same_values(fused, plain);
}

TEST(FuseElementwise, FusesOverUnknownDimsForEveryBatchSize) {
  // The MLP layer's bias add and activation, and a softmax's element-wise part, traced with batch None.
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({-1, 256})}, {DType::kFloat32, Shape({256})}};
  Body body = [](const std::vector<Tensor>& x) {
    Tensor h = relu(x[0] + x[1]);
    Tensor z = h - reduce_max(h, {1}, /*keepdims=*/true);
    return std::vector<Tensor>{h, exp(z) * 0.5f + tanh(x[0])};
  };
  auto fn = trace(args, body);
  auto fused = fused_copy(*fn);
  EXPECT_EQ(testing::count_op(*fused, "FusedElementwise"), 2) << fused->graph.to_text();
  EXPECT_NE(fused->graph.to_text().find("shape=[-1,256]} -> float32[?,256]"), std::string::npos)
      << fused->graph.to_text();
  CompiledFunction compiled(fn);
  EXPECT_EQ(testing::count_op(compiled.optimized_function(), "FusedElementwise"), 2);
  for (int64_t batch : {0, 1, 3, 37, 1, 512}) {
    std::vector<Tensor> inputs{random_tensor(Shape({batch, 256}), 1), random_tensor(Shape({256}), 2)};
    std::vector<Tensor> expected = body(inputs);
    testing::expect_same_values(testing::run_compiled(compiled, inputs), expected);
  }
}

TEST(FuseElementwise, ResultsSmallerThanTheDomainKeepTheirOwnShape) {
  // t reads only x; u broadcasts t against y. With x of one element t is [1] while u is [4], so they
  // must not share a domain (Note [One run-time shape per group] in fuse_elementwise.cc): t's chain and
  // u's are two fused nodes, and u - t, whose operand t could be narrower than u, is left on its own.
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({-1})}, {DType::kFloat32, Shape({-1})}};
  Body body = [](const std::vector<Tensor>& x) {
    Tensor t = exp(x[0]) * 2.0f;
    Tensor u = sin(t + x[1]);
    return std::vector<Tensor>{t, u, u - t};
  };
  auto fn = trace(args, body);
  EXPECT_EQ(testing::count_op(*fused_copy(*fn), "FusedElementwise"), 2);
  CompiledFunction compiled(fn);
  for (auto [nx, ny] : {std::pair<int64_t, int64_t>{1, 4}, {4, 1}, {4, 4}, {1, 1}, {0, 1}, {1, 0}}) {
    std::vector<Tensor> inputs{random_tensor(Shape({nx}), 3), random_tensor(Shape({ny}), 4)};
    std::vector<Tensor> got = testing::run_compiled(compiled, inputs);
    testing::expect_same_values(got, body(inputs));
    expect_fused_same_as_unfused(fn, inputs);
  }
  // Shapes that do not broadcast fail as the unfused Add does: an error, not a crash or a wrong value.
  Tensor x = random_tensor(Shape({3}), 5), y = random_tensor(Shape({4}), 6);
  std::vector<TensorImpl*> bad{x.impl(), y.impl()};
  OutputList results;
  Status s = compiled.run({bad.data(), bad.size()}, results);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("FusedElementwise"), std::string::npos) << s.to_string();
}

TEST(FuseElementwise, HundredOpChainMatchesEager) {
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({1 << 16})}, {DType::kFloat32, Shape({1 << 16})}};
  Body body = [](const std::vector<Tensor>& x) {
    Tensor v = x[0];
    for (int i = 0; i < 25; ++i) v = tanh(v * x[1] + 0.5f) - sin(v);
    return std::vector<Tensor>{v};
  };
  auto fused = fused_copy(*trace(args, body));
  EXPECT_EQ(testing::count_op(*fused, "FusedElementwise"), 1);
  expect_same_as_eager(*fused, args, body);
}

// ---- Reductions absorbed at the end of a group (Note [Absorbed reductions] in fuse_elementwise.cc)

// The fused function's results against the same graph with every pass off, within float sums' rounding.
void expect_close_to_unfused(std::shared_ptr<const FunctionGraph> fn, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> plain = testing::run_graph(fn, inputs);
  std::vector<Tensor> fused = testing::run_graph(fn, inputs, /*optimize=*/true);
  ASSERT_EQ(plain.size(), fused.size());
  for (size_t j = 0; j < plain.size(); ++j) {
    ASSERT_EQ(fused[j].shape(), plain[j].shape()) << "result " << j;
    std::vector<float> e = plain[j].to_vector<float>(), g = fused[j].to_vector<float>();
    for (size_t i = 0; i < e.size(); ++i)
      ASSERT_NEAR(g[i], e[i], 1e-4f * (1 + std::abs(e[i]))) << "result " << j << " element " << i;
  }
}

TEST(FuseElementwise, ReductionOfAChainJoinsIt) {
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({64, 33})},
                               {DType::kFloat32, Shape({64, 33})},
                               {DType::kFloat32, Shape({64, 33})}};
  Body body = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{reduce_sum(x[0] * x[1] + x[2])};
  };
  auto fn = trace(args, body);
  int groups = 0;
  auto fused = fused_copy(*fn, &groups);
  EXPECT_EQ(groups, 1);
  EXPECT_EQ(testing::count_op(*fused, "Sum"), 0) << fused->graph.to_text();
  EXPECT_NE(
      fused->graph.to_text().find("fused/Mul = FusedReduction(x0:0, x1:0, x2:0) {program=[2,2,0,1,2,0,3,2], "
                                  "results=[], shape=[64,33], reduce=[0,4,2,0]} -> float32[]"),
      std::string::npos)
      << fused->graph.to_text();
  std::vector<Tensor> inputs{random_tensor(Shape({64, 33}), 1), random_tensor(Shape({64, 33}), 2),
                             random_tensor(Shape({64, 33}), 3)};
  expect_close_to_unfused(fn, inputs);
}

TEST(FuseElementwise, EveryReductionKindOverTrailingAxes) {
  // A single op with its reduction fuses too; the axes may be negative, a scalar, or every axis.
  using Reduce = Tensor (*)(const Tensor&, std::vector<int64_t>, bool);
  const Reduce kinds[] = {&reduce_sum, &reduce_mean, &reduce_max, &reduce_min};
  const std::vector<std::vector<int64_t>> axes_cases = {{}, {2}, {-1}, {1, 2}, {-2, -1}, {0, 1, 2}};
  for (Reduce reduce : kinds) {
    for (const auto& axes : axes_cases) {
      for (bool keepdims : {false, true}) {
        std::vector<TensorSpec> args{{DType::kFloat32, Shape({3, 40, 50})}, {DType::kFloat32, Shape({50})}};
        Body body = [&](const std::vector<Tensor>& x) {
          return std::vector<Tensor>{reduce(x[0] * x[1], axes, keepdims)};
        };
        auto fn = trace(args, body);
        auto fused = fused_copy(*fn);
        EXPECT_EQ(testing::count_op(*fused, "FusedReduction"), 1) << fused->graph.to_text();
        expect_close_to_unfused(fn, {random_tensor(Shape({3, 40, 50}), 4), random_tensor(Shape({50}), 5)});
      }
    }
  }
}

TEST(FuseElementwise, SoftmaxAndLayerNormAbsorbTheirSums) {
  // softmax: the max reads x alone (no group); exp(x - max) leaves its group for the division and is summed
  // in the same pass. Layer norm: x - mean leaves its group and its square's mean is absorbed.
  for (int64_t c : {10, 1000, 3000}) {
    std::vector<TensorSpec> args{{DType::kFloat32, Shape({20, c})}};
    Body body = [](const std::vector<Tensor>& x) {
      Tensor e = exp(x[0] - reduce_max(x[0], {-1}, true));
      Tensor softmax = e / reduce_sum(e, {-1}, true);
      Tensor d = x[0] - reduce_mean(x[0], {-1}, true);
      Tensor norm = d * rsqrt(reduce_mean(d * d, {-1}, true) + 1e-5f);
      return std::vector<Tensor>{softmax, norm};
    };
    auto fn = trace(args, body);
    auto fused = fused_copy(*fn);
    EXPECT_EQ(testing::count_op(*fused, "FusedReduction"), 2) << fused->graph.to_text();
    expect_close_to_unfused(fn, {random_tensor(Shape({20, c}), 6)});
  }
}

TEST(FuseElementwise, ReductionsThatStayUnfused) {
  // Over a leading axis, of a value from no group, of a group with unknown dims, with computed axes.
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({8, 5})}, {DType::kFloat32, Shape({-1, 5})}};
  Body body = [](const std::vector<Tensor>& x) {
    Tensor a = reduce_sum(x[0] * 2.0f, {0});
    Tensor b = reduce_sum(x[0], {1});
    Tensor c = reduce_max(x[1] * 3.0f, {1});
    return std::vector<Tensor>{a, b, c};
  };
  auto fn = trace(args, body);
  auto fused = fused_copy(*fn);
  EXPECT_EQ(testing::count_op(*fused, "FusedReduction"), 0) << fused->graph.to_text();
  EXPECT_EQ(testing::count_op(*fused, "Sum"), 2);
  EXPECT_EQ(testing::count_op(*fused, "Max"), 1);
}

TEST(FuseElementwise, OneReductionPerGroupAndSharedOperands) {
  // Two reductions of one chain: the first joins it, the second reads the fused node's output. The
  // reduced value is also a result and is read again deeper in another chain.
  std::vector<TensorSpec> args{{DType::kFloat32, Shape({16, 300})}, {DType::kFloat32, Shape({16, 300})}};
  Body body = [](const std::vector<Tensor>& x) {
    Tensor t = tanh(x[0]) * x[1];
    Tensor s = reduce_sum(t, {-1}, true);
    Tensor m = reduce_max(t, {-1});
    Tensor u = reduce_mean((t - s) * x[0]);
    return std::vector<Tensor>{t, s, m, u};
  };
  auto fn = trace(args, body);
  auto fused = fused_copy(*fn);
  EXPECT_EQ(testing::count_op(*fused, "FusedReduction"), 2) << fused->graph.to_text();
  EXPECT_EQ(testing::count_op(*fused, "Max"), 1) << fused->graph.to_text();
  expect_close_to_unfused(fn, {random_tensor(Shape({16, 300}), 7), random_tensor(Shape({16, 300}), 8)});
}

}  // namespace
}  // namespace ember::passes
