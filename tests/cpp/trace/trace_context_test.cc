#include "ember/trace/trace_context.h"

#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/runtime/executor.h"

namespace ember {
namespace {

std::shared_ptr<FunctionGraph> trace_square_of_square() {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "f";
  TraceContext ctx(fn.get());
  TraceScope scope(ctx);
  Tensor x(ctx.add_argument(DType::kFloat32, Shape::unknown_rank(), "x"));
  Tensor y = square(square(x));
  fn->results.push_back(ValueRef{y.impl()->graph_node(), y.impl()->graph_output()});
  return fn;
}

TEST(Trace, OpsAddNodesInsteadOfRunning) {
  auto fn = trace_square_of_square();
  EXPECT_EQ(fn->graph.to_text(),
            "x = Placeholder() {dtype=float32, shape=[], unknown_rank=true} -> float32<unknown>\n"
            "Square = Square(x:0) -> float32<unknown>\n"
            "Square_1 = Square(Square:0) -> float32<unknown>\n");
  CompiledFunction compiled(fn);
  Tensor two(2.0f);
  TensorImpl* args[] = {two.impl()};
  OutputList results;
  ASSERT_TRUE(compiled.run(args, results).ok());
  EXPECT_EQ(Tensor(results[0]).item<float>(), 16.0f);
}

TEST(Trace, CarvingASubgraphFeedsAnIntermediate) {
  auto fn = trace_square_of_square();
  auto carved = prune_function(*fn, {"Square:0"}, {"Square_1:0"});
  ASSERT_TRUE(carved.ok()) << carved.status().to_string();
  CompiledFunction compiled(*carved);
  Tensor two(2.0f);
  TensorImpl* args[] = {two.impl()};
  OutputList results;
  ASSERT_TRUE(compiled.run(args, results).ok());
  EXPECT_EQ(Tensor(results[0]).item<float>(), 4.0f);
  EXPECT_FALSE(prune_function(*fn, {}, {"Square_1:0"}).ok());
  EXPECT_EQ(prune_function(*fn, {"Nope:0"}, {"Square_1:0"}).status().code(), Code::kNotFound);
}

TEST(Trace, ConstantsFoldAndEagerTensorsAreCaptured) {
  Tensor outside = Tensor::from_vector<float>({10, 20});
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "g";
  {
    TraceContext ctx(fn.get());
    TraceScope scope(ctx);
    Tensor x(ctx.add_argument(DType::kFloat32, Shape({2}), "x"));
    Tensor folded = Tensor(3.0f) * Tensor(2.0f);  // all-constant: runs now
    EXPECT_FALSE(folded.impl()->is_symbolic());
    Tensor y = x * folded + outside;
    fn->results.push_back(ValueRef{y.impl()->graph_node(), 0});
  }
  ASSERT_EQ(fn->captured_values.size(), 1u);
  EXPECT_NE(fn->graph.to_text().find("Const"), std::string::npos);
  CompiledFunction compiled(fn);
  Tensor x = Tensor::from_vector<float>({1, 2});
  TensorImpl* args[] = {x.impl()};
  OutputList results;
  ASSERT_TRUE(compiled.run(args, results).ok());
  EXPECT_EQ(Tensor(results[0]).to_vector<float>(), (std::vector<float>{16, 32}));
}

TEST(Trace, ShapeErrorsWhileTracingNameTheOp) {
  auto fn = std::make_shared<FunctionGraph>();
  TraceContext ctx(fn.get());
  TraceScope scope(ctx);
  Tensor x(ctx.add_argument(DType::kFloat32, Shape({2, 3}), "x"));
  try {
    matmul(x, x);
    FAIL() << "expected an error";
  } catch (const StatusError& e) {
    EXPECT_NE(std::string(e.what()).find("MatMul"), std::string::npos) << e.what();
  }
}

TEST(Trace, SymbolicTensorsCannotRunEagerly) {
  TensorRef sym;
  auto fn = std::make_shared<FunctionGraph>();
  {
    TraceContext ctx(fn.get());
    TraceScope scope(ctx);
    sym = ctx.add_argument(DType::kFloat32, Shape({2}), "x");
  }
  EXPECT_THROW(square(Tensor(sym)), StatusError);
}

}  // namespace
}  // namespace ember
