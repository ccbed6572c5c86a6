// Each pass on before/after graph text, and results equal to the unoptimized graph.
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

// The graph text without source locations, one node a line.
std::string text(const FunctionGraph& fn) { return fn.graph.to_text(); }

TEST(Prune, DropsWhatFeedsNoResult) {
  auto fn = trace_function({Shape({3})}, [](std::vector<Tensor>& x) {
    Tensor unused = exp(x[0]);
    (void)unused;
    return std::vector<Tensor>{square(x[0])};
  });
  FunctionGraph g = *fn;
  EXPECT_EQ(count_op(g, "Exp"), 1);
  EXPECT_EQ(rewrites(passes::prune(g)), 1);
  EXPECT_EQ(text(g),
            "x0 = Placeholder() {dtype=float32, shape=[3], unknown_rank=false} -> float32[3]\n"
            "Square = Square(x0:0) -> float32[3]\n");
  Tensor x = Tensor::from_vector<float>({1, 2, 3});
  expect_same_values(run_graph(fn, {x}), run_graph(std::make_shared<FunctionGraph>(g), {x}));
}

TEST(Cse, MergesDuplicatesAndCommutedInputs) {
  auto fn = trace_function({Shape({2}), Shape({2})}, [](std::vector<Tensor>& x) {
    Tensor a = x[0] * x[1];
    Tensor b = x[1] * x[0];  // commutative: the same product
    Tensor c = sin(x[0]) + sin(x[0]);
    return std::vector<Tensor>{a + b, c};
  });
  FunctionGraph g = *fn;
  EXPECT_EQ(count_op(g, "Mul"), 2);
  EXPECT_EQ(count_op(g, "Sin"), 2);
  EXPECT_EQ(rewrites(passes::eliminate_common_subgraphs(g)), 2);
  EXPECT_EQ(text(g),
            "x0 = Placeholder() {dtype=float32, shape=[2], unknown_rank=false} -> float32[2]\n"
            "x1 = Placeholder() {dtype=float32, shape=[2], unknown_rank=false} -> float32[2]\n"
            "Mul = Mul(x0:0, x1:0) -> float32[2]\n"
            "Sin = Sin(x0:0) -> float32[2]\n"
            "Add = Add(Sin:0, Sin:0) -> float32[2]\n"
            "Add_1 = Add(Mul:0, Mul:0) -> float32[2]\n");
  Tensor x = Tensor::from_vector<float>({1, 2}), y = Tensor::from_vector<float>({3, -4});
  expect_same_values(run_graph(fn, {x, y}), run_graph(std::make_shared<FunctionGraph>(g), {x, y}));
}

TEST(Cse, KeepsStatefulNodesApart) {
  auto fn = trace_function({Shape({2})}, [](std::vector<Tensor>& x) {
    Tensor a = random_uniform({2}, DType::kFloat32, 0.0, 1.0, 7);
    Tensor b = random_uniform({2}, DType::kFloat32, 0.0, 1.0, 7);
    return std::vector<Tensor>{a + x[0], b + x[0]};
  });
  FunctionGraph g = *fn;
  ASSERT_EQ(count_op(g, "RandomUniform"), 2);
  // Their equal shape operands may merge (they are Const inputs); the random ops themselves may not.
  rewrites(passes::eliminate_common_subgraphs(g));
  EXPECT_EQ(count_op(g, "RandomUniform"), 2);
}

