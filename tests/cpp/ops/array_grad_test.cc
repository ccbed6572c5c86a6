// Gradient rules of the array ops (ops/array.cc, array_create.cc, array_index.cc) against finite
// differences, and the ops added to express them: StridedSliceGrad, UnsortedSegmentSum, MirrorPadGrad
// (shape functions, values, and their own gradients).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/grad_testing.h"
#include "tests/cpp/ops/grad_trace_check.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using testing::int32_scalar;
using testing::int32_vector;
using testing::make_tensor;
using testing::random_tensor;
using testing::random_values;
using Dims = std::vector<int64_t>;

TensorRef ints(Dims dims, const std::vector<double>& values, DType dtype = DType::kInt32) {
  return make_tensor(std::move(dims), values, dtype);
}

AttrValue i64(int64_t v) { return v; }
AttrValue list(Dims v) { return v; }

/// StridedSlice's operands: x, then begin, end and strides as int32 vectors.
std::vector<TensorRef> strided(TensorRef x, const Dims& begin, const Dims& end, const Dims& strides) {
  return {std::move(x), int32_vector(begin), int32_vector(end), int32_vector(strides)};
}

/// StridedSliceGrad's operands: the input shape, begin, end, strides, then dy.
std::vector<TensorRef> strided_grad(const Dims& shape, const Dims& begin, const Dims& end,
                                    const Dims& strides, TensorRef dy) {
  return {int32_vector(shape), int32_vector(begin), int32_vector(end), int32_vector(strides), std::move(dy)};
}

/// The five masks of StridedSlice and StridedSliceGrad.
AttrList masks(int64_t begin_mask = 0, int64_t end_mask = 0, int64_t ellipsis_mask = 0,
               int64_t new_axis_mask = 0, int64_t shrink_axis_mask = 0) {
  return {i64(begin_mask), i64(end_mask), i64(ellipsis_mask), i64(new_axis_mask), i64(shrink_axis_mask)};
}

/// Pad's and MirrorPadGrad's paddings: one (before, after) row per dimension.
TensorRef paddings(const std::vector<std::pair<int64_t, int64_t>>& rows) {
  std::vector<double> values;
  for (const auto& [before, after] : rows) {
    values.push_back(static_cast<double>(before));
    values.push_back(static_cast<double>(after));
  }
  return make_tensor({static_cast<int64_t>(rows.size()), 2}, values, DType::kInt32);
}

// The op's outputs; on a failure (reported by run_op) a single empty float64 tensor, so that callers
// reading out[0] fail their expectations instead of crashing.
OutputList run(const std::string& name, const std::vector<TensorRef>& inputs, AttrList attrs) {
  const OpDef& op = op_def(name);
  Status s = complete_attrs(op, attrs);
  EXPECT_TRUE(s.ok()) << s.to_string();
  OutputList out = testing::run_op(op, inputs, attrs);
  if (out.empty()) out.push_back(make_tensor({0}, {}));
  return out;
}

std::vector<double> doubles(const TensorRef& t) {
  TensorRef d = t;
  if (t->dtype() != DType::kFloat64) d = run("Cast", {t}, {AttrValue(DType::kFloat64)})[0];
  return {d->data<double>(), d->data<double>() + d->num_elements()};
}

// ---- Shape ops

TEST(ArrayGrad, Reshape) {
  EXPECT_GRADIENT_OK("Reshape", {random_tensor({2, 3}), int32_vector({3, -1})}, {});
  EXPECT_GRADIENT_OK("Reshape", {random_tensor({2, 3}), int32_vector({6})}, {});
  EXPECT_GRADIENT_OK("Identity", {random_tensor({2, 3})}, {});
}

TEST(ArrayGrad, Transpose) {
  EXPECT_GRADIENT_OK("Transpose", {random_tensor({2, 3, 4}), int32_vector({2, 0, 1})}, {});
  EXPECT_GRADIENT_OK("Transpose", {random_tensor({2, 3, 4}), int32_vector({-1, 0, 1})}, {});
  EXPECT_GRADIENT_OK("Transpose", {random_tensor({3, 1}), int32_vector({1, 0})}, {});  // a view
}

