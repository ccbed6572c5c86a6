// Shape functions of the array ops (ops/array.cc, array_index.cc, array_create.cc) in the INFER_OK
// mini-language, including unknown dims and unknown rank. Kernel values are in array_kernels_test.cc and
// array_index_test.cc.
#include <gtest/gtest.h>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using Ints = std::vector<int64_t>;

// Attributes for the INFER_* macros: parentheses keep the commas away from the preprocessor.
inline AttrValue av(int v) { return int64_t{v}; }
inline AttrValue av(int64_t v) { return v; }
inline AttrValue av(double v) { return v; }
inline AttrValue av(DType v) { return v; }
inline AttrValue av(const Ints& v) { return v; }
inline AttrValue av(const char* v) { return std::string(v); }
template <typename... Args>
std::vector<AttrValue> A(const Args&... args) {
  return {av(args)...};
}

TEST(ArrayShapes, Bitcast) {
  INFER_OK("Bitcast", "[2,3]", A(DType::kInt32), "[2,3]:int32");
  INFER_OK("Bitcast", "[?,3]", A(DType::kUInt8), "[?,3,4]:uint8");
  INFER_OK("Bitcast", "[]:int64", A(DType::kInt16), "[4]:int16");
  INFER_OK("Bitcast", "[5,2]:int16", A(DType::kFloat32), "[5]");
  INFER_OK("Bitcast", "[5,?]:int16", A(DType::kInt32), "[5]:int32");
  INFER_OK("Bitcast", "?:int8", A(DType::kInt64), "<unknown>:int64");
  INFER_ERROR("Bitcast", "[3]:int16", A(DType::kInt32), "the input's last dim must be 2, got shape [3]");
  INFER_ERROR("Bitcast", "[]", A(DType::kFloat64), "the input's last dim must be 2, got shape []");
  INFER_ERROR("Bitcast", "[2]", A(DType::kBool), "cannot bitcast to bool");
}

TEST(ArrayShapes, Reshape) {
  INFER_OK("Reshape", "[2,3];=[3,2]", A(), "[3,2]");
  INFER_OK("Reshape", "[2,3];=[-1]", A(), "[6]");
  INFER_OK("Reshape", "[2,3]:int32;=[3,-1]", A(), "[3,2]:int32");
  INFER_OK("Reshape", "[];=[1,1]", A(), "[1,1]");
  INFER_OK("Reshape", "[1,1];=[]", A(), "[]");
}

TEST(ArrayShapes, ReshapeEmpty) {
  INFER_OK("Reshape", "[0];=[0,-1]", A(), "[0,1]");
  INFER_OK("Reshape", "[2,0,3];=[0,-1]", A(), "[0,6]");
  INFER_OK("Reshape", "[0,4];=[2,0]", A(), "[2,0]");
}

TEST(ArrayShapes, ReshapeUnknown) {
  INFER_OK("Reshape", "[?,3];=[-1]", A(), "[?]");
  INFER_OK("Reshape", "?;=[2,-1]", A(), "[2,?]");
  INFER_OK("Reshape", "?;=[2,3]", A(), "[2,3]");
}

TEST(ArrayShapes, ReshapeErrors) {
  INFER_ERROR("Reshape", "[6];=[4]", A(),
              "Reshape: cannot reshape a tensor with 6 elements to shape [4] (4 elements)");
  INFER_ERROR("Reshape", "[6];=[4,-1]", A(), "6 is not a multiple of 4");
  INFER_ERROR("Reshape", "[6];=[-1,-1]", A(), "only one dimension");
  INFER_ERROR("Reshape", "[6];=[-2,-3]", A(), "is -2");
  INFER_ERROR("Reshape", "[1];=[1,1,1,1,1,1,1,1,1]", A(), "maximum");
  INFER_ERROR("Reshape", "[6]", A(), "expected 2 input(s), got 1");
}

