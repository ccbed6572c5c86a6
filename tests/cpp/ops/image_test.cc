// ImageProjectiveTransformV3 (ops/image.cc): its shape function and attribute checks here; its values, every
// fill mode, interpolation and dtype, against TensorFlow's kernel in
// tests/python/test_image_projective_transform.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> modes(const std::string& interpolation, const std::string& fill_mode) {
  return {interpolation, fill_mode};
}

TEST(ImageProjectiveTransformV3Shape, OutputShapeGivesHeightAndWidth) {
  const auto m = modes("BILINEAR", "REFLECT");
  INFER_OK("ImageProjectiveTransformV3", "[2,5,7,3];[2,8];=[4,9];[]", m, "[2,4,9,3]");
  INFER_OK("ImageProjectiveTransformV3", "[2,5,7,3]:uint8;[1,8];=[4,9];[]", m, "[2,4,9,3]:uint8");
  INFER_OK("ImageProjectiveTransformV3", "[?,5,7,3];[?,8];=[?,9];[]", m, "[?,?,9,3]");
  INFER_OK("ImageProjectiveTransformV3", "?;?;[2]:int32;?", modes("NEAREST", "CONSTANT"), "[?,?,?,?]");
}

TEST(ImageProjectiveTransformV3Shape, BadOperandsAndAttributes) {
  const auto m = modes("NEAREST", "WRAP");
  INFER_ERROR("ImageProjectiveTransformV3", "[5,7,3];[1,8];=[4,9];[]", m, "must be 4-D");
  INFER_ERROR("ImageProjectiveTransformV3", "[2,5,7,3];[3,8];=[4,9];[]", m,
              "transforms must be [num_images, 8]");
  INFER_ERROR("ImageProjectiveTransformV3", "[2,5,7,3];[2,6];=[4,9];[]", m,
              "transforms must be [num_images, 8]");
  INFER_ERROR("ImageProjectiveTransformV3", "[2,5,7,3];[8];=[4,9];[]", m,
              "transforms must be [num_images, 8]");
  INFER_ERROR("ImageProjectiveTransformV3", "[2,5,7,3];[1,8];=[4,0];[]", m,
              "output dimensions must be positive");
  INFER_ERROR("ImageProjectiveTransformV3", "[2,5,7,3];[1,8];=[4,5,6];[]", m, "must have 2 elements");
  INFER_ERROR("ImageProjectiveTransformV3", "[2,5,7,3];[1,8];=[4,9];[1]", m, "fill_value must be a scalar");
  INFER_ERROR("ImageProjectiveTransformV3", "[2,5,7,3];[1,8];=[4,9];[]", modes("CUBIC", "WRAP"),
              "interpolation must be NEAREST or BILINEAR");
  INFER_ERROR("ImageProjectiveTransformV3", "[2,5,7,3];[1,8];=[4,9];[]", modes("NEAREST", "SYMMETRIC"),
              "fill_mode must be REFLECT, WRAP, CONSTANT or NEAREST");
}

}  // namespace
}  // namespace ember