TEST(ArrayGrad, ExpandDimsAndSqueeze) {
  EXPECT_GRADIENT_OK("ExpandDims", {random_tensor({2, 3}), int32_scalar(0)}, {});
  EXPECT_GRADIENT_OK("ExpandDims", {random_tensor({2, 3}), int32_scalar(-1)}, {});
  EXPECT_GRADIENT_OK("Squeeze", {random_tensor({1, 3, 1})}, {list({})});
  EXPECT_GRADIENT_OK("Squeeze", {random_tensor({1, 3, 1})}, {list({-1})});
}

TEST(ArrayGrad, Concat) {
  EXPECT_GRADIENT_OK(
      "ConcatV2",
      {random_tensor({2, 1}, 1), random_tensor({2, 3}, 2), random_tensor({2, 2}, 3), int32_scalar(1)}, {});
  EXPECT_GRADIENT_OK("ConcatV2", {random_tensor({2, 1}, 1), random_tensor({2, 3}, 2), int32_scalar(-1)}, {});
  EXPECT_GRADIENT_OK("ConcatV2", {random_tensor({1, 3}, 1), random_tensor({2, 3}, 2), int32_scalar(0)}, {});
  EXPECT_GRADIENT_OK("ConcatV2", {random_tensor({2, 3}, 1), int32_scalar(0)}, {});
}

TEST(ArrayGrad, PackAndUnpack) {
  EXPECT_GRADIENT_OK("Pack", {random_tensor({2, 3}, 1), random_tensor({2, 3}, 2), random_tensor({2, 3}, 3)},
                     {i64(0)});
  EXPECT_GRADIENT_OK("Pack", {random_tensor({2, 3}, 1), random_tensor({2, 3}, 2)}, {i64(1)});
  EXPECT_GRADIENT_OK("Pack", {random_tensor({2, 3}, 1), random_tensor({2, 3}, 2)}, {i64(-1)});
  EXPECT_GRADIENT_OK("Unpack", {random_tensor({3, 2})}, {i64(3), i64(0)});
  EXPECT_GRADIENT_OK("Unpack", {random_tensor({2, 3, 4})}, {i64(4), i64(-1)});
  EXPECT_GRADIENT_OK("Unpack", {random_tensor({2, 3, 4})}, {i64(-1), i64(1)});
}

TEST(ArrayGrad, SplitV) {
  EXPECT_GRADIENT_OK("SplitV", {random_tensor({5, 2}), int32_vector({2, -1}), int32_scalar(0)}, {});
  EXPECT_GRADIENT_OK("SplitV", {random_tensor({2, 6}), int32_vector({1, 2, 3}), int32_scalar(-1)}, {});
  EXPECT_GRADIENT_OK("SplitV", {random_tensor({2, 3}), int32_vector({3}), int32_scalar(1)}, {});
}

// ---- Slicing

TEST(ArrayGrad, Slice) {
  EXPECT_GRADIENT_OK("Slice", {random_tensor({3, 4}), int32_vector({1, 1}), int32_vector({2, -1})}, {});
  EXPECT_GRADIENT_OK("Slice", {random_tensor({2, 3, 4}), int32_vector({0, 1, 2}), int32_vector({2, 1, -1})},
                     {});
  EXPECT_GRADIENT_OK("Slice", {random_tensor({3}), int32_vector({1}), int32_vector({0})}, {});
}