TEST(ArrayShapes, Transpose) {
  INFER_OK("Transpose", "[2,3];=[1,0]", A(), "[3,2]");
  INFER_OK("Transpose", "[2,3,4];=[2,0,1]", A(), "[4,2,3]");
  INFER_OK("Transpose", "[2,?,4];=[1,2,0]", A(), "[?,4,2]");
  INFER_OK("Transpose", "[2,3];=[-1,0]", A(), "[3,2]");
  INFER_OK("Transpose", "?;=[1,0]", A(), "[?,?]");
  INFER_OK("Transpose", "[]:bool;=[]", A(), "[]:bool");
}

TEST(ArrayShapes, TransposeErrors) {
  INFER_ERROR("Transpose", "[2,3];=[0,0]", A(), "Transpose: perm [0,0] is not a permutation of [0, 1]");
  INFER_ERROR("Transpose", "[2,3];=[0,2]", A(), "not a permutation");
  INFER_ERROR("Transpose", "[2,3];=[0,1,2]", A(), "has 3 entries but the input has rank 2");
  INFER_ERROR("Transpose", "?;=[0,0]", A(), "not a permutation");
}

TEST(ArrayShapes, ExpandDims) {
  INFER_OK("ExpandDims", "[2,3];=0", A(), "[1,2,3]");
  INFER_OK("ExpandDims", "[2,3];=2", A(), "[2,3,1]");
  INFER_OK("ExpandDims", "[2,3];=-1", A(), "[2,3,1]");
  INFER_OK("ExpandDims", "[2,3];=-3", A(), "[1,2,3]");
  INFER_OK("ExpandDims", "[];=0", A(), "[1]");
  INFER_OK("ExpandDims", "[?,3];=1", A(), "[?,1,3]");
  INFER_OK("ExpandDims", "?;=5", A(), "<unknown>");
  INFER_ERROR("ExpandDims", "[2];=3", A(), "ExpandDims: axis 3 is out of range for a tensor of rank 1");
  INFER_ERROR("ExpandDims", "[2];=-3", A(), "expected an axis in [-2, 1]");
  INFER_ERROR("ExpandDims", "[1,1,1,1,1,1,1,1];=0", A(), "maximum");
}

TEST(ArrayShapes, Squeeze) {
  INFER_OK("Squeeze", "[1,2,1,3]", A(), "[2,3]");
  INFER_OK("Squeeze", "[1,2,1,3]", A(Ints{0}), "[2,1,3]");
  INFER_OK("Squeeze", "[1,2,1,3]", A(Ints{-2}), "[1,2,3]");
  INFER_OK("Squeeze", "[1,?,3]", A(Ints{1}), "[1,3]");
  INFER_OK("Squeeze", "[1,?,3]", A(), "<unknown>");
  INFER_OK("Squeeze", "[2,3]", A(), "[2,3]");
  INFER_OK("Squeeze", "?", A(Ints{0}), "<unknown>");
  INFER_ERROR("Squeeze", "[2,3]", A(Ints{1}),
              "Squeeze: cannot squeeze dim 1 of shape [2,3]: expected a dimension of size 1, got 3");
  INFER_ERROR("Squeeze", "[2,3]", A(Ints{2}), "out of range");
}

TEST(ArrayShapes, ShapeSizeRankIdentity) {
  INFER_OK("Shape", "[2,?,4]", A(), "[3]:int32");
  INFER_OK("Shape", "?", A(), "[?]:int32");
  INFER_OK("Shape", "[]", A(DType::kInt64), "[0]:int64");
  INFER_ERROR("Shape", "[2]", A(DType::kFloat32), "out_type must be int32 or int64");
  INFER_OK("Size", "[2,?]", A(), "[]:int32");
  INFER_OK("Size", "?", A(DType::kInt64), "[]:int64");
  INFER_OK("Rank", "?", A(), "[]:int32");
  INFER_OK("Identity", "[2,?]:float16", A(), "[2,?]:float16");
  INFER_OK("Identity", "?", A(), "<unknown>");
}

