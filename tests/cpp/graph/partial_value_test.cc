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

// Note [Matrix partial values]: Pad's paddings computed in the graph. x is [?,6], y is [?,3].
Tensor pad_by(const Tensor& x, const Tensor& paddings, const char* mode = "CONSTANT") {
  return call_op1("Pad", {x, paddings}, {0.0, std::string(mode)});
}
Tensor i32(int32_t v) { return Tensor(v); }
Tensor row(int32_t a, int32_t b) { return Tensor::from_vector(std::vector<int32_t>{a, b}); }

TEST(PartialValue, PaddingsStackedFromRows) {
  // tf.pad(y, tf.stack([[0, 0], [tf.shape(y)[1], 1]])): TensorFlow [?,7]
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return pad_by(y, stack({row(0, 0), stack({dim(y, 1), i32(1)})}));
            }),
            "[?,7]");
  // tf.pad(y, tf.stack([[tf.shape(y)[0], 0], [1, 1]])): TensorFlow's tf.pad [?,5] (its raw Pad [?,?]).
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return pad_by(y, stack({stack({dim(y, 0), i32(0)}), row(1, 1)}));
            }),
            "[?,5]");
  // Rows known, the first dim of x unknown: [?, 3 + 2 + 2] (ember knows more than TensorFlow here: [?,?]).
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return pad_by(y, stack({stack({dim(y, 0), dim(y, 0)}), row(2, 2)}), "REFLECT");
            }),
            "[?,7]");
  // tf.stack([[0, 1], [0, tf.shape(y)[1]]], axis=1) is [[0, 0], [1, 3]]: TensorFlow [?,7]
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return pad_by(y, stack({row(0, 1), stack({i32(0), dim(y, 1)})}, 1));
            }),
            "[?,7]");
}

TEST(PartialValue, PaddingsReshapedConcatenatedOrComputed) {
  // tf.reshape(tf.stack([0, 0, 1, tf.shape(y)[1]]), [2, 2]): TensorFlow [?,7]
  EXPECT_EQ(
      traced_shape([](const Tensor&, const Tensor& y) {
        return pad_by(y, reshape(stack({i32(0), i32(0), i32(1), dim(y, 1)}), std::vector<int64_t>{2, 2}));
      }),
      "[?,7]");
  // tf.concat of expanded rows: TensorFlow [?,7]
  EXPECT_EQ(
      traced_shape([](const Tensor&, const Tensor& y) {
        return pad_by(y, concat({expand_dims(row(0, 0), 0), expand_dims(stack({i32(1), dim(y, 1)}), 0)}, 0));
      }),
      "[?,7]");
  // Columns joined: tf.concat([[[0], [1]], [[0], [n]]], 1) with n = tf.shape(y)[1]
  EXPECT_EQ(
      traced_shape([](const Tensor&, const Tensor& y) {
        return pad_by(y, concat({expand_dims(row(0, 1), 1), expand_dims(stack({i32(0), dim(y, 1)}), 1)}, 1));
      }),
      "[?,7]");
  // [[0, 0], [1, 1]] * tf.shape(y)[1]: TensorFlow [?,9]
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              const Tensor base = stack({row(0, 0), stack({i32(1), dim(y, 0)})});
              return pad_by(y, stack({row(0, 0), row(1, 1)}) * dim(y, 1) + base * i32(0));
            }),
            "[?,9]");
  // A transposed matrix and a row slice of a taller one: TensorFlow [?,5] and [?,7]
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return pad_by(y, transpose(stack({row(0, 1), stack({i32(0), dim(y, 1) - i32(2)})}), {1, 0}));
            }),
            "[?,5]");
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              const Tensor tall = stack({row(9, 9), row(0, 0), stack({dim(y, 1), i32(1)})});
              return pad_by(y, strided_slice(tall, {1}, {0}, {1}, 0, /*end_mask=*/1));
            }),
            "[?,7]");
  // A row of a computed matrix read back as a shape: tf.fill(m[1], 1.0) with m = [[?, 0], [3, 2]].
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              const Tensor m = stack({stack({dim(y, 0), i32(0)}), stack({dim(y, 1), i32(2)})});
              return fill(strided_slice(m, {1}, {2}, {1}, 0, 0, 0, 0, /*shrink_axis_mask=*/1), Tensor(1.0f));
            }),
            "[3,2]");
  // Its column: m[:, 1] is [0, 2].
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              const Tensor m = stack({stack({dim(y, 0), i32(0)}), stack({dim(y, 1), i32(2)})});
              return fill(strided_slice(m, {0, 1}, {0, 2}, {1, 1}, /*begin_mask=*/1, /*end_mask=*/1, 0, 0,
                                        /*shrink_axis_mask=*/2),
                          Tensor(1.0f));
            }),
            "[0,2]");
}