TEST(ArrayGrad, StridedSlice) {
  auto x6 = [] { return random_tensor({6}); };
  EXPECT_GRADIENT_OK("StridedSlice", strided(x6(), {0}, {0}, {2}), masks(1, 1));   // x[::2]
  EXPECT_GRADIENT_OK("StridedSlice", strided(x6(), {0}, {0}, {-1}), masks(1, 1));  // x[::-1]
  EXPECT_GRADIENT_OK("StridedSlice", strided(x6(), {4}, {0}, {-2}), masks());      // x[4:0:-2]
  EXPECT_GRADIENT_OK("StridedSlice", strided(x6(), {-100}, {100}, {3}), masks());  // clamped
  EXPECT_GRADIENT_OK("StridedSlice", strided(x6(), {3}, {1}, {1}), masks());       // x[3:1], empty
  EXPECT_GRADIENT_OK("StridedSlice", strided(random_tensor({3, 4}), {1}, {2}, {1}),
                     masks(0, 0, 0, 0, 1));  // x[1]
  EXPECT_GRADIENT_OK("StridedSlice", strided(random_tensor({3, 4}), {-1, -1}, {0, 0}, {1, 1}),
                     masks(0, 0, 0, 0, 3));  // x[-1, -1]
  EXPECT_GRADIENT_OK("StridedSlice", strided(random_tensor({4, 5}), {3, 1}, {0, 0}, {-2, 2}),
                     masks(1, 2));  // x[::-2, 1::2]
  EXPECT_GRADIENT_OK("StridedSlice", strided(random_tensor({2, 3, 4}), {0, 1}, {0, 2}, {1, 1}),
                     masks(0, 0, 1, 0, 2));  // x[..., 1]
  EXPECT_GRADIENT_OK("StridedSlice", strided(random_tensor({2, 3, 4}), {0, 0, 1}, {0, 0, 3}, {1, 1, 1}),
                     masks(1, 1, 0, 2));  // x[:, newaxis, 1:3]
  EXPECT_GRADIENT_OK("StridedSlice", strided(random_tensor({2, 3, 4}), {1, 0, 0}, {2, 0, 0}, {1, 1, -1}),
                     masks(4, 4, 2, 0, 1));  // x[1, ..., ::-1]
  EXPECT_GRADIENT_OK("StridedSlice", strided(random_tensor({2, 3, 4}), {0, 0, 2}, {0, 0, 0}, {1, 1, -1}),
                     masks(0, 4, 2, 1, 0));  // x[newaxis, ..., 2::-1]
}

TEST(ArrayGrad, StridedSliceGradValuesAndGradient) {
  // x[::-2, 1::2] of a [4, 5] tensor reads rows 3, 1 and columns 1, 3.
  OutputList out =
      run("StridedSliceGrad",
          strided_grad({4, 5}, {3, 1}, {0, 0}, {-2, 2}, make_tensor({2, 2}, {1, 2, 3, 4})), masks(1, 2));
  ASSERT_EQ(out[0]->shape(), Shape({4, 5}));
  EXPECT_EQ(doubles(out[0]),
            (std::vector<double>{0, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0}));
  EXPECT_GRADIENT_OK("StridedSliceGrad", strided_grad({4, 5}, {3, 1}, {0, 0}, {-2, 2}, random_tensor({2, 2})),
                     masks(1, 2));
  // Integer dtypes scatter too; the result is a fresh buffer even for a contiguous slice.
  out = run("StridedSliceGrad", strided_grad({3, 2}, {1}, {2}, {1}, ints({2}, {5, 6}, DType::kInt64)),
            masks(0, 0, 0, 0, 1));
  EXPECT_EQ(doubles(out[0]), (std::vector<double>{0, 0, 5, 6, 0, 0}));
}

TEST(ArrayGrad, StridedSliceGradShape) {
  INFER_OK("StridedSliceGrad", "=[4,5];=[3,1];=[0,0];=[-2,2];[2,2]", (std::vector<AttrValue>{i64(1), i64(2)}),
           "[4,5]");
  INFER_OK("StridedSliceGrad", "=[4];=[0];=[0];=[2];?:float64", {}, "[4]:float64");
  INFER_ERROR("StridedSliceGrad", "=[4];=[0];=[4];=[2];[3]", {}, "dy has shape [3] but the slice");
  INFER_ERROR("StridedSliceGrad", "=[4,-1];=[0];=[4];=[2];[2]", {},
              "StridedSliceGrad: 'shape' [4, -1]: dimension -1 must be >= 0");
}

// ---- Gather and its adjoint