TEST(ArrayShapes, ConcatV2) {
  INFER_OK("ConcatV2", "[2,3];[4,3];=0", A(), "[6,3]");
  INFER_OK("ConcatV2", "[2,3];[2,5];[2,1];=1", A(), "[2,9]");
  INFER_OK("ConcatV2", "[2,3];[2,5];=-1", A(), "[2,8]");
  INFER_OK("ConcatV2", "[2,3];[2,5];=-1:int64", A(), "[2,8]");
  INFER_OK("ConcatV2", "[2,3];=0", A(), "[2,3]");
  INFER_OK("ConcatV2", "[?,3];[4,?];=0", A(), "[?,3]");
  INFER_OK("ConcatV2", "[2,?];[?,5];=1", A(), "[2,?]");
  INFER_OK("ConcatV2", "?;[4,3];=0", A(), "[?,3]");
  INFER_OK("ConcatV2", "?;?;=0", A(), "<unknown>");
  INFER_OK("ConcatV2", "[2]:int32;[3]:int32;=0", A(), "[5]:int32");
}

// The axis computed in the graph: the rank is known, not which dim adds up (one value keeps its shape).
TEST(ArrayShapes, ConcatV2AxisUnknownWhileTracing) {
  INFER_OK("ConcatV2", "[2,3];[2,5];[]:int32", A(), "[?,?]");
  INFER_OK("ConcatV2", "[2,3];?;[]:int64", A(), "[?,?]");
  INFER_OK("ConcatV2", "[2,3];[]:int32", A(), "[2,3]");
  INFER_OK("ConcatV2", "?;?;[]:int32", A(), "<unknown>");
  INFER_OK("ConcatV2", "[2,3];[2,5];?:int32", A(), "[?,?]");
  INFER_ERROR("ConcatV2", "[2,3];[2];[]:int32", A(), "same rank");
  INFER_ERROR("ConcatV2", "[];[];[]:int32", A(), "cannot concatenate scalars");
}

TEST(ArrayShapes, ConcatV2Errors) {
  INFER_ERROR("ConcatV2", "[2,3];[2,4];=0", A(), "dimension 1 of input #1 (shape [2,4]) is 4 but input #0");
  INFER_ERROR("ConcatV2", "[2,3];[2];=0", A(), "same rank");
  INFER_ERROR("ConcatV2", "[];[];=0", A(), "cannot concatenate scalars");
  INFER_ERROR("ConcatV2", "[2];[2];=1", A(), "axis 1 is out of range");
  INFER_ERROR("ConcatV2", "[2];[2];=-2", A(), "axis -2 is out of range");
  INFER_ERROR("ConcatV2", "[2]:float32;[2]:int32;=0", A(), "does not promote");
  INFER_ERROR("ConcatV2", "[2];[2];=[0]", A(), "ConcatV2: axis must be a scalar, got a tensor of shape [1]");
  INFER_ERROR("ConcatV2", "[2];[2];[]:float32", A(),
              "ConcatV2: input 'axis' must have a dtype in {int32, int64}");
  INFER_ERROR("ConcatV2", "=0", A(), "at least 2 input(s), got 1");
}

