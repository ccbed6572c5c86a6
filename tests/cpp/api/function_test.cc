#include "ember/api/function.h"

#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

TEST(CppFunction, TracesOncePerSignatureThenRunsTheGraph) {
  int body_runs = 0;
  auto f = function([&](const Tensor& x) {
    ++body_runs;
    return x * x;
  });
  EXPECT_EQ(f(Tensor(3.0f)).item<float>(), 9.0f);
  EXPECT_EQ(f(Tensor(4.0f)).item<float>(), 16.0f);
  EXPECT_EQ(body_runs, 1);
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_EQ(f(Tensor({1.f, 2.f})).to_vector<float>(), (std::vector<float>{1, 4}));
  EXPECT_EQ(f.tracing_count(), 2);  // a new shape
  EXPECT_EQ(f(Tensor(int32_t{5})).item<int32_t>(), 25);
  EXPECT_EQ(f.tracing_count(), 3);  // a new dtype
}

TEST(CppFunction, GraphHoldsTheOps) {
  auto f = function([](const Tensor& x, const Tensor& y) { return matmul(x, y) + 1.0f; }, "affine");
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor out = f(a, a);
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{8, 11, 16, 23}));
  std::string text = f.graph(a, a).graph.to_text();
  EXPECT_NE(text.find("MatMul"), std::string::npos) << text;
  EXPECT_NE(text.find("Const"), std::string::npos) << text;  // 1.0f made inside the trace
}

TEST(CppFunction, MultipleResultsAndNestedFunctions) {
  auto inner = function([](const Tensor& x) { return square(x); }, "inner");
  auto outer =
      function([&](const Tensor& x) { return std::make_tuple(inner(x), square(inner(x))); }, "outer");
  auto [a, b] = outer(Tensor(2.0f));
  EXPECT_EQ(a.item<float>(), 4.0f);
  EXPECT_EQ(b.item<float>(), 16.0f);
  EXPECT_NE(outer.graph(Tensor(2.0f)).graph.to_text().find("PartitionedCall"), std::string::npos);
}

TEST(CppFunction, OptimizerOptionsApplyToFunctionsTracedAfterwards) {
  config::OptimizerOptions saved = config::optimizer_options();
  config::OptimizerOptions off = saved;
  off.disable_meta_optimizer = true;
  config::set_optimizer_options(off);
  auto f = function([](const Tensor& x) { return exp(x) * 2.0f + 1.0f; }, "unoptimized");
  Tensor x = Tensor::from_vector<float>({0, 1});
  Tensor plain = f(x);
  config::set_optimizer_options(saved);
  auto g = function([](const Tensor& x) { return exp(x) * 2.0f + 1.0f; }, "optimized");
  Tensor fused = g(x);
  EXPECT_EQ(plain.to_vector<float>(), fused.to_vector<float>());
  config::set_inter_op_parallelism_threads(1);
  EXPECT_EQ(inter_op_threads(), 1);
  config::set_inter_op_parallelism_threads(0);
}

TEST(CppFunction, ErrorsThrowWithTheOpName) {
  auto f = function([](const Tensor& x) { return matmul(x, x); });
  EXPECT_THROW(f(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})), StatusError);
}

}  // namespace
}  // namespace ember