TEST(ArrayGrad, GatherV2) {
  auto idx32 = ints({4}, {0, 2, 2, 4});
  // Repeated indices add up.
  EXPECT_GRADIENT_OK("GatherV2", {random_tensor({5, 3}), idx32, int32_scalar(0)}, {i64(0)});
  EXPECT_GRADIENT_OK("GatherV2",
                     {random_tensor({2, 5, 3}), ints({2, 2}, {4, 0, 1, 4}, DType::kInt64), int32_scalar(1)},
                     {i64(0)});
  EXPECT_GRADIENT_OK("GatherV2", {random_tensor({2, 3, 5}), ints({3}, {4, 4, 0}), int32_scalar(-1)},
                     {i64(0)});
  EXPECT_GRADIENT_OK("GatherV2", {random_tensor({3}), ints({}, {1}), int32_scalar(0)},
                     {i64(0)});  // scalar index
  // batch_dims: row b of indices indexes row b of params.
  EXPECT_GRADIENT_OK("GatherV2",
                     {random_tensor({2, 4, 3}), ints({2, 3}, {0, 3, 3, 1, 1, 2}), int32_scalar(1)}, {i64(1)});
  EXPECT_GRADIENT_OK(
      "GatherV2",
      {random_tensor({2, 3, 4, 2}), ints({2, 5}, {0, 3, 3, 1, 2, 1, 1, 0, 2, 3}), int32_scalar(2)}, {i64(1)});
  EXPECT_GRADIENT_OK(
      "GatherV2",
      {random_tensor({2, 3, 4}), ints({2, 3, 2}, {0, 3, 1, 1, 2, 2, 3, 3, 0, 0, 1, 2}), int32_scalar(-1)},
      {i64(-1)});
}

TEST(ArrayGrad, UnsortedSegmentSumValues) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                    DType::kInt32,   DType::kInt64,   DType::kInt8,    DType::kUInt8};
  for (DType d : types) {
    SCOPED_TRACE(dtype_name(d));
    TensorRef data = make_tensor({5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, d);
    OutputList out = run("UnsortedSegmentSum", {data, ints({5}, {0, 2, -1, 2, 1}), int32_scalar(4)}, {});
    ASSERT_EQ(out[0]->dtype(), d);
    ASSERT_EQ(out[0]->shape(), Shape({4, 2}));
    EXPECT_EQ(doubles(out[0]), (std::vector<double>{1, 2, 9, 10, 10, 12, 0, 0}));
  }
  // segment_ids of rank 2 and an empty data tensor.
  OutputList out = run(
      "UnsortedSegmentSum",
      {make_tensor({2, 2}, {1, 2, 3, 4}), ints({2, 2}, {1, 1, 0, 1}, DType::kInt64), int32_scalar(3)}, {});
  EXPECT_EQ(doubles(out[0]), (std::vector<double>{3, 7, 0}));
  out = run("UnsortedSegmentSum", {make_tensor({0, 3}, {}), ints({0}, {}), int32_scalar(2)}, {});
  EXPECT_EQ(doubles(out[0]), (std::vector<double>(6, 0.0)));
}

TEST(ArrayGrad, UnsortedSegmentSumErrors) {
  const OpDef& op = op_def("UnsortedSegmentSum");
  TensorRef data = make_tensor({3}, {1, 2, 3}), ids = ints({3}, {0, 5, 1}), n = int32_scalar(2);
  TensorImpl* inputs[] = {data.get(), ids.get(), n.get()};
  OutputList outs;
  Status s = run_kernel(op, inputs, {}, outs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("segment_ids[1] = 5 is out of range [0, 2)"), std::string::npos) << s.message();
}

TEST(ArrayGrad, UnsortedSegmentSumShape) {
  INFER_OK("UnsortedSegmentSum", "[5,2];[5]:int32;=4", {}, "[4,2]");
  INFER_OK("UnsortedSegmentSum", "[2,3,4]:float64;[2,?]:int64;=7", {}, "[7,4]:float64");
  INFER_OK("UnsortedSegmentSum", "[?,3];[2]:int32;=1", {}, "[1,3]");
  INFER_OK("UnsortedSegmentSum", "?;[2]:int32;=1", {}, "<unknown>");
  INFER_ERROR("UnsortedSegmentSum", "[5,2];[4]:int32;=4", {}, "must be a prefix");
  INFER_ERROR("UnsortedSegmentSum", "[5];[5,1]:int32;=4", {}, "must be a prefix");
  INFER_ERROR("UnsortedSegmentSum", "[5];[5]:int32;=-1", {}, "num_segments");
}

