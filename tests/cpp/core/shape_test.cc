// Shape's element counts and the overflow-checked size arithmetic (core/shape.h): sizes computed from user
// input must never overflow int64 silently (issue 12, item 3).
#include "ember/core/shape.h"

#include <gtest/gtest.h>

#include <climits>
#include <vector>

namespace ember {
namespace {

TEST(Shape, NumElementsOfEmptyAndUnknownShapes) {
  EXPECT_EQ(Shape({2, 3}).num_elements(), 6);
  EXPECT_EQ(Shape().num_elements(), 1);
  EXPECT_EQ(Shape({0, int64_t{1} << 62}).num_elements(), 0);
  EXPECT_EQ(Shape({kUnknownDim, 0}).num_elements(), -1);  // unknown stays unknown, even when empty
  EXPECT_EQ(Shape::unknown_rank().num_elements(), -1);
}

TEST(Shape, NumElementsSaturatesInsteadOfOverflowing) {
  // Not constructible through from_dims; a Shape built directly still must not invoke signed overflow.
  EXPECT_EQ(Shape({int64_t{1} << 40, int64_t{1} << 40}).num_elements(), INT64_MAX);
  EXPECT_EQ(Shape({int64_t{1} << 40, int64_t{1} << 40, 0}).num_elements(), 0);
}

TEST(Shape, CheckedArithmetic) {
  int64_t out;
  EXPECT_TRUE(checked_add(INT64_MAX - 1, 1, &out));
  EXPECT_EQ(out, INT64_MAX);
  EXPECT_FALSE(checked_add(INT64_MAX, 1, &out));
  EXPECT_FALSE(checked_add(INT64_MAX, INT64_MAX, &out));  // wraps to -2 unchecked
  EXPECT_TRUE(checked_mul(int64_t{1} << 31, int64_t{1} << 31, &out));
  EXPECT_FALSE(checked_mul(int64_t{3037000500}, int64_t{3037000500}, &out));
  EXPECT_FALSE(checked_mul(INT64_MIN, -1, &out));
}

TEST(Shape, CheckedNumElements) {
  std::vector<int64_t> fits = {int64_t{1} << 31, int64_t{1} << 31, 0};
  EXPECT_EQ(*checked_num_elements(fits), 0);
  std::vector<int64_t> largest = {int64_t{1} << 40, int64_t{1} << 22};
  EXPECT_EQ(*checked_num_elements(largest), int64_t{1} << 62);
  // TensorFlow rejects these too: strides and partial products over them overflow although the tensor is
  // empty.
  for (std::vector<int64_t> dims :
       {std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40, 0}, std::vector<int64_t>{0, INT64_MAX, 2}}) {
    auto n = checked_num_elements(dims);
    ASSERT_FALSE(n.ok());
    EXPECT_NE(n.status().message().find("exceeds 2^63-1"), std::string::npos) << n.status().message();
  }
}

TEST(Shape, FromDimsRejectsShapesPastInt64) {
  std::vector<int64_t> dims = {int64_t{1} << 40, 0, int64_t{1} << 40};
  EXPECT_FALSE(Shape::from_dims(dims).ok());
  std::vector<int64_t> unknown = {kUnknownDim, int64_t{1} << 40};
  EXPECT_TRUE(Shape::from_dims(unknown, /*allow_unknown=*/true).ok());
  Shape wrapped({int64_t{1} << 62, 4});
  EXPECT_FALSE(check_shape_size(wrapped).ok());
  EXPECT_FALSE(check_shape_size(Shape({2, -5})).ok());
  EXPECT_TRUE(check_shape_size(Shape({kUnknownDim, int64_t{1} << 62})).ok());
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(Shape, CompatibilityTreatsUnknownsAsWildcards) {
  EXPECT_TRUE(Shape({2, 3}).is_compatible_with(Shape({2, 3})));
  EXPECT_TRUE(Shape({-1, 3}).is_compatible_with(Shape({2, 3})));
  EXPECT_TRUE(Shape({2, 3}).is_compatible_with(Shape({2, -1})));
  EXPECT_TRUE(Shape::unknown_rank().is_compatible_with(Shape({2, 3, 4})));
  EXPECT_FALSE(Shape({2, 3}).is_compatible_with(Shape({3, 3})));
  EXPECT_FALSE(Shape({2, 3}).is_compatible_with(Shape({2, 3, 1})));
  EXPECT_FALSE(Shape({-1, 3}).is_compatible_with(Shape({-1, 4})));
}

}  // namespace
}  // namespace ember