TEST(ArrayShapes, ConcatOffset) {
  INFER_OK("ConcatOffset", "=1;[3]:int32;[3]:int32;[3]:int32", A(), "[3]:int32;[3]:int32;[3]:int32");
  INFER_OK("ConcatOffset", "[]:int32;[?]:int64;[2]:int64", A(), "[2]:int64;[2]:int64");
  INFER_OK("ConcatOffset", "[]:int32;?:int32;?:int32", A(), "[?]:int32;[?]:int32");
  INFER_ERROR("ConcatOffset", "=1;[3]:int32", A(), "expected at least 2 shapes, got 1");
  INFER_ERROR("ConcatOffset", "=1;[3]:int32;[2]:int32", A(), "shape #1 has 2 elements but shape #0 has 3");
  INFER_ERROR("ConcatOffset", "=[1];[3]:int32;[3]:int32", A(), "concat_dim must be a scalar");
  INFER_ERROR("ConcatOffset", "=1;[3,1]:int32;[3]:int32", A(), "shape #0 must be a vector");
  INFER_ERROR("ConcatOffset", "=1;[3]:int32;[3]:int64", A(), "does not promote");
  INFER_ERROR("ConcatOffset", "=1:int64;[3]:int32;[3]:int32", A(),
              "'concat_dim' must have a dtype in {int32}");
}

TEST(ArrayShapes, Pack) {
  INFER_OK("Pack", "[2,3];[2,3]", A(), "[2,2,3]");
  INFER_OK("Pack", "[2,3];[2,3];[2,3]", A(1), "[2,3,3]");
  INFER_OK("Pack", "[2,3];[2,3]", A(-1), "[2,3,2]");
  INFER_OK("Pack", "[];[];[]", A(), "[3]");
  INFER_OK("Pack", "[?,3];[2,?]", A(), "[2,2,3]");
  INFER_OK("Pack", "?;[2]", A(), "[2,2]");
  INFER_OK("Pack", "?;?", A(), "<unknown>");
  INFER_ERROR("Pack", "[2,3];[3,2]", A(), "same shape");
  INFER_ERROR("Pack", "[2];[2]", A(2), "Pack: axis 2 is out of range");
}

TEST(ArrayShapes, Unpack) {
  INFER_OK("Unpack", "[3,2]", A(), "[2];[2];[2]");
  INFER_OK("Unpack", "[3,2]", A(2, 1), "[3];[3]");
  INFER_OK("Unpack", "[3,2]", A(-1, -1), "[3];[3]");
  INFER_OK("Unpack", "[?,2]", A(2), "[2];[2]");
  INFER_OK("Unpack", "?", A(2), "<unknown>;<unknown>");
  INFER_OK("Unpack", "[0,2]", A(), "");
  INFER_ERROR("Unpack", "[3,2]", A(2), "Unpack: num is 2 but dimension 0 of shape [3,2] is 3");
  INFER_ERROR("Unpack", "[?,2]", A(), "cannot infer num");
  INFER_ERROR("Unpack", "?", A(), "cannot infer num");
  INFER_ERROR("Unpack", "[]", A(), "scalar");
  INFER_ERROR("Unpack", "[3]", A(-1, 1), "axis 1 is out of range");
}

TEST(ArrayShapes, SplitV) {
  INFER_OK("SplitV", "[6,2];=[1,2,3];=0", A(), "[1,2];[2,2];[3,2]");
  INFER_OK("SplitV", "[6,4];=[1,-1];=1", A(), "[6,1];[6,3]");
  INFER_OK("SplitV", "[6,4];=[4];=-1", A(), "[6,4]");
  INFER_OK("SplitV", "[?,4];=[1,-1];=0", A(), "[1,4];[?,4]");
  INFER_OK("SplitV", "?;=[1,2];=0", A(), "<unknown>;<unknown>");
  INFER_ERROR("SplitV", "[6];=[1,2,2];=0", A(), "must sum to the size of the split dimension, 6; got 5");
  INFER_ERROR("SplitV", "[6];=[4,-1,3];=0", A(), "or less, with a -1 entry");
  INFER_ERROR("SplitV", "[6];=[-1,-1];=0", A(), "only one entry");
  INFER_ERROR("SplitV", "[6];=[-2,8];=0", A(), "negative");
  INFER_ERROR("SplitV", "[6];=[];=0", A(), "must not be empty");
  INFER_ERROR("SplitV", "[6];=[6];=1", A(), "out of range");
}

