// Shape-like operands (ArgDef::shape_like: Reshape's shape, Fill's dims, BroadcastTo's shape, Tile's
// multiples, Transpose's perm, ExpandDims' axis, a reduction's axis) when their values are only partly
// known while tracing (InferContext::value_of), BroadcastGradientArgs, and the gradient rules that read
// shapes at run time. Expected shapes and values are what TensorFlow 2.21 gives for the same case
// (tf.function with a shape built as tf.stack([tf.shape(y)[0], 2]), and tf.raw_ops.BroadcastGradientArgs);
// where ember knows more than TensorFlow, the comment says so.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/grad_trace_check.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using testing::int32_scalar;
using testing::int32_vector;
using testing::make_tensor;
using testing::random_tensor;
using testing::TraceMode;
using Ints = std::vector<int64_t>;

// Attributes for the INFER_* macros (parentheses keep their commas from the preprocessor).
template <typename... Ts>
std::vector<AttrValue> A(Ts... values) {
  return {AttrValue(values)...};
}

// ---- Shape functions with partially known operands. In the mini-language "=[?,2]" is a value of which
// tracing knows the length and the second element; "[2]:int32" an int vector of unknown values.

TEST(PartialShapeOperands, Reshape) {
  INFER_OK("Reshape", "[6];=[?,2]", A(), "[3,2]");  // the element count fixes the one open dim
  INFER_OK("Reshape", "[?,3];=[?,2]", A(), "[?,2]");
  INFER_OK("Reshape", "[6];=[?,?]", A(), "[?,?]");
  INFER_OK("Reshape", "[6];=[?,3,?]", A(), "[?,3,?]");
  INFER_OK("Reshape", "[6];=[?,-1]", A(), "[?,?]");
  INFER_OK("Reshape", "[0,3];=[?,3]", A(), "[0,3]");
  INFER_OK("Reshape", "[0];=[?,0]", A(), "[?,0]");
  INFER_OK("Reshape", "[2,3];[3]:int32", A(), "[?,?,?]");  // tf.reshape(x, tf.shape(y)), y of rank 3
  INFER_OK("Reshape", "[2,3];[?]:int32", A(), "<unknown>");
  INFER_ERROR("Reshape", "[6];=[?,4]", A(), "6 is not a multiple of 4");
  INFER_ERROR("Reshape", "[6];=[?,0]", A(),
              "cannot reshape a tensor with 6 elements to shape [?,0] (0 elements)");
  INFER_ERROR("Reshape", "[6];[2,2]:int32", A(),
              "Reshape: 'shape' must be a vector, got a tensor of shape [2,2]");
}

TEST(PartialShapeOperands, Fill) {
  INFER_OK("Fill", "=[?,3];[]", A(), "[?,3]");
  INFER_OK("Fill", "[2]:int64;[]:int32", A(), "[?,?]:int32");
  INFER_OK("Fill", "[?]:int32;[]:bool", A(), "<unknown>:bool");
  // TensorFlow infers [?,?] and fails when it runs; the -1 can never be a valid dim.
  INFER_ERROR("Fill", "=[?,-1];[]", A(), "Fill: 'dims' [?, -1]: dimension -1 must be >= 0");
  INFER_ERROR("Fill", "[2,1]:int32;[]", A(), "Fill: 'dims' must be a vector, got a tensor of shape [2,1]");
}

TEST(PartialShapeOperands, BroadcastTo) {
  INFER_OK("BroadcastTo", "[3];=[?,3]", A(), "[?,3]");
  // An unknown target dim against an input dim above 1 can only be that dim.
  INFER_OK("BroadcastTo", "[3];=[?,?]", A(), "[?,3]");
  INFER_OK("BroadcastTo", "[2,1];=[4,?,5]", A(), "[4,2,5]");
  INFER_OK("BroadcastTo", "[?,3];=[?,?]", A(), "[?,3]");
  INFER_OK("BroadcastTo", "[?];=[2,?]", A(), "[2,?]");
  INFER_OK("BroadcastTo", "[1];=[?,?]", A(), "[?,?]");
  INFER_OK("BroadcastTo", "[2,3];[3]:int32", A(), "[?,2,3]");
  INFER_OK("BroadcastTo", "[2,3];[?]:int32", A(), "<unknown>");
  INFER_ERROR("BroadcastTo", "[2];=[?,3]", A(), "cannot broadcast a tensor of shape [2] to shape [?,3]");
  INFER_ERROR("BroadcastTo", "[2,3];=[?]", A(), "cannot broadcast a tensor of shape [2,3] to shape [?]");
}