TEST(ArrayGrad, UnsortedSegmentSumGradient) {
  EXPECT_GRADIENT_OK("UnsortedSegmentSum",
                     {random_tensor({5, 2}), ints({5}, {0, 2, -1, 2, 1}), int32_scalar(4)}, {});
  EXPECT_GRADIENT_OK(
      "UnsortedSegmentSum",
      {random_tensor({2, 3}), ints({2, 3}, {1, 1, 0, -2, 1, 0}, DType::kInt64), int32_scalar(2)}, {});
}

// ---- Select and clip

TEST(ArrayGrad, SelectV2) {
  auto cond = make_tensor({2, 3}, {1, 0, 1, 0, 0, 1}, DType::kBool);
  EXPECT_GRADIENT_OK("SelectV2", {cond, random_tensor({2, 3}, 1), random_tensor({3}, 2)}, {});
  EXPECT_GRADIENT_OK(
      "SelectV2", {make_tensor({3}, {1, 0, 1}, DType::kBool), random_tensor({2, 1}, 1), random_tensor({}, 2)},
      {});
  EXPECT_GRADIENT_OK("SelectV2",
                     {make_tensor({}, {0}, DType::kBool), random_tensor({2}, 1), random_tensor({2}, 2)}, {});
}

TEST(ArrayGrad, ClipByValue) {
  EXPECT_GRADIENT_OK("ClipByValue",
                     {random_tensor({2, 3}), make_tensor({}, {-0.3}), make_tensor({3}, {0.4, 0.1, 0.9})}, {});
  EXPECT_GRADIENT_OK("ClipByValue",
                     {random_tensor({2, 3}), make_tensor({2, 3}, random_values(6, -0.6, -0.1, 5)),
                      make_tensor({2, 3}, {0.5, 0.5, 0.5, 2, 2, 2})},
                     {});
  // A lower bound above the upper one wins (the kernel takes the max last).
  EXPECT_GRADIENT_OK("ClipByValue",
                     {make_tensor({3}, {-1, 0.5, 2}), make_tensor({}, {0.8}), make_tensor({}, {0.2})}, {});
}

// ---- Creation ops

TEST(ArrayGrad, FillTileBroadcastTo) {
  EXPECT_GRADIENT_OK("Fill", {int32_vector({2, 3}), random_tensor({})}, {});
  EXPECT_GRADIENT_OK("Fill", {int32_vector({}), random_tensor({})}, {});
  EXPECT_GRADIENT_OK("Tile", {random_tensor({2, 3}), int32_vector({2, 1})}, {});
  EXPECT_GRADIENT_OK("Tile", {random_tensor({2, 1, 3}), int32_vector({1, 3, 2})}, {});
  EXPECT_GRADIENT_OK("Tile", {random_tensor({2, 3}), int32_vector({0, 2})}, {});
  // Splitting every tiled dim would need rank 11: the rule folds one dim at a time.
  EXPECT_GRADIENT_OK("Tile",
                     {random_tensor({1, 1, 1, 1, 1, 1, 2, 1}), int32_vector({2, 1, 1, 1, 1, 1, 2, 3})}, {});
  EXPECT_GRADIENT_OK("BroadcastTo", {random_tensor({3}), int32_vector({2, 3})}, {});
  EXPECT_GRADIENT_OK("BroadcastTo", {random_tensor({2, 1}), int32_vector({3, 2, 4})}, {});
}

