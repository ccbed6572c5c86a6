// Gradient rules of the reductions and scans (ops/reduction.cc) against central finite differences in
// float64, over axis patterns (one axis, negative, adjacent, non-adjacent, all, none) with and without
// keepdims; Prod and Cumprod with zeros; Max/Min ties checked directly.
#include <gtest/gtest.h>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/grad_testing.h"
#include "tests/cpp/ops/grad_trace_check.h"

namespace ember {
namespace {

using testing::int32_scalar;
using testing::int32_vector;
using testing::make_tensor;
using testing::random_values;
using testing::rule_grads;
using testing::values;
using Ints = std::vector<int64_t>;

// A reduction's attributes (its axes are input 1, an int32_vector).
AttrList keep_dims(bool keepdims) { return {AttrValue(keepdims)}; }

AttrList scan_attrs(bool exclusive, bool reverse) {
  AttrList attrs;
  attrs.push_back(exclusive);
  attrs.push_back(reverse);
  return attrs;
}

TensorRef uniform(Ints dims, double lo, double hi, unsigned seed = 7) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return make_tensor(dims, random_values(n, lo, hi, seed));
}

// Axis lists for a rank-3 input: one axis, a negative one, adjacent pairs, a non-adjacent pair (given
// out of order), all axes, and none (the raw op's empty list reduces nothing).
const std::vector<Ints> kAxes = {{1}, {-1}, {0, 1}, {-1, 0}, {1, 2}, {0, 1, 2}, {}};

TEST(ReductionGrad, SumMeanMaxMinLogSumExp) {
  for (const char* op : {"Sum", "Mean", "Max", "Min", "ReduceLogSumExp"}) {
    for (const Ints& axes : kAxes) {
      for (bool keepdims : {false, true}) {
        SCOPED_TRACE(::testing::Message() << op << " axes " << axes.size() << (keepdims ? " keepdims" : ""));
        EXPECT_GRADIENT_OK(op, {uniform({2, 3, 4}, -2, 2), int32_vector(axes)}, keep_dims(keepdims));
      }
    }
  }
}

TEST(ReductionGrad, ScalarsAndSizeOneDims) {
  for (const char* op : {"Sum", "Mean", "Max", "Prod", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    EXPECT_GRADIENT_OK(op, {uniform({}, -2, 2), int32_vector({})}, keep_dims(false));
    EXPECT_GRADIENT_OK(op, {uniform({3, 1, 2}, 0.5, 2), int32_vector({1})}, keep_dims(false));
    EXPECT_GRADIENT_OK(op, {uniform({3, 1, 2}, 0.5, 2), int32_vector({0, 1})}, keep_dims(true));
  }
}

TEST(ReductionGrad, ProdWithoutZeros) {
  for (const Ints& axes : kAxes) {
    for (bool keepdims : {false, true}) {
      EXPECT_GRADIENT_OK("Prod", {uniform({2, 3, 4}, 0.5, 1.5), int32_vector(axes)}, keep_dims(keepdims));
      EXPECT_GRADIENT_OK("Prod", {uniform({2, 3, 4}, -1.5, -0.5), int32_vector(axes)}, keep_dims(keepdims));
    }
  }
  // Four axes, reduced axes split around kept ones (the transposed path).
  EXPECT_GRADIENT_OK("Prod", {uniform({2, 3, 2, 3}, 0.5, 1.5), int32_vector({0, 2})}, keep_dims(false));
  EXPECT_GRADIENT_OK("Prod", {uniform({2, 3, 2, 3}, 0.5, 1.5), int32_vector({3, 1})}, keep_dims(true));
}

// Rows with no zero, one zero and two zeros: the gradient at a lone zero is the product of the others
// (which y / x cannot give), and with two zeros every gradient in the row is 0.
TEST(ReductionGrad, ProdWithZeros) {
  auto x = make_tensor({3, 4}, {1.5, -2, 0.5, 3,  //
                                2, 0, -1.5, 0.5,  //
                                0, 2, 0, -1});
  EXPECT_GRADIENT_OK("Prod", {x, int32_vector({1})}, keep_dims(false));
  EXPECT_GRADIENT_OK("Prod", {x, int32_vector({0})}, keep_dims(true));
  EXPECT_GRADIENT_OK("Prod", {x, int32_vector({0, 1})}, keep_dims(false));
  auto ones = make_tensor({3}, {1, 1, 1});
  auto g = values(rule_grads("Prod", {x, int32_vector({1})}, keep_dims(false), {ones})[0]);
  EXPECT_EQ(g, (std::vector<double>{-3, 2.25, -9, -1.5,  //
                                    0, -1.5, 0, 0,       //
                                    0, 0, 0, 0}));
  EXPECT_GRADIENT_OK("Prod",
                     {make_tensor({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 1, 2}), int32_vector({0, 2})},
                     keep_dims(false));
}

// Ties share the gradient equally, as TensorFlow's.
TEST(ReductionGrad, MaxMinTiesSplitTheGradient) {
  auto x = make_tensor({2, 3}, {3, 1, 3, -2, -2, 5});
  auto dy = make_tensor({2}, {6, 4});
  EXPECT_EQ(values(rule_grads("Max", {x, int32_vector({1})}, keep_dims(false), {dy})[0]),
            (std::vector<double>{3, 0, 3, 0, 0, 4}));
  EXPECT_EQ(values(rule_grads("Min", {x, int32_vector({-1})}, keep_dims(false), {dy})[0]),
            (std::vector<double>{0, 6, 0, 2, 2, 0}));
  auto all = rule_grads("Max", {x, int32_vector({0, 1})}, keep_dims(true), {make_tensor({1, 1}, {10})})[0];
  EXPECT_EQ(all->shape(), Shape({2, 3}));
  EXPECT_EQ(values(all), (std::vector<double>{0, 0, 0, 0, 0, 10}));
}

TEST(ScanGrad, CumsumEveryMode) {
  for (int64_t axis : {0, 1, -1}) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(::testing::Message() << axis << exclusive << reverse);
        EXPECT_GRADIENT_OK("Cumsum", {uniform({3, 4, 2}, -2, 2), int32_scalar(axis)},
                           scan_attrs(exclusive, reverse));
      }
    }
  }
}