TEST(PartialShapeOperands, Tile) {
  INFER_OK("Tile", "[2,3];=[?,2]", A(), "[?,6]");
  INFER_OK("Tile", "[0,3];=[?,2]", A(), "[0,6]");  // an empty dim stays empty whatever the multiple
  INFER_OK("Tile", "[?,3];=[2,?]", A(), "[?,?]");
  INFER_OK("Tile", "[2,3];=[?,0]", A(), "[?,0]");
  INFER_OK("Tile", "[1,3];=[?,1]", A(), "[?,3]");
  INFER_OK("Tile", "[2,3];[2]:int32", A(), "[?,?]");
  INFER_OK("Tile", "?;=[?,2]", A(), "[?,?]");
  INFER_ERROR("Tile", "[2,3];=[?]", A(), "one entry per dimension");
  INFER_ERROR("Tile", "[2,3];=[?,-1]", A(), "Tile: multiples[1] must be >= 0, got -1");
}

TEST(PartialShapeOperands, Transpose) {
  // Only a fully known permutation places dims; otherwise the rank stands.
  INFER_OK("Transpose", "[2,3,4];=[?,?,?]", A(), "[?,?,?]");
  INFER_OK("Transpose", "[2,3];=[1,?]", A(), "[?,?]");
  INFER_OK("Transpose", "[3,3];=[?,?]", A(), "[?,?]");
  INFER_OK("Transpose", "?;=[?,?]", A(), "[?,?]");
  INFER_OK("Transpose", "?;[3]:int32", A(), "[?,?,?]");
  INFER_OK("Transpose", "[2,3];[?]:int32", A(), "[?,?]");
  INFER_ERROR("Transpose", "[2,3];[2,2]:int32", A(), "Transpose: perm must be a vector");
}

TEST(PartialShapeOperands, ExpandDims) {
  // TensorFlow gives an unknown shape for an unknown axis; the rank is certain, so ember keeps it.
  INFER_OK("ExpandDims", "[2,3];=?", A(), "[?,?,?]");
  INFER_OK("ExpandDims", "[2,3];[]:int32", A(), "[?,?,?]");
  INFER_OK("ExpandDims", "[2,3];[1]:int64", A(), "[?,?,?]");
  INFER_OK("ExpandDims", "?;=?", A(), "<unknown>");
  INFER_OK("ExpandDims", "[2,3];=[1]", A(), "[2,1,3]");  // a one-element vector works as TF's does
  INFER_ERROR("ExpandDims", "[2,3];[2]:int32", A(), "axis must be a scalar or a one-element vector");
}

TEST(PartialShapeOperands, ReductionWithUnknownAxes) {
  INFER_OK("Sum", "[2,3];=[?]", A(), "<unknown>");
  INFER_OK("Sum", "[2,3];=[?]", A(true), "[?,?]");
  INFER_OK("Sum", "[2,3];=?", A(true), "[?,?]");
  INFER_OK("Sum", "[2,3];=[?,1]", A(), "<unknown>");
  INFER_OK("Mean", "[2,3];[?]:int32", A(true), "[?,?]");
  // A size-1 dim stays 1 whatever is reduced (TensorFlow says [?,?]).
  INFER_OK("Max", "[1,3];=[?]", A(true), "[1,?]");
  INFER_OK("All", "?:bool;=[?]", A(true), "<unknown>:bool");
  INFER_ERROR("Sum", "[2,3];[2,1]:int32", A(), "Sum: 'axis' must be a scalar or a vector");
}

