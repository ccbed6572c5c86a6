// What tracing knows of a shape computed in the graph (graph/partial_value.cc), seen through the shape
// functions of the ops that read it: tf.reshape(x, [tf.shape(x)[0], 3, 2]) keeps [?,3,2]. The expected
// shapes are TensorFlow 2.21's for the same function traced with the same input signature, except where a
// comment says ember knows more.
#include "ember/graph/partial_value.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "ember/ember.h"
#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"

namespace ember {
namespace {

// Traces `body` on arguments x: float32 [?,6] and y: float32 [?,3] and returns the static shape of its
// result as text.
std::string traced_shape(const std::function<Tensor(const Tensor&, const Tensor&)>& body) {
  FunctionGraph fn;
  fn.name = "f";
  TraceContext ctx(&fn);
  TraceScope scope(ctx);
  Tensor x(ctx.add_argument(DType::kFloat32, Shape({kUnknownDim, 6}), "x"));
  Tensor y(ctx.add_argument(DType::kFloat32, Shape({kUnknownDim, 3}), "y"));
  return body(x, y).shape().to_string();
}

// tf.shape(t)[i] as a scalar.
Tensor dim(const Tensor& t, int64_t i) {
  return strided_slice(shape(t), {i}, {i + 1}, {1}, 0, 0, 0, 0, /*shrink_axis_mask=*/1);
}

TEST(PartialValue, ShapeOfATracedValue) {
  EXPECT_EQ(traced_shape([](const Tensor& x, const Tensor& y) { return reshape(x, shape(y)); }), "[?,3]");
  EXPECT_EQ(
      traced_shape([](const Tensor& x, const Tensor& y) { return broadcast_to(Tensor(1.0f), shape(y)); }),
      "[?,3]");
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) { return fill(shape(y), Tensor(1.0f)); }),
            "[?,3]");
  EXPECT_EQ(traced_shape(
                [](const Tensor& x, const Tensor& y) { return reshape(x, cast(shape(y), DType::kInt64)); }),
            "[?,3]");
}

TEST(PartialValue, StackAndConcatOfDims) {
  // tf.reshape(x, [tf.shape(x)[0], 3, 2])
  EXPECT_EQ(traced_shape([](const Tensor& x, const Tensor&) {
              return reshape(x, stack({dim(x, 0), Tensor(int32_t{3}), Tensor(int32_t{2})}));
            }),
            "[?,3,2]");
  // tf.reshape(x, [-1, tf.shape(y)[1]]): the known 3 and x's unknown size leave the first dim open.
  EXPECT_EQ(traced_shape([](const Tensor& x, const Tensor& y) {
              return reshape(x, stack({Tensor(int32_t{-1}), dim(y, 1)}));
            }),
            "[?,3]");
  // tf.concat([tf.shape(y), [2]], 0)
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return fill(concat({shape(y), Tensor::from_vector(std::vector<int32_t>{2})}, 0), Tensor(0.0f));
            }),
            "[?,3,2]");
  // Slicing the shape vector: tf.shape(y)[1:]
  EXPECT_EQ(traced_shape([](const Tensor& x, const Tensor& y) {
              return broadcast_to(Tensor(1.0f), strided_slice(shape(y), {1}, {0}, {1}, 0, /*end_mask=*/1));
            }),
            "[3]");
}

TEST(PartialValue, IntegerArithmetic) {
  // tf.shape(y) * 2, and a product with 0 is 0 even where the other factor is unknown. TensorFlow stops at
  // [?,?] for both (its refiner does no arithmetic on vectors); these are exact.
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return fill(shape(y) * Tensor(int32_t{2}), Tensor(1.0f));
            }),
            "[?,6]");
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return fill(shape(y) * Tensor(int32_t{0}), Tensor(1.0f));
            }),
            "[0,0]");
  // [tf.shape(y)[1] // 2 + 1, tf.shape(y)[0]]
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return fill(stack({floordiv(dim(y, 1), Tensor(int32_t{2})) + Tensor(int32_t{1}), dim(y, 0)}),
                          Tensor(1.0f));
            }),
            "[2,?]");
}

TEST(PartialValue, ValuesComputedFromDataStayUnknown) {
  // An int vector computed from data (a cast of a float argument) tells nothing but its length.
  EXPECT_EQ(traced_shape([](const Tensor& x, const Tensor& y) {
              return reshape(x, cast(strided_slice(y, {0, 0}, {1, 0}, {1, 1}, 0, 2, 0, 0, 1), DType::kInt32));
            }),
            "[?,?,?]");
  EXPECT_EQ(traced_shape([](const Tensor& x, const Tensor&) {
              return reduce_sum(x, std::vector<int64_t>{1}, true) * Tensor(1.0f);
            }),
            "[?,1]");
}

// The graph built from a partly known shape runs with the values the shapes have at run time.
TEST(PartialValue, TheTracedGraphRunsWithRunTimeShapes) {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "f";
  {
    TraceContext ctx(fn.get());
    TraceScope scope(ctx);
    Tensor x(ctx.add_argument(DType::kFloat32, Shape({kUnknownDim, 6}), "x"));
    Tensor r = reshape(x, stack({dim(x, 0), Tensor(int32_t{3}), Tensor(int32_t{2})}));
    EXPECT_EQ(r.shape().to_string(), "[?,3,2]");
    const Node& node = fn->graph.node(r.impl()->graph_node());
    PartialValue known = partial_value(fn->graph, node.inputs[1]);
    EXPECT_TRUE(known.length_known);
    EXPECT_FALSE(known.scalar);
    EXPECT_EQ(known.values, (std::vector<int64_t>{PartialValue::kUnknown, 3, 2}));
    fn->results.push_back(ValueRef{r.impl()->graph_node(), r.impl()->graph_output()});
    ctx.seal();
  }
  CompiledFunction compiled(fn);
  Tensor x = Tensor::from_vector(std::vector<float>(12, 1.0f), Shape({2, 6}));
  TensorImpl* args[] = {x.impl()};
  OutputList results;
  Status s = compiled.run(args, results);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(Tensor(results[0]).shape(), Shape({2, 3, 2}));
}

}  // namespace
}  // namespace ember