TEST(ScanGrad, CumprodEveryMode) {
  for (int64_t axis : {0, 1, -1}) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(::testing::Message() << axis << exclusive << reverse);
        EXPECT_GRADIENT_OK("Cumprod", {uniform({3, 4, 2}, 0.5, 1.5), int32_scalar(axis)},
                           scan_attrs(exclusive, reverse));
        EXPECT_GRADIENT_OK("Cumprod", {uniform({3, 4, 2}, -1.5, 1.5, 9), int32_scalar(axis)},
                           scan_attrs(exclusive, reverse));
      }
    }
  }
}

// Rows with zeros at the start, middle and end, one or several per row, in every scan mode.
TEST(ScanGrad, CumprodWithZeros) {
  auto x = make_tensor({5, 5}, {0,   2,  3,    -1, 0.5,  //
                                1.5, 0,  2,    0,  -2,   //
                                2,   -1, 0.5,  3,  0,    //
                                0,   0,  0,    2,  1,    //
                                1.5, 2,  -0.5, 0,  3});
  for (int64_t axis : {0, 1}) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(::testing::Message() << axis << exclusive << reverse);
        EXPECT_GRADIENT_OK("Cumprod", {x, int32_scalar(axis)}, scan_attrs(exclusive, reverse));
      }
    }
  }
}

// ---- Second order: each rule recorded on a tape and differentiated again.

TEST(ReductionSecondOrder, EveryReduction) {
  for (const char* op : {"Sum", "Mean", "Max", "Min", "ReduceLogSumExp", "Prod"}) {
    for (const Ints& axes : std::vector<Ints>{{1}, {-1, 0}, {0, 1, 2}, {}}) {
      for (bool keepdims : {false, true}) {
        SCOPED_TRACE(::testing::Message() << op << " axes " << axes.size() << (keepdims ? " keepdims" : ""));
        EXPECT_SECOND_ORDER_OK(op, {uniform({2, 3, 2}, 0.5, 1.5), int32_vector(axes)}, keep_dims(keepdims));
      }
    }
  }
}