TEST(ArrayGrad, Pad) {
  EXPECT_GRADIENT_OK("Pad", {random_tensor({2, 3}), paddings({{1, 0}, {2, 1}})},
                     {0.0, std::string("CONSTANT")});
  EXPECT_GRADIENT_OK("Pad", {random_tensor({2, 3}), paddings({{0, 0}, {0, 0}})},
                     {1.5, std::string("CONSTANT")});
  EXPECT_GRADIENT_OK("Pad", {random_tensor({3, 4}), paddings({{2, 2}, {3, 1}})},
                     {0.0, std::string("REFLECT")});
  EXPECT_GRADIENT_OK("Pad", {random_tensor({3, 4}), paddings({{3, 1}, {0, 4}})},
                     {0.0, std::string("SYMMETRIC")});
  EXPECT_GRADIENT_OK("Pad", {random_tensor({2, 3, 2}), paddings({{1, 1}, {0, 2}, {1, 0}})},
                     {0.0, std::string("reflect")});
}

TEST(ArrayGrad, MirrorPadGradValuesAndGradient) {
  // REFLECT copies [x0, x1] to [x1, x0, x1, x0]; SYMMETRIC to [x0, x0, x1, x1].
  TensorRef dy = make_tensor({4}, {1, 2, 3, 4});
  EXPECT_EQ(doubles(run("MirrorPadGrad", {dy, paddings({{1, 1}})}, {std::string("REFLECT")})[0]),
            (std::vector<double>{6, 4}));
  EXPECT_EQ(doubles(run("MirrorPadGrad", {dy, paddings({{1, 1}})}, {std::string("SYMMETRIC")})[0]),
            (std::vector<double>{3, 7}));
  for (DType d : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kInt32, DType::kUInt8}) {
    OutputList out = run("MirrorPadGrad", {make_tensor({4}, {1, 2, 3, 4}, d), paddings({{1, 1}})},
                         {std::string("REFLECT")});
    EXPECT_EQ(doubles(out[0]), (std::vector<double>{6, 4})) << dtype_name(d);
  }
  EXPECT_GRADIENT_OK("MirrorPadGrad", {random_tensor({6, 7}), paddings({{1, 2}, {2, 1}})},
                     {std::string("REFLECT")});
  EXPECT_GRADIENT_OK("MirrorPadGrad", {random_tensor({6, 7}), paddings({{3, 0}, {1, 2}})},
                     {std::string("SYMMETRIC")});
}

TEST(ArrayGrad, MirrorPadGradShape) {
  using Attrs = std::vector<AttrValue>;
  INFER_OK("MirrorPadGrad", "[6,7];=[[1,2],[2,1]]", (Attrs{std::string("REFLECT")}), "[3,4]");
  INFER_OK("MirrorPadGrad", "[?,7]:float64;=[[1,2],[2,1]]", (Attrs{std::string("SYMMETRIC")}),
           "[?,4]:float64");
  INFER_ERROR("MirrorPadGrad", "[6,7];=[[1,2]]", (Attrs{std::string("REFLECT")}),
              "paddings must have shape [2, 2]");
  INFER_ERROR("MirrorPadGrad", "[6,7];=[1,2,2,1]", (Attrs{std::string("REFLECT")}),
              "MirrorPadGrad: paddings must be a [rank, 2] matrix, got shape [4]");
  INFER_ERROR("MirrorPadGrad", "[6];=[[1,2]]", (Attrs{std::string("CONSTANT")}),
              "mode must be REFLECT or SYMMETRIC");
  INFER_ERROR("MirrorPadGrad", "[4];=[[2,1]]", (Attrs{std::string("REFLECT")}),
              "REFLECT paddings must be less than the dimension size");
  INFER_ERROR("MirrorPadGrad", "[2];=[[2,1]]", (Attrs{std::string("SYMMETRIC")}),
              "smaller than its paddings");
}

// ---- Rules while tracing: every op a rule emits becomes a graph node, with the same result.