// Indexing and creation ops whose operands are only partly known. TensorFlow's answers are from
// tf.function with n = tf.shape(y)[0] for y of shape [None] (x of shape [5, 6]).

TEST(PartialShapeOperands, StridedSlice) {
  // x[n:3], x[1:n]: TensorFlow gives [?,?] as soon as begin or end is not constant; ember keeps the dims
  // whose begin, end and stride are all known.
  INFER_OK("StridedSlice", "[5,6];=[?,0];=[3,6];=[1,1]", A(), "[?,6]");
  INFER_OK("StridedSlice", "[5,6];=[1,0];=[?,6];=[1,1]", A(), "[?,6]");
  // x[1, 0:n] and x[0:5, n]: a shrunk axis goes whatever its index (TensorFlow: [?] for both).
  INFER_OK("StridedSlice", "[5,6];=[1,0];=[?,6];=[1,1]", A(0, 0, 0, 0, 1), "[6]");
  INFER_OK("StridedSlice", "[5,6];=[0,?];=[5,6];=[1,1]", A(0, 0, 0, 0, 2), "[5]");
  INFER_OK("StridedSlice", "[5,6];[2]:int32;[2]:int32;[2]:int32", A(0, 0, 0, 0, 1), "[?]");
  INFER_OK("StridedSlice", "[5,6];[2]:int32;[2]:int32;[2]:int32", A(), "[?,?]");
}

TEST(PartialShapeOperands, Slice) {
  INFER_OK("Slice", "[5,6];=[1,1];=[?,2]", A(), "[?,2]");
  INFER_OK("Slice", "[5,6];=[1,1];=[?,?]", A(), "[?,?]");
  INFER_OK("Slice", "[5,6];=[1,1];[2]:int32", A(), "[?,?]");
  // An unknown begin does not matter where the size is given; a size of -1 needs that dim's begin.
  INFER_OK("Slice", "[5,6];=[?,1];=[2,-1]", A(), "[2,5]");
  INFER_OK("Slice", "[5,6];=[1,?];=[2,-1]", A(), "[2,?]");
}

TEST(PartialShapeOperands, GatherV2) {
  INFER_OK("GatherV2", "[5,6];[3]:int32;=?", A(), "[?,?]");
  INFER_OK("GatherV2", "[5,6];[3]:int32;[]:int32", A(), "[?,?]");
  INFER_OK("GatherV2", "[5,6];[2,3]:int32;[]:int64", A(), "[?,?,?]");
  INFER_OK("GatherV2", "?;[3]:int32;[]:int32", A(), "<unknown>");
}

TEST(PartialShapeOperands, Pad) {
  // TensorFlow knows [?,8] for tf.pad(x, [[n, 1], [0, 2]]); the mini-language (and ember's partial
  // values) carry no matrices, so these are paddings of unknown values: the rank only, as TensorFlow.
  INFER_OK("Pad", "[5,6];[2,2]:int32", A(), "[?,?]");
  INFER_OK("Pad", "?;[3,2]:int32", A(), "[?,?,?]");
  INFER_OK("Pad", "?;[?,2]:int64", A(0.0, "REFLECT"), "<unknown>");
  // TensorFlow: "Shape must be rank 3 but is rank 2".
  INFER_ERROR("Pad", "[5,6];[3,2]:int32", A(),
              "Pad: paddings must have shape [2, 2] for input of shape [5,6], got [3,2]");
  INFER_ERROR("MirrorPadGrad", "[5,6];[1,2]:int32", A(),
              "MirrorPadGrad: paddings must have shape [2, 2] for dy of shape [5,6], got [1,2]");
}

TEST(PartialShapeOperands, Range) {
  INFER_OK("Range", "=0;[]:int32;=1", A(), "[?]:int32");
  INFER_OK("Range", "=0;=?;=1", A(), "[?]:int32");
  INFER_OK("Range", "=0.0:float32;[];=1.0:float32", A(), "[?]");
  INFER_ERROR("Range", "=0;[2]:int32;=1", A(), "Range: limit must be a scalar, got shape [2]");
}

