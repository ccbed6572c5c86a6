// Values of the indexing and creation ops (ops/array_index.cc, ops/array_create.cc): Slice, StridedSlice,
// GatherV2, Where, SelectV2, ClipByValue, OneHot, Fill, ZerosLike, OnesLike, Eye, Range, LinSpace.
// Expectations are worked out by hand (and agree with TensorFlow 2).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/cpp/ops/array_testing.h"

namespace ember {
namespace {

using testing::expect_error;
using testing::Ints;
using testing::ints_as;
using testing::iota;
using testing::values;

bool shares_buffer(const Tensor& a, const Tensor& b) { return a.impl()->buffer() == b.impl()->buffer(); }

// ---- Slice

TEST(ArraySlice, Block) {
  for (DType d : testing::data_dtypes()) {
    Tensor y = slice(iota({3, 4}, d), {1, 1}, {2, -1});
    EXPECT_EQ(y.shape(), Shape({2, 3}));
    EXPECT_EQ(values(y), (Ints{5, 6, 7, 9, 10, 11})) << dtype_name(d);
  }
}

TEST(ArraySlice, ContiguousRowsAreAView) {
  Tensor x = iota({4, 3});
  Tensor y = slice(x, {1, 0}, {2, 3});
  EXPECT_TRUE(shares_buffer(x, y));
  EXPECT_EQ(values(y), (Ints{3, 4, 5, 6, 7, 8}));
  EXPECT_FALSE(shares_buffer(x, slice(x, {0, 1}, {2, 1})));
}

TEST(ArraySlice, Errors) {
  expect_error([] { slice(iota({3}), {1}, {5}); }, "expected size[0] in [0, 2]");
  expect_error([] { slice(iota({3}), {-1}, {1}); }, "expected begin[0] in [0, 3]");
}

// ---- StridedSlice: each case is the spec Python builds for x[...].

TEST(ArrayStridedSlice, IntegerIndex) {
  Tensor x = iota({3, 4}, DType::kInt32);
  Tensor row = strided_slice(x, {1}, {2}, {1}, 0, 0, 0, 0, 1);  // x[1]
  EXPECT_EQ(row.shape(), Shape({4}));
  EXPECT_EQ(values(row), (Ints{4, 5, 6, 7}));
  EXPECT_TRUE(shares_buffer(x, row));
  Tensor last = strided_slice(x, {-1, -1}, {0, 0}, {1, 1}, 0, 0, 0, 0, 3);  // x[-1, -1]
  EXPECT_EQ(last.rank(), 0);
  EXPECT_EQ(last.item<int32_t>(), 11);
}

TEST(ArrayStridedSlice, StepsAndNegativeSteps) {
  Tensor x = iota({6}, DType::kFloat16);
  EXPECT_EQ(values(strided_slice(x, {0}, {0}, {2}, 1, 1)), (Ints{0, 2, 4}));            // x[::2]
  EXPECT_EQ(values(strided_slice(x, {0}, {0}, {-1}, 1, 1)), (Ints{5, 4, 3, 2, 1, 0}));  // x[::-1]
  EXPECT_EQ(values(strided_slice(x, {4}, {0}, {-2})), (Ints{4, 2}));                    // x[4:0:-2]
  EXPECT_EQ(values(strided_slice(x, {-2}, {0}, {-1}, 0, 1)), (Ints{4, 3, 2, 1, 0}));    // x[-2::-1]
  EXPECT_EQ(values(strided_slice(x, {1}, {-1}, {1})), (Ints{1, 2, 3, 4}));              // x[1:-1]
  EXPECT_EQ(values(strided_slice(x, {-100}, {100}, {3})), (Ints{0, 3}));                // x[-100:100:3]
  EXPECT_EQ(strided_slice(x, {3}, {1}, {1}).shape(), Shape({0}));                       // x[3:1]
}

TEST(ArrayStridedSlice, TwoDimensionalStepsCopy) {
  Tensor x = iota({4, 5}, DType::kInt64);
  Tensor y = strided_slice(x, {3, 1}, {0, 0}, {-2, 2}, 1, 2);  // x[::-2, 1::2]
  EXPECT_EQ(y.shape(), Shape({2, 2}));
  EXPECT_EQ(values(y), (Ints{16, 18, 6, 8}));
}

TEST(ArrayStridedSlice, EllipsisAndNewAxis) {
  Tensor x = iota({2, 3, 4}, DType::kInt32);
  Tensor a = strided_slice(x, {0, 1}, {0, 2}, {1, 1}, 0, 0, 1, 0, 2);  // x[..., 1]
  EXPECT_EQ(a.shape(), Shape({2, 3}));
  EXPECT_EQ(values(a), (Ints{1, 5, 9, 13, 17, 21}));
  Tensor b = strided_slice(x, {0, 0, 2}, {0, 0, 3}, {1, 1, 1}, 1, 1, 0, 2, 4);  // x[:, None, 2]
  EXPECT_EQ(b.shape(), Shape({2, 1, 4}));
  EXPECT_EQ(values(b), (Ints{8, 9, 10, 11, 20, 21, 22, 23}));
  Tensor c = strided_slice(x, {1, 0, 0}, {2, 0, 0}, {1, 1, 1}, 0, 0, 2, 4, 1);  // x[1, ..., None]
  EXPECT_EQ(c.shape(), Shape({3, 4, 1}));
  EXPECT_EQ(values(c)[0], 12);
}

TEST(ArrayStridedSlice, BoolAndEmpty) {
  Tensor x = iota({4}, DType::kBool);
  EXPECT_EQ(strided_slice(x, {1}, {4}, {2}).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(strided_slice(iota({0, 3}), {0}, {0}, {1}, 1, 1).shape(), Shape({0, 3}));
}

TEST(ArrayStridedSlice, OutOfBoundsIndexError) {
  expect_error([] { strided_slice(iota({3}), {5}, {6}, {1}, 0, 0, 0, 0, 1); },
               "index 5 is out of bounds for axis 0 with size 3");
  expect_error(
      [] {
        strided_slice(iota({2, 3}), {0, -4}, {0, -3}, {1, 1}, 1, 1, 0, 0, 2);
      },
      "index -4 is out of bounds for axis 1 with size 3");
  expect_error([] { strided_slice(iota({3}), {0}, {0}, {0}); }, "strides[0] must be non-zero");
}

// ---- GatherV2

TEST(ArrayGather, Axis0AllDtypes) {
  for (DType d : testing::data_dtypes()) {
    Tensor p = ints_as({10, 11, 20, 21, 30, 31}, {3, 2}, d);
    Tensor y = gather(p, Tensor::from_vector(std::vector<int32_t>{2, 0, 2}));
    EXPECT_EQ(y.shape(), Shape({3, 2}));
    EXPECT_EQ(values(y), (Ints{30, 31, 10, 11, 30, 31})) << dtype_name(d);
  }
}

TEST(ArrayGather, Axis1Int64IndicesMatrix) {
  Tensor p = iota({2, 4}, DType::kInt32);
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{3, 0, 1, 1}, {2, 2});
  Tensor y = gather(p, idx, 1);
  EXPECT_EQ(y.shape(), Shape({2, 2, 2}));
  EXPECT_EQ(values(y), (Ints{3, 0, 1, 1, 7, 4, 5, 5}));
  Tensor scalar = gather(p, Tensor(int32_t{2}), -1);
  EXPECT_EQ(values(scalar), (Ints{2, 6}));
}

TEST(ArrayGather, BatchDims) {
  Tensor p = iota({2, 3}, DType::kFloat16);
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{2, 0, 1, 1}, {2, 2});
  Tensor y = gather(p, idx, 1, 1);
  EXPECT_EQ(y.shape(), Shape({2, 2}));
  EXPECT_EQ(values(y), (Ints{2, 0, 4, 4}));
}

TEST(ArrayGather, BoolParams) {
  Tensor p = Tensor::from_vector(std::vector<bool>{true, false, true});
  EXPECT_EQ(gather(p, Tensor::from_vector(std::vector<int32_t>{1, 0})).to_vector<bool>(),
            (std::vector<bool>{false, true}));
}

TEST(ArrayGather, OutOfRangeIndexError) {
  expect_error(
      [] {
        gather(iota({3}), Tensor::from_vector(std::vector<int32_t>{0, 5}));
      },
      "GatherV2: indices[1] = 5 is not in [0, 3)");
  expect_error(
      [] {
        gather(iota({3}), Tensor::from_vector(std::vector<int64_t>{0, 1, 2, -1}, {2, 2}));
      },
      "indices[1,1] = -1 is not in [0, 3)");
}

// ---- Where, SelectV2

TEST(ArrayWhere, BoolCoordinates) {
  Tensor c = Tensor::from_vector(std::vector<bool>{true, false, false, true, true, false}, {2, 3});
  Tensor w = where(c);
  EXPECT_EQ(w.dtype(), DType::kInt64);
  EXPECT_EQ(w.shape(), Shape({3, 2}));
  EXPECT_EQ(w.to_vector<int64_t>(), (Ints{0, 0, 1, 0, 1, 1}));
}

TEST(ArrayWhere, FloatsTreatNegativeZeroAsZeroAndNanAsTrue) {
  Tensor c = Tensor::from_vector(std::vector<float>{0.0f, -0.0f, std::nanf(""), 1.0f}, {2, 2});
  EXPECT_EQ(where(c).to_vector<int64_t>(), (Ints{1, 0, 1, 1}));
  Tensor h = cast(Tensor::from_vector(std::vector<float>{-0.0f, 2.0f, 0.0f}), DType::kFloat16);
  EXPECT_EQ(where(h).to_vector<int64_t>(), (Ints{1}));
  Tensor i = Tensor::from_vector(std::vector<int32_t>{0, 0});
  EXPECT_EQ(where(i).shape(), Shape({0, 1}));
}

TEST(ArraySelect, ThreeWayBroadcast) {
  Tensor c = Tensor::from_vector(std::vector<bool>{true, false, true}, {3});
  for (DType d : testing::data_dtypes()) {
    Tensor x = ints_as({1, 2}, {2, 1}, d);
    Tensor y = ints_as({9}, {}, d);
    Tensor out = where(c, x, y);
    EXPECT_EQ(out.shape(), Shape({2, 3}));
    EXPECT_EQ(values(out), (Ints{1, 9, 1, 2, 9, 2})) << dtype_name(d);
  }
}

TEST(ArraySelect, SameShapeBoolAndError) {
  Tensor c = Tensor::from_vector(std::vector<bool>{true, false});
  Tensor x = Tensor::from_vector(std::vector<bool>{false, false}),
         y = Tensor::from_vector(std::vector<bool>{true, true});
  EXPECT_EQ(where(c, x, y).to_vector<bool>(), (std::vector<bool>{false, true}));
  expect_error([&] { where(c, iota({3}), Tensor(1.0f)); }, "must be broadcastable");
}

// ---- ClipByValue

TEST(ArrayClip, ScalarBoundsAndNan) {
  Tensor t = Tensor::from_vector(std::vector<float>{-1.0f, 0.5f, 5.0f, std::nanf("")});
  auto v = clip_by_value(t, Tensor(0.0f), Tensor(3.0f)).to_vector<float>();
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[1], 0.5f);
  EXPECT_EQ(v[2], 3.0f);
  EXPECT_TRUE(std::isnan(v[3]));
  // min > max gives min, as TensorFlow.
  EXPECT_EQ(clip_by_value(Tensor({5.0f, 0.0f}), Tensor(3.0f), Tensor(1.0f)).to_vector<float>(),
            (std::vector<float>{3.0f, 3.0f}));
}