TEST(ArrayShapes, Slice) {
  INFER_OK("Slice", "[4,5];=[1,2];=[2,3]", A(), "[2,3]");
  INFER_OK("Slice", "[4,5];=[1,2];=[-1,-1]", A(), "[3,3]");
  INFER_OK("Slice", "[?,5];=[1,2];=[-1,1]", A(), "[?,1]");
  INFER_OK("Slice", "?;=[1,2];=[-1,1]", A(), "[?,1]");
  INFER_OK("Slice", "[4];=[4];=[0]", A(), "[0]");
  INFER_ERROR("Slice", "[3];=[1];=[5]", A(), "expected size[0] in [0, 2]");
  INFER_ERROR("Slice", "[3];=[-1];=[1]", A(), "expected begin[0] in [0, 3]");
  INFER_ERROR("Slice", "[3];=[4];=[-1]", A(), "got 4");
  INFER_ERROR("Slice", "[3,3];=[1];=[1]", A(), "one entry per dimension");
  INFER_ERROR("Slice", "?;=[1];=[1,1]", A(), "same length");
}

// x[b:e:s] specs are spelled as TensorFlow's Python front end builds them.
TEST(ArrayShapes, StridedSliceBasics) {
  // x[1:3]
  INFER_OK("StridedSlice", "[5,6];=[1];=[3];=[1]", A(), "[2,6]");
  // x[1]
  INFER_OK("StridedSlice", "[5,6];=[1];=[2];=[1]", A(0, 0, 0, 0, 1), "[6]");
  // x[-1, ::2]
  INFER_OK("StridedSlice", "[5,6];=[-1,0];=[0,0];=[1,2]", A(2, 2, 0, 0, 1), "[3]");
  // x[::-1]
  INFER_OK("StridedSlice", "[5,6];=[0];=[0];=[-1]", A(1, 1), "[5,6]");
  // x[3:1] is empty; x[10:20] clamps to empty
  INFER_OK("StridedSlice", "[5];=[3];=[1];=[1]", A(), "[0]");
  INFER_OK("StridedSlice", "[5];=[10];=[20];=[1]", A(), "[0]");
  // x[-100:100:3]
  INFER_OK("StridedSlice", "[5];=[-100];=[100];=[3]", A(), "[2]");
  // x[4:0:-2]
  INFER_OK("StridedSlice", "[5];=[4];=[0];=[-2]", A(), "[2]");
}

TEST(ArrayShapes, StridedSliceEllipsisAndNewAxis) {
  // x[..., 0]
  INFER_OK("StridedSlice", "[2,3,4];=[0,0];=[0,1];=[1,1]", A(0, 0, 1, 0, 2), "[2,3]");
  // x[None]
  INFER_OK("StridedSlice", "[2,3];=[0];=[0];=[1]", A(0, 0, 0, 1), "[1,2,3]");
  // x[:, None, 1]
  INFER_OK("StridedSlice", "[2,3];=[0,0,1];=[0,0,2];=[1,1,1]", A(1, 1, 0, 2, 4), "[2,1]");
  // x[0, ..., None]
  INFER_OK("StridedSlice", "[2,3,4];=[0,0,0];=[1,0,0];=[1,1,1]", A(0, 0, 2, 4, 1), "[3,4,1]");
  // x[..., None, 1:]
  INFER_OK("StridedSlice", "[2,3];=[0,0,1];=[0,0,0];=[1,1,1]", A(0, 4, 1, 2), "[2,1,2]");
  // x[...] on a scalar
  INFER_OK("StridedSlice", "[];=[0];=[0];=[1]", A(0, 0, 1), "[]");
}