TEST(PartialValue, PaddingsOfUnknownValuesGiveTheRank) {
  // A matrix computed from data tells nothing but its shape.
  EXPECT_EQ(traced_shape([](const Tensor&, const Tensor& y) {
              return pad_by(y, cast(reshape(strided_slice(y, {0, 0}, {1, 2}, {1, 1}, 0, 0, 0, 0, 1),
                                            std::vector<int64_t>{1, 2}) *
                                            Tensor(0.0f) +
                                        Tensor::from_vector(std::vector<float>(4, 1.0f), Shape({2, 2})),
                                    DType::kInt32));
            }),
            "[?,?]");
}

TEST(PartialValue, MatrixValues) {
  FunctionGraph fn;
  fn.name = "f";
  TraceContext ctx(&fn);
  TraceScope scope(ctx);
  Tensor y(ctx.add_argument(DType::kFloat32, Shape({kUnknownDim, 3}), "y"));
  auto value = [&](const Tensor& t) { return partial_value(fn.graph, ValueRef{t.impl()->graph_node(), 0}); };
  const int64_t u = PartialValue::kUnknown;
  const Tensor m = stack({stack({dim(y, 0), dim(y, 1)}), row(4, 5), row(6, 7)});  // [[?, 3], [4, 5], [6, 7]]
  PartialValue p = value(m);
  EXPECT_TRUE(p.matrix());
  EXPECT_EQ(p.columns, 2);
  EXPECT_EQ(p.values, (std::vector<int64_t>{u, 3, 4, 5, 6, 7}));
  p = value(transpose(m, {1, 0}));
  EXPECT_EQ(p.columns, 3);
  EXPECT_EQ(p.values, (std::vector<int64_t>{u, 4, 6, 3, 5, 7}));
  p = value(reshape(m, std::vector<int64_t>{2, 3}));
  EXPECT_EQ(p.columns, 3);
  EXPECT_EQ(p.values, (std::vector<int64_t>{u, 3, 4, 5, 6, 7}));
  p = value(tile(m, {1, 2}));
  EXPECT_EQ(p.columns, 4);
  EXPECT_EQ(p.values, (std::vector<int64_t>{u, 3, u, 3, 4, 5, 4, 5, 6, 7, 6, 7}));
  p = value(identity(cast(cast(m, DType::kInt64), DType::kInt32)) - row(1, 1));
  EXPECT_EQ(p.values, (std::vector<int64_t>{u, 2, 3, 4, 5, 6}));
  p = value(concat({m, m}, 1));
  EXPECT_EQ(p.columns, 4);
  EXPECT_EQ(p.values, (std::vector<int64_t>{u, 3, u, 3, 4, 5, 4, 5, 6, 7, 6, 7}));
  p = value(fill(std::vector<int64_t>{2, 1}, dim(y, 1)));
  EXPECT_EQ(p.columns, 1);
  EXPECT_EQ(p.values, (std::vector<int64_t>{3, 3}));
  // A row read from a matrix is a vector again, an element a scalar.
  p = value(strided_slice(m, {2}, {3}, {1}, 0, 0, 0, 0, 1));
  EXPECT_FALSE(p.matrix());
  EXPECT_FALSE(p.scalar);
  EXPECT_EQ(p.values, (std::vector<int64_t>{6, 7}));
  p = value(strided_slice(m, {0, 1}, {1, 2}, {1, 1}, 0, 0, 0, 0, 3));
  EXPECT_TRUE(p.scalar);
  EXPECT_EQ(p.values, (std::vector<int64_t>{3}));
  // Shape-like vector operands never see a matrix: a vector's value is what it was.
  p = value(shape(y));
  EXPECT_FALSE(p.matrix());
  EXPECT_EQ(p.values, (std::vector<int64_t>{u, 3}));
}

// A Pad whose paddings are partly known while tracing runs with their run-time values.
TEST(PartialValue, PaddingsComputedInTheGraphRun) {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "f";
  {
    TraceContext ctx(fn.get());
    TraceScope scope(ctx);
    Tensor y(ctx.add_argument(DType::kFloat32, Shape({kUnknownDim, 3}), "y"));
    Tensor r = pad_by(y, stack({stack({dim(y, 0), i32(0)}), stack({i32(1), dim(y, 1)})}));
    EXPECT_EQ(r.shape().to_string(), "[?,7]");
    fn->results.push_back(ValueRef{r.impl()->graph_node(), r.impl()->graph_output()});
    ctx.seal();
  }
  CompiledFunction compiled(fn);
  Tensor y = Tensor::from_vector(std::vector<float>(6, 1.0f), Shape({2, 3}));
  TensorImpl* args[] = {y.impl()};
  OutputList results;
  Status s = compiled.run(args, results);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(Tensor(results[0]).shape(), Shape({4, 7}));
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