TEST(ArrayClip, BroadcastBoundsIntsAndHalf) {
  Tensor t = ints_as({0, 5, 9, 0, 5, 9}, {2, 3}, DType::kInt32);
  Tensor lo = ints_as({1, 2, 3}, {3}, DType::kInt32), hi = ints_as({4, 8}, {2, 1}, DType::kInt32);
  EXPECT_EQ(values(clip_by_value(t, lo, hi)), (Ints{1, 4, 4, 1, 5, 8}));
  Tensor h = ints_as({-3, 0, 3}, {3}, DType::kFloat16);
  EXPECT_EQ(values(clip_by_value(h, ints_as({-1}, {}, DType::kFloat16), ints_as({1}, {}, DType::kFloat16))),
            (Ints{-1, 0, 1}));
  expect_error(
      [] {
        clip_by_value(iota({3}), iota({2, 3}), Tensor(4.0f));
      },
      "must broadcast to the shape of t");
}

// ---- OneHot

TEST(ArrayOneHot, DefaultAxisAndOutOfRange) {
  Tensor y = one_hot(Tensor::from_vector(std::vector<int32_t>{0, -1, 3, 2}), 3);
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  EXPECT_EQ(y.shape(), Shape({4, 3}));
  EXPECT_EQ(values(y), (Ints{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
}

TEST(ArrayOneHot, Axis0OnOffAndDtypes) {
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{0, 2}, {1, 2});
  Tensor y = one_hot(idx, 3, 5.0, -1.0, 0, DType::kInt32);
  EXPECT_EQ(y.shape(), Shape({3, 1, 2}));
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{5, -1, -1, -1, -1, 5}));
  Tensor u = Tensor::from_vector(std::vector<uint8_t>{1});
  EXPECT_EQ(one_hot(u, 2, 1.0, 0.0, -1, DType::kBool).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(values(one_hot(u, 2, 1.0, 0.0, -1, DType::kFloat16)), (Ints{0, 1}));
}

// ---- Fill, zeros, ones, *_like

TEST(ArrayCreate, FillZerosOnes) {
  EXPECT_EQ(fill({2, 2}, Tensor(7)).to_vector<int32_t>(), (std::vector<int32_t>(4, 7)));
  EXPECT_EQ(fill({3}, Tensor(true)).to_vector<bool>(), (std::vector<bool>(3, true)));
  for (DType d : testing::data_dtypes()) {
    EXPECT_EQ(values(zeros({2, 3}, d)), Ints(6, 0)) << dtype_name(d);
    EXPECT_EQ(values(ones({3}, d)), Ints(3, 1)) << dtype_name(d);
    EXPECT_EQ(values(ones_like(iota({2, 2}, d))), Ints(4, 1)) << dtype_name(d);
    EXPECT_EQ(values(zeros_like(iota({2, 2}, d))), Ints(4, 0)) << dtype_name(d);
  }
  EXPECT_EQ(ones_like(Tensor(false)).item<bool>(), true);
  EXPECT_EQ(zeros({0, 4}).num_elements(), 0);
  expect_error([] { fill({2}, Tensor({1.0f, 2.0f})); }, "value must be a scalar");
}

TEST(ArrayCreate, Eye) {
  EXPECT_EQ(values(eye(2)), (Ints{1, 0, 0, 1}));
  Tensor e = eye(2, 3, {2}, DType::kFloat16);
  EXPECT_EQ(e.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(values(e), (Ints{1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(eye(3, 1, {}, DType::kBool).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(eye(0).shape(), Shape({0, 0}));
}

// ---- Range, LinSpace

TEST(ArrayRange, IntsAndFloats) {
  EXPECT_EQ(range(1, 10, 3, DType::kInt32).to_vector<int32_t>(), (std::vector<int32_t>{1, 4, 7}));
  EXPECT_EQ(range(10, 1, -3, DType::kInt64).to_vector<int64_t>(), (Ints{10, 7, 4}));
  EXPECT_EQ(range(0, 5).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_THROW(range(5, 1, 1, DType::kInt32), StatusError);  // TF: an error when delta points away
  EXPECT_EQ(range(3, 3, 1, DType::kInt32).num_elements(), 0);
  auto f = range(0.0, 1.0, 0.1).to_vector<float>();
  ASSERT_EQ(f.size(), 10u);
  EXPECT_EQ(f[9], 0.90000004f);  // 9 * 0.1f in float32, as TensorFlow
  expect_error([] { range(0, 5, 0); }, "delta must not be 0");
}

TEST(ArrayRange, DtypesAndBounds) {
  // As TensorFlow.
  expect_error(
      [] { range(0, 5, 1, DType::kInt8); },
      "Range: input 'start' must have a dtype in {float16, bfloat16, float32, float64, int32, int64}, "
      "got int8");
  EXPECT_EQ(range(-4e18, 4e18, 4e18, DType::kInt64).to_vector<int64_t>(), (Ints{-4000000000000000000, 0}));
  expect_error([] { range(0, 3e9, 1, DType::kInt32); }, "range: limit 3e+09 must be representable in int32");
  expect_error([] { range(-1e19, 0, 1, DType::kInt64); },
               "range: start -1e+19 must be representable in int64");
  expect_error([] { range(0, 1e18, 1, DType::kInt64); }, "too many elements");
}

TEST(ArrayRange, Float16ComputesInHalf) {
  // tf.range(0., 1., 0.1, dtype=tf.float16)
  auto v = cast(range(0.0, 1.0, 0.1, DType::kFloat16), DType::kFloat32).to_vector<float>();
  std::vector<float> tf = {0.0f, 0.1f, 0.2f, 0.2998f, 0.4f, 0.5f, 0.5996f, 0.6997f, 0.8f, 0.9f};
  ASSERT_EQ(v.size(), tf.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], tf[i], 2e-4) << i;
}

TEST(ArrayLinSpace, Values) {
  auto v = linspace(Tensor(0.0f), Tensor(1.0f), 4).to_vector<float>();
  EXPECT_EQ(v, (std::vector<float>{0.0f, 1.0f / 3.0f, 2.0f / 3.0f, 1.0f}));
  EXPECT_EQ(linspace(Tensor(2.0f), Tensor(5.0f), 1).to_vector<float>(), (std::vector<float>{2.0f}));
  Tensor d = linspace(cast(Tensor(-1.0f), DType::kFloat64), cast(Tensor(1.0f), DType::kFloat64), 3);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{-1.0, 0.0, 1.0}));
  expect_error([] { linspace(Tensor(0.0f), Tensor(1.0f), 0); }, "num must be >= 1, got 0");
}

}  // namespace
}  // namespace ember