TEST(ArrayShapes, StridedSliceUnknown) {
  INFER_OK("StridedSlice", "[?,6];=[1];=[3];=[1]", A(), "[?,6]");
  INFER_OK("StridedSlice", "[?,6];=[1];=[2];=[1]", A(0, 0, 0, 0, 1), "[6]");
  INFER_OK("StridedSlice", "?;=[1];=[2];=[1]", A(), "<unknown>");
  INFER_OK("StridedSlice", "[5,?]:int64;=[0,0];=[0,1];=[1,1]", A(1, 1), "[5,?]:int64");
}

TEST(ArrayShapes, StridedSliceErrors) {
  INFER_ERROR("StridedSlice", "[3];=[5];=[6];=[1]", A(0, 0, 0, 0, 1),
              "StridedSlice: index 5 is out of bounds for axis 0 with size 3");
  INFER_ERROR("StridedSlice", "[3];=[-4];=[-3];=[1]", A(0, 0, 0, 0, 1),
              "index -4 is out of bounds for axis 0 with size 3");
  INFER_ERROR("StridedSlice", "[3];=[0];=[0];=[0]", A(), "strides[0] must be non-zero");
  INFER_ERROR("StridedSlice", "[3];=[0,0];=[1,1];=[1,1]", A(), "too many indices");
  INFER_ERROR("StridedSlice", "[3];=[0];=[1,1];=[1]", A(), "same length");
  INFER_ERROR("StridedSlice", "[3,3];=[0,0];=[0,0];=[1,1]", A(0, 0, 3), "at most one ellipsis");
}

TEST(ArrayShapes, GatherV2) {
  INFER_OK("GatherV2", "[5,3];[4]:int32;=0", A(), "[4,3]");
  INFER_OK("GatherV2", "[5,3];[2,4]:int64;=1", A(), "[5,2,4]");
  INFER_OK("GatherV2", "[5,3];[]:int32;=0", A(), "[3]");
  INFER_OK("GatherV2", "[5,3,2];[4]:int32;=-2", A(), "[5,4,2]");
  INFER_OK("GatherV2", "[?,3];[?]:int32;=0", A(), "[?,3]");
  INFER_OK("GatherV2", "?;[4]:int32;=0", A(), "<unknown>");
  INFER_OK("GatherV2", "[5,3];?:int32;=0", A(), "<unknown>");
  INFER_OK("GatherV2", "[2,5,3];[2,4]:int32;=1", A(1), "[2,4,3]");
  INFER_OK("GatherV2", "[?,5,3];[2,4]:int32;=1", A(-1), "[2,4,3]");
  INFER_ERROR("GatherV2", "[5,3];[4]:float32;=0", A(), "must have a dtype in {int32, int64}");
  INFER_ERROR("GatherV2", "[5,3];[4]:int32;=2", A(), "axis 2 is out of range");
  INFER_ERROR("GatherV2", "[];[4]:int32;=0", A(), "at least 1-D");
  INFER_ERROR("GatherV2", "[2,5];[3,4]:int32;=1", A(1), "dimension 0 is 2 vs 3");
  INFER_ERROR("GatherV2", "[2,5];[2,4]:int32;=0", A(1),
              "batch_dims (1) must be less than or equal to axis (0)");
  INFER_ERROR("GatherV2", "[2,5];[2]:int32;=1", A(2), "batch_dims 2 must be in [-1, 1]");
}