TEST(PartialShapeOperands, OneHot) {
  INFER_OK("OneHot", "[3]:int32;=?;[];[]", A(), "[3,?]");
  INFER_OK("OneHot", "[1,3]:int32;[]:int32;[];[]", A(0), "[?,1,3]");
}

TEST(PartialShapeOperands, SplitV) {
  // TensorFlow gives [5,?] for every output; ember keeps the sizes it knows.
  INFER_OK("SplitV", "[5,6];=[?,2];=1", A(), "[5,?];[5,2]");
  INFER_OK("SplitV", "[5,6];=[?,2,1];=1", A(), "[5,?];[5,2];[5,1]");
  INFER_OK("SplitV", "[5,6];=[?,-1];=0", A(), "[?,6];[?,6]");
  INFER_OK("SplitV", "[5,6];[2]:int32;=1", A(), "[5,?];[5,?]");
  // With an unknown axis TensorFlow finds [5,1];[5,5] (the one dim the sizes add up to); ember gives the
  // rank only.
  INFER_OK("SplitV", "[5,6];=[1,5];[]:int32", A(), "[?,?];[?,?]");
}

TEST(PartialShapeOperands, LinSpace) { INFER_OK("LinSpace", "[];[];[]:int32", A(), "[?]"); }

// ---- BroadcastGradientArgs

TEST(BroadcastGradientArgs, Shapes) {
  INFER_OK("BroadcastGradientArgs", "=[2,3];=[3]", A(), "[0]:int32;[1]:int32");
  INFER_OK("BroadcastGradientArgs", "=[2,1,3];=[4,1]", A(), "[1]:int32;[2]:int32");
  // TensorFlow's shape function always answers [?] and [?]; ember counts the axes when both are known.
  INFER_OK("BroadcastGradientArgs", "=[?,3];=[3]", A(), "[?]:int32;[?]:int32");
  INFER_OK("BroadcastGradientArgs", "[2]:int64;[1]:int64", A(), "[?]:int64;[?]:int64");
  INFER_ERROR("BroadcastGradientArgs", "=[2,3];=[4]", A(),
              "BroadcastGradientArgs: shapes [2,3] and [4] are not broadcast-compatible");
  INFER_ERROR("BroadcastGradientArgs", "[2,2]:int32;=[3]", A(), "input #0 must be a vector");
}

std::vector<int64_t> as_ints(const Tensor& t) { return t.to_vector<int64_t>(); }