TEST(ArrayGrad, RulesTrace) {
  EXPECT_TRACED_GRADIENT_OK("Reshape", {random_tensor({2, 3}), int32_vector({3, -1})}, {});
  EXPECT_TRACED_GRADIENT_OK("Identity", {random_tensor({2, 3})}, {});
  EXPECT_TRACED_GRADIENT_OK("Transpose", {random_tensor({2, 3, 4}), int32_vector({2, 0, 1})}, {});
  EXPECT_TRACED_GRADIENT_OK("ExpandDims", {random_tensor({2, 3}), int32_scalar(-1)}, {});
  EXPECT_TRACED_GRADIENT_OK("Squeeze", {random_tensor({1, 3, 1})}, {list({})});
  EXPECT_TRACED_GRADIENT_OK("ConcatV2",
                            {random_tensor({2, 1}, 1), random_tensor({2, 3}, 2), int32_scalar(-1)}, {});
  EXPECT_TRACED_GRADIENT_OK("Pack", {random_tensor({2, 3}, 1), random_tensor({2, 3}, 2)}, {i64(1)});
  EXPECT_TRACED_GRADIENT_OK("Unpack", {random_tensor({2, 3, 4})}, {i64(4), i64(-1)});
  EXPECT_TRACED_GRADIENT_OK("SplitV", {random_tensor({5, 2}), int32_vector({2, -1}), int32_scalar(0)}, {});
  EXPECT_TRACED_GRADIENT_OK("Slice", {random_tensor({3, 4}), int32_vector({1, 1}), int32_vector({2, -1})},
                            {});
  EXPECT_TRACED_GRADIENT_OK("StridedSlice",
                            strided(random_tensor({2, 3, 4}), {0, 0, 2}, {0, 0, 0}, {1, 1, -1}),
                            masks(0, 4, 2, 1, 0));
  EXPECT_TRACED_GRADIENT_OK(
      "StridedSliceGrad", strided_grad({4, 5}, {3, 1}, {0, 0}, {-2, 2}, random_tensor({2, 2})), masks(1, 2));
  EXPECT_TRACED_GRADIENT_OK(
      "GatherV2",
      {random_tensor({2, 3, 4, 2}), ints({2, 5}, {0, 3, 3, 1, 2, 1, 1, 0, 2, 3}), int32_scalar(2)}, {i64(1)});
  EXPECT_TRACED_GRADIENT_OK("GatherV2", {random_tensor({5, 3}), ints({4}, {0, 2, 2, 4}), int32_scalar(0)},
                            {i64(0)});
  EXPECT_TRACED_GRADIENT_OK("UnsortedSegmentSum",
                            {random_tensor({5, 2}), ints({5}, {0, 2, -1, 2, 1}), int32_scalar(4)}, {});
  EXPECT_TRACED_GRADIENT_OK(
      "SelectV2", {make_tensor({3}, {1, 0, 1}, DType::kBool), random_tensor({2, 1}, 1), random_tensor({}, 2)},
      {});
  EXPECT_TRACED_GRADIENT_OK(
      "ClipByValue", {random_tensor({2, 3}), make_tensor({}, {-0.3}), make_tensor({3}, {0.4, 0.1, 0.9})}, {});
  EXPECT_TRACED_GRADIENT_OK("Fill", {int32_vector({2, 3}), random_tensor({})}, {});
  EXPECT_TRACED_GRADIENT_OK("Tile", {random_tensor({2, 1, 3}), int32_vector({1, 3, 2})}, {});
  EXPECT_TRACED_GRADIENT_OK(
      "Tile", {random_tensor({1, 1, 1, 1, 1, 1, 2, 1}), int32_vector({2, 1, 1, 1, 1, 1, 2, 3})}, {});
  EXPECT_TRACED_GRADIENT_OK("BroadcastTo", {random_tensor({2, 1}), int32_vector({3, 2, 4})}, {});
  EXPECT_TRACED_GRADIENT_OK("Pad", {random_tensor({2, 3}), paddings({{1, 0}, {2, 1}})},
                            {0.0, std::string("CONSTANT")});
  EXPECT_TRACED_GRADIENT_OK("Pad", {random_tensor({3, 4}), paddings({{2, 2}, {3, 1}})},
                            {0.0, std::string("REFLECT")});
  EXPECT_TRACED_GRADIENT_OK("MirrorPadGrad", {random_tensor({6, 7}), paddings({{3, 0}, {1, 2}})},
                            {std::string("SYMMETRIC")});
}