TEST(ArrayShapes, TileBroadcastToPad) {
  INFER_OK("Tile", "[2,3];=[2,3]", A(), "[4,9]");
  INFER_OK("Tile", "[?,3];=[2,0]", A(), "[?,0]");
  INFER_OK("Tile", "?;=[2,3]", A(), "[?,?]");
  INFER_ERROR("Tile", "[2,3];=[2]", A(), "one entry per dimension");
  INFER_ERROR("Tile", "[2,3];=[2,-1]", A(), "multiples[1] must be >= 0, got -1");
  INFER_OK("BroadcastTo", "[3];=[2,3]", A(), "[2,3]");
  INFER_OK("BroadcastTo", "[2,1]:bool;=[4,2,5]", A(), "[4,2,5]:bool");
  INFER_OK("BroadcastTo", "?;=[2,3]", A(), "[2,3]");
  INFER_OK("BroadcastTo", "[?];=[2,3]", A(), "[2,3]");
  INFER_ERROR("BroadcastTo", "[2];=[3]", A(), "cannot broadcast a tensor of shape [2] to shape [3]");
  INFER_ERROR("BroadcastTo", "[2,3];=[3]", A(), "cannot broadcast");
  INFER_ERROR("BroadcastTo", "[2];=[-1]", A(), "BroadcastTo: 'shape' [-1]: dimension -1 must be >= 0");
  INFER_OK("Pad", "[2,3];=[[1,1],[0,2]]", A(), "[4,5]");
  INFER_OK("Pad", "[?,3];=[[1,1],[0,2]]", A(0.0, "REFLECT"), "[?,5]");
  INFER_OK("Pad", "?;=[[1,1],[0,2]]", A(), "[?,?]");
  INFER_ERROR("Pad", "[2,3];=[[1,1]]", A(), "paddings must have shape [2, 2]");
  INFER_ERROR("Pad", "[2,3];=[[-1,1],[0,0]]", A(), "must be non-negative");
  INFER_ERROR("Pad", "[1,3];=[[1,1],[0,0]]", A(0.0, "REFLECT"), "REFLECT paddings must be less than");
  INFER_ERROR("Pad", "[1,3];=[[2,1],[0,0]]", A(0.0, "SYMMETRIC"), "SYMMETRIC paddings must be no greater");
  INFER_OK("Pad", "[1,3];=[[1,1],[0,0]]", A(0.0, "symmetric"), "[3,3]");
  INFER_ERROR("Pad", "[1,3];=[[0,0],[0,0]]", A(0.0, "WRAP"), "mode must be CONSTANT, REFLECT or SYMMETRIC");
}

TEST(ArrayShapes, SelectV2AndWhere) {
  INFER_OK("SelectV2", "[2,3]:bool;[2,3];[2,3]", A(), "[2,3]");
  INFER_OK("SelectV2", "[3]:bool;[2,1]:int32;[]:int32", A(), "[2,3]:int32");
  INFER_OK("SelectV2", "[?]:bool;[2,1];[1]", A(), "[2,?]");
  INFER_OK("SelectV2", "?:bool;[2];[2]", A(), "<unknown>");
  INFER_ERROR("SelectV2", "[2]:bool;[3];[]", A(), "condition [2], t [3] and e [] must be broadcastable");
  INFER_ERROR("SelectV2", "[2]:int32;[2];[2]", A(), "must have a dtype in {bool}");
  INFER_ERROR("SelectV2", "[2]:bool;[2]:int32;[2]", A(), "does not promote");
  INFER_OK("Where", "[2,3]:bool", A(), "[?,2]:int64");
  INFER_OK("Where", "[?]:float32", A(), "[?,1]:int64");
  INFER_OK("Where", "?:int32", A(), "[?,?]:int64");
  INFER_ERROR("Where", "[]:bool", A(), "rank >= 1");
}

TEST(ArrayShapes, ClipByValue) {
  INFER_OK("ClipByValue", "[2,3];[];[]", A(), "[2,3]");
  INFER_OK("ClipByValue", "[2,3];[3];[2,1]", A(), "[2,3]");
  INFER_OK("ClipByValue", "[?,3];[2,3];[]", A(), "[?,3]");
  INFER_OK("ClipByValue", "?;[2,3];[]", A(), "<unknown>");
  INFER_ERROR("ClipByValue", "[3];[2,3];[]", A(),
              "clip_value_min of shape [2,3] must broadcast to the shape of t, [3]");
  INFER_ERROR("ClipByValue", "[3];[];[2]", A(), "clip_value_max");
  INFER_ERROR("ClipByValue", "[3]:bool;[]:bool;[]:bool", A(), "must have a dtype in");
}