TEST(BroadcastGradientArgs, ValuesMatchTensorFlow) {
  struct Case {
    Ints s0, s1, r0, r1;  // r0, r1 as tf.raw_ops.BroadcastGradientArgs gives them
  };
  const std::vector<Case> cases = {
      {{2, 3}, {3}, {}, {0}},
      {{2, 3}, {2, 3}, {}, {}},
      {{1}, {1}, {}, {}},  // equal shapes reduce nothing, size-1 dims included
      {{2, 1}, {2, 1}, {}, {}},
      {{1, 1}, {1, 1}, {}, {}},
      {{2, 1, 3}, {4, 1}, {1}, {0, 2}},
      {{}, {2, 3}, {0, 1}, {}},
      {{5, 1}, {1, 5}, {1}, {0}},
      {{1, 1}, {1}, {0, 1}, {0, 1}},  // unequal: every size-1 dim on both sides
      {{1, 2}, {1, 1}, {0}, {0, 1}},
      {{2, 1}, {1}, {1}, {0, 1}},
      {{3}, {}, {}, {0}},
      {{1}, {}, {0}, {0}},
      {{}, {}, {}, {}},
      {{0, 3}, {1, 3}, {}, {0}},
      {{1, 0}, {4, 1}, {0}, {1}},
      {{2, 3}, {1, 1, 1}, {0}, {0, 1, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << Shape(c.s0).to_string() << " vs " << Shape(c.s1).to_string());
    for (DType dtype : {DType::kInt32, DType::kInt64}) {
      std::vector<Tensor> r = call_op("BroadcastGradientArgs", {cast(Tensor::from_vector(c.s0), dtype),
                                                                cast(Tensor::from_vector(c.s1), dtype)});
      ASSERT_EQ(r.size(), 2u);
      EXPECT_EQ(r[0].dtype(), dtype);
      EXPECT_EQ(r[1].dtype(), dtype);
      EXPECT_EQ(as_ints(r[0]), c.r0);
      EXPECT_EQ(as_ints(r[1]), c.r1);
    }
  }
}

TEST(BroadcastGradientArgs, IncompatibleShapesAreAnError) {
  try {
    call_op("BroadcastGradientArgs", {Tensor::from_vector(Ints{2, 3}), Tensor::from_vector(Ints{4})});
    ADD_FAILURE() << "expected an error";
  } catch (const StatusError& e) {
    EXPECT_EQ(e.status().code(), Code::kInvalidArgument);
    EXPECT_NE(e.status().message().find("BroadcastGradientArgs: shapes [2,3] and [4] are not "
                                        "broadcast-compatible (dimension 1: 3 vs 4)"),
              std::string::npos)
        << e.status().message();
  }
}

// ---- Gradient rules whose shapes are known only at run time: traced with the shape operand as a
// function argument, or with every dim of the other arguments unknown (grad_trace_check.h).

TensorRef positive(const Ints& dims, unsigned seed = 3) { return random_tensor(dims, seed, 0.5, 1.5); }

const TraceMode kShapeArgs{.shape_operands_as_arguments = true};
const TraceMode kUnknownDims{.unknown_dims = true};
const TraceMode kBoth{.shape_operands_as_arguments = true, .unknown_dims = true};

TEST(RunTimeShapeGradients, ReshapeFillBroadcastTo) {
  for (const TraceMode& mode : {kShapeArgs, kUnknownDims, kBoth}) {
    SCOPED_TRACE(::testing::Message() << mode.shape_operands_as_arguments << mode.unknown_dims);
    EXPECT_TRACED_GRADIENT_OK("Reshape", {random_tensor({2, 3}), int32_vector({3, -1})}, {}, mode);
    EXPECT_TRACED_GRADIENT_OK("Fill", {int32_vector({2, 3}), random_tensor({})}, {}, mode);
    // The reverse of a broadcast known only at run time: BroadcastGradientArgs picks the axes to sum.
    EXPECT_TRACED_GRADIENT_OK("BroadcastTo", {random_tensor({2, 1}), int32_vector({3, 2, 4})}, {}, mode);
    EXPECT_TRACED_GRADIENT_OK("BroadcastTo", {random_tensor({3}), int32_vector({3})}, {}, mode);
  }
  EXPECT_TRACED_GRADIENT_OK("ExpandDims", {random_tensor({2, 3}), int32_scalar(1)}, {}, kUnknownDims);
  EXPECT_TRACED_GRADIENT_OK("Transpose", {random_tensor({2, 3, 4}), int32_vector({2, 0, 1})}, {},
                            kUnknownDims);
}

TEST(RunTimeShapeGradients, ReductionsWithUnknownDims) {
  for (const char* op : {"Sum", "Mean", "Max", "Min", "ReduceLogSumExp", "Prod"}) {
    for (const Ints& axes : std::vector<Ints>{{1}, {0, 2}, {-1}, {}}) {
      for (bool keepdims : {false, true}) {
        SCOPED_TRACE(::testing::Message() << op << " axes " << axes.size() << (keepdims ? " keepdims" : ""));
        EXPECT_TRACED_GRADIENT_OK(op, {positive({2, 3, 2}), int32_vector(axes)}, {AttrValue(keepdims)},
                                  kUnknownDims);
      }
    }
  }
}

TEST(RunTimeShapeGradients, BroadcastingBinaryOpsWithUnknownDims) {
  // Mul's and Add's rules reduce each gradient to its input's shape; with unknown dims that is
  // BroadcastGradientArgs at run time.
  for (const char* op : {"Mul", "Add", "Sub"}) {
    SCOPED_TRACE(op);
    EXPECT_TRACED_GRADIENT_OK(op, {random_tensor({2, 1, 3}, 1), random_tensor({4, 1}, 2)}, {}, kUnknownDims);
    EXPECT_TRACED_GRADIENT_OK(op, {random_tensor({1}, 1), random_tensor({1}, 2)}, {}, kUnknownDims);
    EXPECT_TRACED_GRADIENT_OK(op, {random_tensor({}, 1), random_tensor({2, 3}, 2)}, {}, kUnknownDims);
  }
}

// Transpose's rule inverts a permutation computed in the graph with InvertPermutation.
TEST(RunTimeShapeGradients, TransposeWithAPermutationComputedInTheGraph) {
  EXPECT_TRACED_GRADIENT_OK("Transpose", {random_tensor({2, 3, 4}), int32_vector({2, 0, 1})}, {}, kShapeArgs);
}

// The reductions' rules work from axes computed in the graph: the kept-dims shape is built at run time
// (what a broadcasting op's gradient, differentiated again, needs); Prod's computes the permutation that
// gathers the reduced axes (Note [Product gradient with zeros]).
TEST(RunTimeShapeGradients, ReductionsWithAxesComputedInTheGraph) {
  for (const TraceMode& mode : {kShapeArgs, kBoth}) {
    SCOPED_TRACE(::testing::Message() << mode.shape_operands_as_arguments << mode.unknown_dims);
    for (const char* op : {"Sum", "Mean", "Max", "Min", "ReduceLogSumExp", "Prod"}) {
      SCOPED_TRACE(op);
      for (bool keep_dims : {false, true}) {
        EXPECT_TRACED_GRADIENT_OK(op, {random_tensor({2, 3, 4}), int32_vector({-1, 0})},
                                  {AttrValue(keep_dims)}, mode);
        EXPECT_TRACED_GRADIENT_OK(op, {random_tensor({2, 3, 4}), int32_vector({1})}, {AttrValue(keep_dims)},
                                  mode);
        EXPECT_TRACED_GRADIENT_OK(op, {random_tensor({2, 3}), int32_vector({})}, {AttrValue(keep_dims)},
                                  mode);
      }
    }
  }
}

// ConcatV2's axis computed in the graph: its rule slices dy at offsets ConcatOffset computes at run time.
TEST(RunTimeShapeGradients, ConcatWithAnAxisComputedInTheGraph) {
  for (const TraceMode& mode : {kShapeArgs, kUnknownDims, kBoth}) {
    SCOPED_TRACE(::testing::Message() << mode.shape_operands_as_arguments << mode.unknown_dims);
    EXPECT_TRACED_GRADIENT_OK(
        "ConcatV2",
        {random_tensor({2, 1}, 1), random_tensor({2, 3}, 2), random_tensor({2, 2}, 3), int32_scalar(1)}, {},
        mode);
    EXPECT_TRACED_GRADIENT_OK(
        "ConcatV2", {random_tensor({1, 3}, 1), random_tensor({2, 3}, 2), int32_scalar(-2)}, {}, mode);
    EXPECT_TRACED_GRADIENT_OK("ConcatV2", {random_tensor({2, 3}, 1), int32_scalar(0)}, {}, mode);
  }
}

// Tile's rule reads the multiples from the graph when they are not known while tracing.
TEST(RunTimeShapeGradients, TileWithMultiplesComputedInTheGraph) {
  for (const TraceMode& mode : {kShapeArgs, kUnknownDims, kBoth}) {
    SCOPED_TRACE(::testing::Message() << mode.shape_operands_as_arguments << mode.unknown_dims);
    EXPECT_TRACED_GRADIENT_OK("Tile", {random_tensor({2, 3}), int32_vector({2, 1})}, {}, mode);
    EXPECT_TRACED_GRADIENT_OK("Tile", {random_tensor({2, 1, 3}), int32_vector({1, 3, 2})}, {}, mode);
    EXPECT_TRACED_GRADIENT_OK("Tile", {random_tensor({2, 3}), int32_vector({0, 2})}, {}, mode);
  }
}

}  // namespace
}  // namespace ember