TEST(ConstantFolding, FoldsWhatInliningExposes) {
  // A node whose inputs are all Const nodes (built directly: the tracer folds these itself).
  auto fn =
      trace_function({Shape({2})}, [](std::vector<Tensor>& x) { return std::vector<Tensor>{x[0] + 1.0f}; });
  FunctionGraph g = *fn;
  int32_t add = g.graph.find("Add");
  ASSERT_GE(add, 0);
  int32_t one = g.graph.node(add).inputs[1].node;
  ASSERT_EQ(g.graph.node(one).op->name, "Const");
  // Rewire x + 1 into 1 + 1.
  g.graph.mutable_node(add).inputs[0] = ValueRef{one, 0};
  g.graph.mutable_node(add).outputs[0].shape = Shape({});
  EXPECT_EQ(rewrites(passes::fold_constants(g, 1 << 20)), 1);
  ASSERT_EQ(g.results.size(), 1u);
  const Node& folded = g.graph.node(g.results[0].node);
  EXPECT_EQ(folded.op->name, "Const");
  EXPECT_EQ(folded.name, "Add/folded");
  EXPECT_EQ(Tensor(std::get<TensorRef>(folded.attrs[0])).item<float>(), 2.0f);
  rewrites(passes::prune(g));  // the original Const and Add are gone
  EXPECT_EQ(text(g),
            "x0 = Placeholder() {dtype=float32, shape=[2], unknown_rank=false} -> float32[2]\n"
            "Add/folded = Const() {value=<float32[]>} -> float32[]\n");
}

TEST(ConstantFolding, RespectsTheSizeCap) {
  auto fn =
      trace_function({Shape({2})}, [](std::vector<Tensor>& x) { return std::vector<Tensor>{x[0] + 1.0f}; });
  FunctionGraph g = *fn;
  int32_t add = g.graph.find("Add");
  int32_t one = g.graph.node(add).inputs[1].node;
  g.graph.mutable_node(add).inputs[0] = ValueRef{one, 0};
  g.graph.mutable_node(add).outputs[0].shape = Shape({});
  EXPECT_EQ(rewrites(passes::fold_constants(g, 2)), 0);  // a float32 scalar is 4 bytes
}

TEST(Arithmetic, RemovesIdentities) {
  auto fn = trace_function({Shape({2, 3})}, [](std::vector<Tensor>& x) {
    Tensor a = x[0] * 1.0f + 0.0f;
    Tensor b = transpose(transpose(a, {1, 0}), {1, 0});
    Tensor c = reshape(reshape(b, {3, 2}), {2, 3});
    Tensor d = cast(identity(c), DType::kFloat32);
    return std::vector<Tensor>{negative(negative(d)) - 0.0f};
  });
  FunctionGraph g = *fn;
  EXPECT_GT(rewrites(passes::simplify_arithmetic(g)), 0);
  rewrites(passes::prune(g));
  EXPECT_EQ(text(g), "x0 = Placeholder() {dtype=float32, shape=[2,3], unknown_rank=false} -> float32[2,3]\n");
  EXPECT_EQ(g.results[0].node, g.args[0]);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape({2, 3}));
  expect_same_values(run_graph(fn, {x}), run_graph(std::make_shared<FunctionGraph>(g), {x}));
}

TEST(Arithmetic, ComposesTransposesAndKeepsBroadcasts) {
  auto fn = trace_function({Shape({2, 3, 4}), Shape({1})}, [](std::vector<Tensor>& x) {
    Tensor t = transpose(transpose(x[0], {1, 2, 0}), {1, 2, 0});
    Tensor broadcast = x[1] * 1.0f + Tensor::from_vector<float>({0, 0});  // [1] + [2]: keeps the add
    return std::vector<Tensor>{t, broadcast};
  });
  FunctionGraph g = *fn;
  rewrites(passes::simplify_arithmetic(g));
  rewrites(passes::prune(g));
  EXPECT_EQ(count_op(g, "Transpose"), 1);
  EXPECT_EQ(count_op(g, "Mul"), 0);
  EXPECT_EQ(count_op(g, "Add"), 1);
  std::vector<float> values(24);
  for (int i = 0; i < 24; ++i) values[i] = static_cast<float>(i);
  Tensor x = Tensor::from_vector<float>(values, Shape({2, 3, 4})), y = Tensor::from_vector<float>({5});
  expect_same_values(run_graph(fn, {x, y}), run_graph(std::make_shared<FunctionGraph>(g), {x, y}));
}