// ---- Second order: the rules' own ops are differentiable on a tape. Most array rules are linear in x
// (their second derivative is zero); these also run the rules of StridedSliceGrad, UnsortedSegmentSum and
// MirrorPadGrad.

TEST(ArrayGrad, SecondOrder) {
  EXPECT_SECOND_ORDER_OK(
      "ClipByValue", {random_tensor({2, 3}), make_tensor({}, {-0.3}), make_tensor({3}, {0.4, 0.1, 0.9})}, {});
  EXPECT_SECOND_ORDER_OK(
      "SelectV2", {make_tensor({3}, {1, 0, 1}, DType::kBool), random_tensor({2, 1}, 1), random_tensor({}, 2)},
      {});
  EXPECT_SECOND_ORDER_OK("StridedSlice", strided(random_tensor({4, 5}), {3, 1}, {0, 0}, {-2, 2}),
                         masks(1, 2));
  EXPECT_SECOND_ORDER_OK(
      "GatherV2", {random_tensor({2, 4, 3}), ints({2, 3}, {0, 3, 3, 1, 1, 2}), int32_scalar(1)}, {i64(1)});
  EXPECT_SECOND_ORDER_OK("Pad", {random_tensor({3, 4}), paddings({{2, 2}, {3, 1}})},
                         {0.0, std::string("REFLECT")});
  EXPECT_SECOND_ORDER_OK("Tile", {random_tensor({2, 3}), int32_vector({2, 1})}, {});
}

// ---- Which ops have rules

TEST(ArrayGrad, EveryArrayOpHasARuleOrIsNotDifferentiable) {
  const std::vector<std::string> differentiable = {"Reshape",      "Identity",
                                                   "Transpose",    "ExpandDims",
                                                   "Squeeze",      "ConcatV2",
                                                   "Pack",         "Unpack",
                                                   "SplitV",       "Slice",
                                                   "StridedSlice", "StridedSliceGrad",
                                                   "GatherV2",     "UnsortedSegmentSum",
                                                   "SelectV2",     "ClipByValue",
                                                   "Fill",         "Tile",
                                                   "BroadcastTo",  "Pad",
                                                   "MirrorPadGrad"};
  const std::vector<std::string> not_differentiable = {"Shape",  "Size",         "Rank",      "Where",
                                                       "OneHot", "ConcatOffset", "ZerosLike", "OnesLike",
                                                       "Eye",    "Range",        "LinSpace"};
  for (const auto& name : differentiable) EXPECT_NE(op_def(name).grad, nullptr) << name;
  for (const auto& name : not_differentiable) {
    EXPECT_EQ(op_def(name).grad, nullptr) << name;
    EXPECT_TRUE(op_def(name).has_flag(kNotDifferentiable)) << name;
  }
}

// Tile's rule reads dy's and x's shapes at run time (it once needed them statically and said so); Prod's
// builds its permutation at run time when the graph computes its axes (it once said it needed them).
TEST(ArrayGrad, UnknownShapesWork) {
  using testing::TraceMode;
  EXPECT_TRACED_GRADIENT_OK("Tile", {random_tensor({2, 3}), int32_vector({2, 1})}, {},
                            TraceMode{.unknown_dims = true});
  EXPECT_TRACED_GRADIENT_OK("Tile", {random_tensor({2, 1, 3}), int32_vector({1, 3, 2})}, {},
                            TraceMode{.shape_operands_as_arguments = true, .unknown_dims = true});
  EXPECT_TRACED_GRADIENT_OK("Transpose", {random_tensor({2, 3}), int32_vector({1, 0})}, {},
                            TraceMode{.shape_operands_as_arguments = true});  // InvertPermutation at run time
  EXPECT_TRACED_GRADIENT_OK("Prod", {random_tensor({2, 3}), int32_vector({1})}, {AttrValue(false)},
                            TraceMode{.shape_operands_as_arguments = true});
  EXPECT_TRACED_GRADIENT_OK("Prod", {random_tensor({2, 3, 2}), int32_vector({2, 0})}, {AttrValue(false)},
                            TraceMode{.shape_operands_as_arguments = true, .unknown_dims = true});
}

}  // namespace
}  // namespace ember