// Prod's Hessian at rows with one, two and three zeros (the product of all but two elements).
TEST(ReductionSecondOrder, ProdWithZeros) {
  auto x = make_tensor({4, 4}, {1.5, -2, 0.5, 3,  //
                                2, 0, -1.5, 0.5,  //
                                0, 2, 0, -1,      //
                                0, 0, 1.5, 0});
  EXPECT_SECOND_ORDER_OK("Prod", {x, int32_vector({1})}, keep_dims(false));
  EXPECT_SECOND_ORDER_OK("Prod", {x, int32_vector({0})}, keep_dims(true));
  EXPECT_SECOND_ORDER_OK("Prod",
                         {make_tensor({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 1, 2}), int32_vector({0, 2})},
                         keep_dims(false));
}

TEST(ScanSecondOrder, CumsumAndCumprod) {
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(::testing::Message() << exclusive << reverse);
      EXPECT_SECOND_ORDER_OK("Cumsum", {uniform({3, 4}, -2, 2), int32_scalar(1)},
                             scan_attrs(exclusive, reverse));
      EXPECT_SECOND_ORDER_OK("Cumprod", {uniform({3, 4}, -1.5, 1.5, 9), int32_scalar(-1)},
                             scan_attrs(exclusive, reverse));
      EXPECT_SECOND_ORDER_OK("Cumprod", {uniform({4, 3}, 0.5, 1.5, 9), int32_scalar(0)},
                             scan_attrs(exclusive, reverse));
    }
  }
}

// Lines with one, two and three zeros (see Note [Cumprod gradient with zeros]).
TEST(ScanSecondOrder, CumprodWithZeros) {
  auto x = make_tensor({5, 4}, {0,   2,  3,    -1,  //
                                1.5, 0,  2,    0,   //
                                2,   -1, 0.5,  0,   //
                                0,   0,  -0.5, 0,   //
                                1.5, 2,  -0.5, 3});
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(::testing::Message() << exclusive << reverse);
      EXPECT_SECOND_ORDER_OK("Cumprod", {x, int32_scalar(1)}, scan_attrs(exclusive, reverse));
      EXPECT_SECOND_ORDER_OK("Cumprod", {x, int32_scalar(0)}, scan_attrs(exclusive, reverse));
    }
  }
}

// ---- While tracing: every op a rule emits becomes a graph node, and the compiled graph gives the
// eager rule's result.

TEST(ReductionTracedGrad, EveryRule) {
  for (const char* op : {"Sum", "Mean", "Max", "Min", "ReduceLogSumExp", "Prod"}) {
    for (const Ints& axes : std::vector<Ints>{{1}, {0, 2}, {}}) {
      SCOPED_TRACE(::testing::Message() << op << " axes " << axes.size());
      EXPECT_TRACED_GRADIENT_OK(op, {uniform({2, 3, 2}, 0.5, 1.5), int32_vector(axes)}, keep_dims(false));
      EXPECT_TRACED_GRADIENT_OK(op, {uniform({2, 3, 2}, 0.5, 1.5), int32_vector(axes)}, keep_dims(true));
    }
  }
  EXPECT_TRACED_GRADIENT_OK("Cumsum", {uniform({3, 4}, -2, 2), int32_scalar(1)}, scan_attrs(true, false));
  EXPECT_TRACED_GRADIENT_OK("Cumprod", {make_tensor({2, 3}, {0, 2, 0, 1.5, -1, 3}), int32_scalar(-1)},
                            scan_attrs(false, true));
}

TEST(ReductionGrad, EveryOpHasARuleOrIsMarked) {
  for (const char* name : {"Sum", "Mean", "Prod", "Max", "Min", "ReduceLogSumExp", "Cumsum", "Cumprod"}) {
    EXPECT_NE(op_def(name).grad, nullptr) << name;
    EXPECT_FALSE(op_def(name).has_flag(kNotDifferentiable)) << name;
  }
  for (const char* name : {"Any", "All", "ArgMax", "ArgMin"}) {
    EXPECT_EQ(op_def(name).grad, nullptr) << name;
    EXPECT_TRUE(op_def(name).has_flag(kNotDifferentiable)) << name;
  }
}

}  // namespace
}  // namespace ember