TEST(Inline, ReplacesCallsWithTheCalleeBody) {
  auto inner = function([](const Tensor& x) { return square(x) + 1.0f; }, "inner");
  auto fn = trace_function({Shape({2})}, [&](std::vector<Tensor>& x) {
    // Sequenced: the operands of `*` may be evaluated in either order, and node names follow it.
    Tensor first = inner(x[0]);
    Tensor second = inner(x[0] + 2.0f);
    return std::vector<Tensor>{first * second};
  });
  FunctionGraph g = *fn;
  EXPECT_EQ(count_op(g, "PartitionedCall"), 2);
  EXPECT_EQ(rewrites(passes::inline_function_calls(g)), 2);
  rewrites(passes::prune(g));
  // Each call's body in place of the call, its nodes named after it (both bodies follow the Add: a body
  // takes the call's place in the order, and the re-sort keeps the call nodes' relative order).
  EXPECT_EQ(
      text(g),
      "x0 = Placeholder() {dtype=float32, shape=[2], unknown_rank=false} -> float32[2]\n"
      "Const = Const() {value=<float32[]>} -> float32[]\n"
      "Add = Add(x0:0, Const:0) -> float32[2]\n"
      "PartitionedCall/Square = Square(x0:0) -> float32[2]\n"
      "PartitionedCall/Const = Const() {value=<float32[]>} -> float32[]\n"
      "PartitionedCall/Add = Add(PartitionedCall/Square:0, PartitionedCall/Const:0) -> float32[2]\n"
      "PartitionedCall_1/Square = Square(Add:0) -> float32[2]\n"
      "PartitionedCall_1/Const = Const() {value=<float32[]>} -> float32[]\n"
      "PartitionedCall_1/Add = Add(PartitionedCall_1/Square:0, PartitionedCall_1/Const:0) -> float32[2]\n"
      "Mul = Mul(PartitionedCall/Add:0, PartitionedCall_1/Add:0) -> float32[2]\n");
  EXPECT_EQ(count_op(g, "PartitionedCall"), 0);
  EXPECT_EQ(count_op(g, "Square"), 2);
  Tensor x = Tensor::from_vector<float>({1, -3});
  expect_same_values(run_graph(fn, {x}), run_graph(std::make_shared<FunctionGraph>(g), {x}));
}

