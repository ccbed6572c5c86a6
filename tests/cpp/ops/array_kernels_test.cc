// Values of the shape ops (ops/array.cc): Reshape and the other views, Transpose, ConcatV2, Pack, Unpack,
// SplitV, Tile, BroadcastTo, Pad, Shape, Size, Rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "tests/cpp/ops/array_testing.h"

namespace ember {
namespace {

using testing::expect_error;
using testing::flat_index;
using testing::Ints;
using testing::ints_as;
using testing::iota;
using testing::values;

bool shares_buffer(const Tensor& a, const Tensor& b) { return a.impl()->buffer() == b.impl()->buffer(); }

// ---- views

TEST(ArrayReshape, IsAViewWithTheSameValues) {
  for (DType d : testing::data_dtypes()) {
    Tensor x = iota({2, 3}, d);
    Tensor y = reshape(x, {3, -1});
    EXPECT_EQ(y.shape(), Shape({3, 2}));
    EXPECT_EQ(y.dtype(), d);
    EXPECT_TRUE(shares_buffer(x, y));
    EXPECT_EQ(values(y), values(x));
  }
}

TEST(ArrayReshape, ErrorMessage) {
  expect_error([] { reshape(iota({6}), {4}); },
               "Reshape: cannot reshape a tensor with 6 elements to shape [4] (4 elements)");
  expect_error([] { reshape(iota({6}), {-1, -1}); }, "only one dimension");
}

TEST(ArrayViews, ExpandDimsSqueezeIdentity) {
  Tensor x = iota({2, 3}, DType::kBool);
  Tensor e = expand_dims(x, 1);
  EXPECT_EQ(e.shape(), Shape({2, 1, 3}));
  EXPECT_TRUE(shares_buffer(x, e));
  Tensor s = squeeze(e);
  EXPECT_EQ(s.shape(), Shape({2, 3}));
  EXPECT_TRUE(shares_buffer(x, s));
  EXPECT_EQ(s.to_vector<bool>(), x.to_vector<bool>());
  Tensor i = identity(x);
  EXPECT_TRUE(shares_buffer(x, i));
  EXPECT_EQ(i.shape(), x.shape());
  expect_error([&] { squeeze(x, {1}); }, "expected a dimension of size 1, got 3");
}

TEST(ArrayViews, ShapeSizeRank) {
  Tensor x = iota({2, 3, 4}, DType::kFloat16);
  EXPECT_EQ(shape(x).to_vector<int32_t>(), (std::vector<int32_t>{2, 3, 4}));
  EXPECT_EQ(shape(x, DType::kInt64).to_vector<int64_t>(), (Ints{2, 3, 4}));
  EXPECT_EQ(shape(Tensor(1.0f)).num_elements(), 0);
  EXPECT_EQ(size(x).item<int32_t>(), 24);
  EXPECT_EQ(size(x, DType::kInt64).dtype(), DType::kInt64);
  EXPECT_EQ(rank(x).item<int32_t>(), 3);
  EXPECT_EQ(rank(Tensor(true)).item<int32_t>(), 0);
}

// ---- Transpose

// out[j...] = in[perm-applied index], computed naively.
std::vector<int64_t> reference_transpose(const std::vector<int64_t>& in, const Ints& dims, const Ints& perm) {
  const size_t r = dims.size();
  Ints out_dims(r);
  for (size_t j = 0; j < r; ++j) out_dims[j] = dims[perm[j]];
  std::vector<int64_t> out(in.size());
  Ints idx(r, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    Ints src(r);
    for (size_t j = 0; j < r; ++j) src[perm[j]] = idx[j];
    out[o] = in[flat_index(dims, src)];
    for (int j = static_cast<int>(r) - 1; j >= 0; --j) {
      if (++idx[j] < out_dims[j]) break;
      idx[j] = 0;
    }
  }
  return out;
}

void check_transpose(const Ints& dims, const Ints& perm, DType dtype) {
  Tensor x = iota(dims, dtype);
  Tensor y = transpose(x, perm);
  ASSERT_EQ(y.dtype(), dtype);
  for (size_t j = 0; j < perm.size(); ++j) ASSERT_EQ(y.shape().dim(static_cast<int>(j)), dims[perm[j]]);
  EXPECT_EQ(values(y), reference_transpose(values(x), dims, perm))
      << "dims " << Shape(dims).to_string() << " perm " << Shape(perm).to_string() << " "
      << dtype_name(dtype);
}

TEST(ArrayTranspose, Small2D) {
  Tensor y = transpose(Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(y.shape(), Shape({3, 2}));
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
}

TEST(ArrayTranspose, OddSized2DEveryWidth) {
  for (DType d : {DType::kInt8, DType::kFloat16, DType::kFloat32, DType::kFloat64, DType::kBool})
    check_transpose({67, 131}, {1, 0}, d);
}

TEST(ArrayTranspose, Every3DPermutation) {
  Ints perm = {0, 1, 2};
  do {
    check_transpose({3, 4, 5}, perm, DType::kInt32);
    check_transpose({3, 4, 5}, perm, DType::kFloat16);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(ArrayTranspose, Every4DPermutation) {
  Ints perm = {0, 1, 2, 3};
  do {
    check_transpose({2, 3, 4, 5}, perm, DType::kFloat32);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(ArrayTranspose, NegativePermAndHighRank) {
  check_transpose({2, 3, 2, 3, 2}, {4, 2, 0, 3, 1}, DType::kInt64);
  Tensor y = transpose(iota({2, 3}), {-1, 0});
  EXPECT_EQ(y.shape(), Shape({3, 2}));
}

TEST(ArrayTranspose, MovingOnlySizeOneDimsIsAView) {
  Tensor x = iota({1, 5, 1, 3});
  Tensor y = transpose(x, {1, 0, 3, 2});
  EXPECT_TRUE(shares_buffer(x, y));
  EXPECT_EQ(y.shape(), Shape({5, 1, 3, 1}));
  EXPECT_EQ(values(y), values(x));
  Tensor z = transpose(x, {3, 1, 0, 2});  // moves the 3 in front of the 5: a real transpose
  EXPECT_FALSE(shares_buffer(x, z));
  EXPECT_EQ(values(z), reference_transpose(values(x), {1, 5, 1, 3}, {3, 1, 0, 2}));
}

TEST(ArrayTranspose, LargeParallel) {
  check_transpose({300, 1000}, {1, 0}, DType::kFloat32);
  check_transpose({4, 200, 300}, {0, 2, 1}, DType::kFloat16);
  check_transpose({64, 30, 40}, {2, 1, 0}, DType::kFloat64);
}

TEST(ArrayTranspose, EmptyAndScalar) {
  EXPECT_EQ(transpose(iota({0, 3}), {1, 0}).shape(), Shape({3, 0}));
  EXPECT_EQ(transpose(Tensor(2.5f), {}).item<float>(), 2.5f);
}

// ---- ConcatV2, Pack

TEST(ArrayConcat, Axis0And1AllDtypes) {
  for (DType d : testing::data_dtypes()) {
    Tensor a = ints_as({1, 2, 3, 4}, {2, 2}, d), b = ints_as({5, 6}, {1, 2}, d);
    EXPECT_EQ(values(concat({a, b}, 0)), (Ints{1, 2, 3, 4, 5, 6})) << dtype_name(d);
    Tensor c = ints_as({7, 8, 9, 10, 11, 12}, {2, 3}, d);
    Tensor ac = concat({a, c}, -1);
    EXPECT_EQ(ac.shape(), Shape({2, 5}));
    EXPECT_EQ(values(ac), (Ints{1, 2, 7, 8, 9, 3, 4, 10, 11, 12})) << dtype_name(d);
  }
}

TEST(ArrayConcat, BoolEmptyAndSingle) {
  Tensor t = Tensor::from_vector(std::vector<bool>{true, false}, {2});
  Tensor e = Tensor::from_vector(std::vector<bool>{}, {0});
  EXPECT_EQ(concat({e, t, e, t}, 0).to_vector<bool>(), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(concat({t}, 0).to_vector<bool>(), t.to_vector<bool>());
}

TEST(ArrayConcat, ShortRowsEveryWidthConcatAndSplit) {
  // Rows of 1..20 elements (1..160 bytes: the short-row copies and the memcpy path), three inputs, for
  // 1-, 4- and 8-byte elements; a zero-width input in the middle.
  for (DType d : {DType::kUInt8, DType::kFloat32, DType::kFloat64}) {
    for (int64_t w0 = 1; w0 <= 20; ++w0) {
      for (int64_t w1 :
           {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{9}, int64_t{17}}) {
        const int64_t rows = 7, w2 = 2, total = w0 + w1 + w2;
        auto block = [&](int64_t w, int64_t base) {
          std::vector<int32_t> v;
          for (int64_t i = 0; i < rows * w; ++i) v.push_back(static_cast<int32_t>((base + i) % 100));
          return ints_as(v, {rows, w}, d);
        };
        Tensor out = concat(std::vector<Tensor>{block(w0, 0), block(w1, 30), block(w2, 60)}, 1);
        ASSERT_EQ(out.shape(), Shape({rows, total}));
        Ints want;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < w0; ++j) want.push_back((r * w0 + j) % 100);
          for (int64_t j = 0; j < w1; ++j) want.push_back((30 + r * w1 + j) % 100);
          for (int64_t j = 0; j < w2; ++j) want.push_back((60 + r * w2 + j) % 100);
        }
        ASSERT_EQ(values(out), want) << dtype_name(d) << " w0=" << w0 << " w1=" << w1;
        // Splitting back takes the same short-row path the other way.
        std::vector<Tensor> parts = split(out, {w0, w1, w2}, 1);
        ASSERT_EQ(parts.size(), 3u);
        EXPECT_EQ(values(parts[0]), values(block(w0, 0))) << dtype_name(d) << " w0=" << w0;
        EXPECT_EQ(values(parts[1]), values(block(w1, 30))) << dtype_name(d) << " w1=" << w1;
        EXPECT_EQ(values(parts[2]), values(block(w2, 60))) << dtype_name(d);
      }
    }
  }
}

TEST(ArrayConcat, ErrorNamesShapes) {
  expect_error(
      [] {
        concat({iota({2, 3}), iota({2, 4})}, 0);
      },
      "ConcatV2: dimension 1 of input #1 (shape [2,4])");
}

// TensorFlow's signature: values..., axis (an int32 or int64 scalar tensor).
TEST(ArrayConcat, AxisIsTheLastInput) {
  Tensor a = ints_as({1, 2}, {1, 2}, DType::kInt32), b = ints_as({3, 4}, {1, 2}, DType::kInt32);
  EXPECT_EQ(values(call_op("ConcatV2", {a, b, Tensor(int64_t{-2})})[0]), (Ints{1, 2, 3, 4}));
  EXPECT_EQ(call_op("ConcatV2", {a, b, ints_as({1}, {}, DType::kInt32)})[0].shape(), Shape({1, 4}));
  expect_error(
      [&] {
        call_op("ConcatV2", {a, b, Tensor(int64_t{2})});
      },
      "ConcatV2: axis 2 is out of range for a tensor of rank 2");
  expect_error(
      [&] {
        call_op("ConcatV2", {a, b, ints_as({0, 1}, {2}, DType::kInt32)});
      },
      "ConcatV2: axis must be a scalar, got a tensor of shape [2]");
}

TEST(ArrayConcat, ConcatOffset) {
  const std::vector<Tensor> offsets =
      call_op("ConcatOffset", {ints_as({1}, {}, DType::kInt32), ints_as({2, 3}, {2}, DType::kInt64),
                               ints_as({2, 5}, {2}, DType::kInt64), ints_as({2, 0}, {2}, DType::kInt64)});
  ASSERT_EQ(offsets.size(), 3u);
  EXPECT_EQ(offsets[2].dtype(), DType::kInt64);
  EXPECT_EQ(values(offsets[0]), (Ints{0, 0}));
  EXPECT_EQ(values(offsets[1]), (Ints{0, 3}));
  EXPECT_EQ(values(offsets[2]), (Ints{0, 8}));
  expect_error(
      [] {
        call_op("ConcatOffset", {ints_as({0}, {}, DType::kInt32), ints_as({2, 3}, {2}, DType::kInt32),
                                 ints_as({2, 4}, {2}, DType::kInt32)});
      },
      "ConcatOffset: shape #1 is [2,4] but shape #0 is [2,3]; all dimensions except 0 must match");
}

TEST(ArrayPack, StackAxes) {
  Tensor a = ints_as({1, 2}, {2}, DType::kInt32), b = ints_as({3, 4}, {2}, DType::kInt32);
  EXPECT_EQ(values(stack({a, b})), (Ints{1, 2, 3, 4}));
  Tensor s1 = stack({a, b}, 1);
  EXPECT_EQ(s1.shape(), Shape({2, 2}));
  EXPECT_EQ(values(s1), (Ints{1, 3, 2, 4}));
  EXPECT_EQ(values(stack({Tensor(1.0f), Tensor(2.0f)})), (Ints{1, 2}));
  Tensor h = stack(
      {ints_as({1, 2, 3, 4}, {2, 2}, DType::kFloat16), ints_as({5, 6, 7, 8}, {2, 2}, DType::kFloat16)}, -1);
  EXPECT_EQ(h.shape(), Shape({2, 2, 2}));
  EXPECT_EQ(values(h), (Ints{1, 5, 2, 6, 3, 7, 4, 8}));
}

// ---- Unpack, SplitV

TEST(ArrayUnpack, Axis0IsViewsAxis1Copies) {
  Tensor x = iota({3, 2}, DType::kInt32);
  auto rows = unstack(x);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(shares_buffer(rows[1], x));
  EXPECT_EQ(values(rows[2]), (Ints{4, 5}));
  auto cols = unstack(x, 1);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].shape(), Shape({3}));
  EXPECT_EQ(values(cols[1]), (Ints{1, 3, 5}));
}

// Issue 12 item 3: the sizes summed to 6 with signed wrap-around and the third piece read before the buffer.
TEST(ArraySplit, SizesThatOverflowInt64AreRejected) {
  expect_error([] { split(iota({6}), {INT64_MAX, INT64_MAX, 8}); }, "sum to more than 2^63-1");
  expect_error([] { split(iota({6}), {INT64_MAX, INT64_MAX, -1}); }, "sum to more than 2^63-1");
}

// Issue 12 item 9: an empty input with a huge dim asked for billions of outputs (std::bad_alloc, abort).
TEST(ArrayUnpack, EmptyInputWithHugeDims) {
  expect_error([] { unstack(zeros({3037000500, 0})); }, "at most 1048576 outputs");
  auto parts = unstack(zeros({2, int64_t{1} << 61, 0}));
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].shape(), Shape({int64_t{1} << 61, 0}));
  auto pieces = split(zeros({0, int64_t{1} << 62}), {int64_t{1} << 61, int64_t{1} << 61}, 1);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].shape(), Shape({0, int64_t{1} << 61}));
}