TEST(ArrayShapes, OneHot) {
  INFER_OK("OneHot", "[4]:int32;=3;[];[]", A(), "[4,3]");
  INFER_OK("OneHot", "[4,2]:int64;=3;[];[]", A(0), "[3,4,2]");
  INFER_OK("OneHot", "[4,2]:uint8;=3;[]:int32;[]:int32", A(1), "[4,3,2]:int32");
  INFER_OK("OneHot", "[?]:int32;=5;[]:bool;[]:bool", A(-1), "[?,5]:bool");
  INFER_OK("OneHot", "?:int32;=5;[];[]", A(), "<unknown>");
  INFER_ERROR("OneHot", "[4]:int32;=-1;[];[]", A(), "depth must be non-negative, got -1");
  INFER_ERROR("OneHot", "[4]:int32;=3;[];[]", A(-2), "axis must be -1 or in [0, 1]");
  INFER_ERROR("OneHot", "[4]:float32;=3;[];[]", A(), "must have a dtype in");
}

TEST(ArrayShapes, Creation) {
  INFER_OK("Fill", "=[2,3];[]:int32", A(), "[2,3]:int32");
  INFER_OK("Fill", "=[];?:bool", A(), "[]:bool");
  INFER_ERROR("Fill", "=[2];[2]", A(), "Fill: value must be a scalar, got shape [2]");
  INFER_ERROR("Fill", "=[2,-1];[]", A(), "Fill: 'dims' [2, -1]: dimension -1 must be >= 0");
  INFER_OK("ZerosLike", "[2,?]:int8", A(), "[2,?]:int8");
  INFER_OK("OnesLike", "?:bool", A(), "<unknown>:bool");
  INFER_OK("Eye", "", A(3), "[3,3]");
  INFER_OK("Eye", "", A(2, 4, Ints{5}, DType::kInt32), "[5,2,4]:int32");
  INFER_ERROR("Eye", "", A(-1), "num_rows must be >= 0");
  INFER_ERROR("Eye", "", A(2, -2), "num_columns must be >= 0");
  INFER_ERROR("Eye", "", A(2, 2, Ints{1, 1, 1, 1, 1, 1, 1}), "maximum");
  INFER_OK("Range", "=0.0:float32;=5.0:float32;=1.0:float32", A(), "[5]");
  INFER_OK("Range", "=1;=10;=3", A(), "[3]:int32");
  INFER_OK("Range", "=0.0:float32;=1.0:float32;=0.1:float32", A(), "[10]");
  INFER_ERROR("Range", "=5:int64;=1:int64;=1:int64", A(), "requires start <= limit");
  INFER_ERROR("Range", "=1:int64;=5:int64;=-1:int64", A(), "requires start >= limit");
  INFER_OK("Range", "=10;=1;=-3", A(), "[3]:int32");
  INFER_ERROR("Range", "=0.0:float32;=5.0:float32;=0.0:float32", A(), "delta must not be 0");
  INFER_ERROR("Range", "[]:bool;[]:bool;[]:bool", A(), "must have a dtype in");
  INFER_ERROR("Range", "=0:uint8;=5:uint8;=1:uint8", A(), "must have a dtype in");
  INFER_ERROR("Range", "[];[2];[]", A(), "Range: limit must be a scalar, got shape [2]");
  INFER_OK("LinSpace", "[];[];=5", A(), "[5]");
  INFER_OK("LinSpace", "[]:float64;?:float64;=1", A(), "[1]:float64");
  INFER_ERROR("LinSpace", "[];[];=0", A(), "LinSpace: num must be >= 1, got 0");
  INFER_ERROR("LinSpace", "[2];[];=3", A(), "start must be a scalar");
  INFER_ERROR("LinSpace", "[]:int32;[]:int32;=3", A(), "must have a dtype in");
}

}  // namespace
}  // namespace ember