TEST(Inline, KeepsTheOrderOfSideEffects) {
  Variable v(Tensor::from_vector<float>({1, 1}));
  auto bump = function(
      [&](const Tensor& x) {
        v.assign_add(x);
        return v.read();
      },
      "bump");
  auto fn = trace_function({Shape({2})}, [&](std::vector<Tensor>& x) {
    Tensor first = bump(x[0]);
    Tensor after = v.read();  // must see the callee's write
    return std::vector<Tensor>{first, after};
  });
  FunctionGraph g = *fn;
  EXPECT_EQ(rewrites(passes::inline_function_calls(g)), 1);
  auto out = run_graph(std::make_shared<FunctionGraph>(g), {Tensor::from_vector<float>({2, 3})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST(MergeMatmuls, NarrowSiblingsBecomeOneProduct) {
  auto fn = trace_function({Shape({5, 4}), Shape({4, 2}), Shape({4, 3}), Shape({4, 40})}, [](std::vector<
                                                                                              Tensor>& x) {
    Tensor h = tanh(x[0]);
    return std::vector<Tensor>{matmul(h, x[1]), matmul(h, x[2]) * 2.0f, matmul(h, x[3]), matmul(x[0], x[1])};
  });
  FunctionGraph g = *fn;
  EXPECT_EQ(rewrites(passes::merge_sibling_matmuls(g)),
            1);  // the width-40 product and the other operand stay apart
  rewrites(passes::prune(g));
  EXPECT_EQ(
      text(g),
      "x0 = Placeholder() {dtype=float32, shape=[5,4], unknown_rank=false} -> float32[5,4]\n"
      "x1 = Placeholder() {dtype=float32, shape=[4,2], unknown_rank=false} -> float32[4,2]\n"
      "x2 = Placeholder() {dtype=float32, shape=[4,3], unknown_rank=false} -> float32[4,3]\n"
      "x3 = Placeholder() {dtype=float32, shape=[4,40], unknown_rank=false} -> float32[4,40]\n"
      "Tanh = Tanh(x0:0) -> float32[5,4]\n"
      "Const = Const() {value=<float32[]>} -> float32[]\n"
      "Const_1 = Const() {value=<int64[]>} -> int64[]\n"
      "MatMul/merged_weights = ConcatV2(x1:0, x2:0, Const_1:0) -> float32[4,5]\n"
      "MatMul/merged = MatMul(Tanh:0, MatMul/merged_weights:0) {transpose_a=false, transpose_b=false} -> "
      "float32[5,5]\n"
      "Const_2 = Const() {value=<int64[2]>} -> int64[2]\n"
      "Const_3 = Const() {value=<int64[]>} -> int64[]\n"
      "MatMul/split = SplitV(MatMul/merged:0, Const_2:0, Const_3:0) -> float32[5,2], float32[5,3]\n"
      "Mul = Mul(MatMul/split:1, Const:0) -> float32[5,3]\n"
      "MatMul_2 = MatMul(Tanh:0, x3:0) {transpose_a=false, transpose_b=false} -> float32[5,40]\n"
      "MatMul_3 = MatMul(x0:0, x1:0) {transpose_a=false, transpose_b=false} -> float32[5,2]\n");
  EXPECT_EQ(count_op(g, "MatMul"), 3);
  EXPECT_EQ(count_op(g, "SplitV"), 1);
  EXPECT_EQ(count_op(g, "ConcatV2"), 1);
  // The split's size_splits and axis are Const inputs: [2, 3] along axis 1.
  const Node& split = g.graph.node(g.graph.find("MatMul/split"));
  auto const_value = [&](int input) {
    const Node& c = g.graph.node(split.inputs[input].node);
    EXPECT_EQ(c.op->name, "Const");
    return PartialValue::from_tensor(*std::get<TensorRef>(c.attrs[0])).values;
  };
  EXPECT_EQ(const_value(1), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(const_value(2), (std::vector<int64_t>{1}));
  std::vector<Tensor> args;
  for (const Shape& s : {Shape({5, 4}), Shape({4, 2}), Shape({4, 3}), Shape({4, 40})}) {
    std::vector<float> v(s.num_elements());
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i + args.size()));
    args.push_back(Tensor::from_vector<float>(v, s));
  }
  expect_same_values(run_graph(fn, args), run_graph(std::make_shared<FunctionGraph>(g), args));
}

TEST(Optimizer, DriverReachesAFixedPointAndLogsPasses) {
  auto inner = function([](const Tensor& x) { return x * 1.0f + 0.0f; }, "inner_identity");
  auto fn = trace_function({Shape({4})}, [&](std::vector<Tensor>& x) {
    Tensor a = inner(x[0]);
    return std::vector<Tensor>{exp(a) + exp(x[0])};
  });
  passes::OptimizerOptions options;
  options.elementwise_fusion = false;
  options.sibling_matmul_merging = false;
  std::vector<passes::PassCount> log;
  auto optimized = *passes::optimize_function(*fn, options, &log);
  EXPECT_EQ(text(*optimized),
            "x0 = Placeholder() {dtype=float32, shape=[4], unknown_rank=false} -> float32[4]\n"
            "Exp = Exp(x0:0) -> float32[4]\n"
            "Add = Add(Exp:0, Exp:0) -> float32[4]\n");
  EXPECT_FALSE(log.empty());
  passes::OptimizerOptions off;
  off.disable_meta_optimizer = true;
  EXPECT_EQ((*passes::optimize_function(*fn, off))->graph.num_nodes(), fn->graph.num_nodes());
}

}  // namespace
}  // namespace ember