TEST(ArrayUnpack, ExplicitNum) {
  auto parts = call_op("Unpack", {iota({2, 2}, DType::kBool)}, {int64_t{2}, int64_t{-1}});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].to_vector<bool>(), (std::vector<bool>{true, true}));
  expect_error(
      [] {
        call_op("Unpack", {iota({2, 3})}, {int64_t{3}, int64_t{0}});
      },
      "num is 3 but dimension 0");
}

TEST(ArraySplit, SizesAndInferredPiece) {
  Tensor x = iota({6}, DType::kFloat16);
  auto parts = split(x, {1, -1, 2});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(values(parts[0]), (Ints{0}));
  EXPECT_EQ(values(parts[1]), (Ints{1, 2, 3}));
  EXPECT_EQ(values(parts[2]), (Ints{4, 5}));
  EXPECT_TRUE(shares_buffer(parts[2], x));
}

TEST(ArraySplit, InnerAxisAndEvenSplit) {
  Tensor x = iota({2, 4}, DType::kInt64);
  auto parts = split(x, 2, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(values(parts[0]), (Ints{0, 1, 4, 5}));
  EXPECT_EQ(values(parts[1]), (Ints{2, 3, 6, 7}));
  auto uneven = split(x, {3, 0, 1}, -1);
  EXPECT_EQ(uneven[1].shape(), Shape({2, 0}));
  EXPECT_EQ(values(uneven[2]), (Ints{3, 7}));
  expect_error([&] { split(x, {1, 2}, 1); }, "must sum to the size of the split dimension, 4; got 3");
}

// ---- Tile, BroadcastTo

TEST(ArrayTile, TwoD) {
  for (DType d : testing::data_dtypes()) {
    Tensor y = tile(ints_as({1, 2}, {1, 2}, d), {2, 2});
    EXPECT_EQ(y.shape(), Shape({2, 4}));
    EXPECT_EQ(values(y), (Ints{1, 2, 1, 2, 1, 2, 1, 2})) << dtype_name(d);
  }
}

TEST(ArrayTile, ColumnBoolAndZero) {
  Tensor col = Tensor::from_vector(std::vector<bool>{true, false}, {2, 1});
  EXPECT_EQ(tile(col, {1, 3}).to_vector<bool>(), (std::vector<bool>{true, true, true, false, false, false}));
  EXPECT_EQ(tile(col, {0, 3}).shape(), Shape({0, 3}));
  EXPECT_EQ(values(tile(iota({3}, DType::kInt32), {2})), (Ints{0, 1, 2, 0, 1, 2}));
  expect_error([] { tile(iota({2, 2}), {2}); }, "one entry per dimension");
}

TEST(ArrayBroadcastTo, RowsColumnsAndLeadingDims) {
  EXPECT_EQ(values(broadcast_to(ints_as({1, 2, 3}, {3}, DType::kInt8), {2, 3})), (Ints{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(values(broadcast_to(ints_as({1, 2}, {2, 1}, DType::kFloat16), {2, 3})), (Ints{1, 1, 1, 2, 2, 2}));
  Tensor y = broadcast_to(Tensor(7), {2, 2, 2});
  EXPECT_EQ(values(y), Ints(8, 7));
  expect_error([] { broadcast_to(iota({2}), {3}); }, "cannot broadcast a tensor of shape [2] to shape [3]");
}

TEST(ArrayBroadcastTo, LargeMatchesLoop) {
  Tensor x = iota({1, 300, 1}, DType::kFloat32);
  Tensor y = broadcast_to(x, {7, 300, 50});
  auto v = values(y);
  for (int64_t a = 0; a < 7; ++a)
    for (int64_t b = 0; b < 300; b += 13)
      for (int64_t c = 0; c < 50; c += 7) ASSERT_EQ(v[flat_index({7, 300, 50}, {a, b, c})], b);
}

// ---- Pad (expectations from tf.pad)

TEST(ArrayPad, Constant) {
  Tensor x = ints_as({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kInt32);
  Tensor y = pad(x, {{1, 0}, {0, 2}}, "CONSTANT", 9.0);
  EXPECT_EQ(y.shape(), Shape({3, 5}));
  EXPECT_EQ(values(y), (Ints{9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 4, 5, 6, 9, 9}));
  EXPECT_EQ(values(pad(ints_as({1}, {1}, DType::kFloat16), {{2, 1}})), (Ints{0, 0, 1, 0}));
  Tensor b = pad(Tensor::from_vector(std::vector<bool>{true}, {1}), {{1, 1}});
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, true, false}));
}

TEST(ArrayPad, Reflect) {
  Tensor x = ints_as({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kInt32);
  Tensor y = pad(x, {{1, 1}, {2, 2}}, "REFLECT");
  EXPECT_EQ(y.shape(), Shape({4, 7}));
  EXPECT_EQ(values(y),
            (Ints{6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1}));
}

TEST(ArrayPad, Symmetric) {
  Tensor x = ints_as({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kFloat32);
  Tensor y = pad(x, {{1, 1}, {2, 2}}, "SYMMETRIC");
  EXPECT_EQ(values(y),
            (Ints{2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2, 5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5}));
}

TEST(ArrayPad, MirrorThreeD) {
  // Reflect each dim independently: equal to a per-dim index map.
  Tensor x = iota({3, 4, 5}, DType::kInt32);
  Tensor y = pad(x, {{2, 1}, {1, 3}, {0, 4}}, "REFLECT");
  auto reflect = [](int64_t o, int64_t left, int64_t n) {
    int64_t i = o - left;
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    return i;
  };
  auto v = values(y);
  auto in = values(x);
  for (int64_t a = 0; a < 6; ++a)
    for (int64_t b = 0; b < 8; ++b)
      for (int64_t c = 0; c < 9; ++c)
        ASSERT_EQ(v[flat_index({6, 8, 9}, {a, b, c})],
                  in[flat_index({3, 4, 5}, {reflect(a, 2, 3), reflect(b, 1, 4), reflect(c, 0, 5)})]);
}

TEST(ArrayPad, Errors) {
  expect_error([] { pad(iota({1, 3}), {{1, 1}, {0, 0}}, "REFLECT"); }, "REFLECT paddings must be less than");
  expect_error([] { pad(iota({3}), {{0, 0}}, "wrap"); }, "mode must be");
}

}  // namespace
}  // namespace ember
