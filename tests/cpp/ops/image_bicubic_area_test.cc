// ResizeBicubic, ResizeBicubicGrad and ResizeArea (ops/image_bicubic_area.cc): their shape functions and
// attribute checks here; values and gradients against TensorFlow in
// tests/python/test_image_resize_methods.py.
#include <gtest/gtest.h>

#include <vector>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> conventions(bool align_corners, bool half_pixel_centers) {
  return {align_corners, half_pixel_centers};
}

TEST(ResizeBicubicShape, FloatOfTheGivenSize) {
  INFER_OK("ResizeBicubic", "[2,9,7,3]:uint8;=[4,5]", conventions(false, true), "[2,4,5,3]");
  INFER_OK("ResizeBicubic", "?;[2]:int32", conventions(true, false), "[?,?,?,?]");
  INFER_ERROR("ResizeBicubic", "[2,9,7,3];=[4,5]", conventions(true, true), "cannot both be true");
  INFER_ERROR("ResizeBicubic", "[9,7,3];=[4,5]", conventions(false, false), "images must be 4-D");
  INFER_ERROR("ResizeBicubic", "[2,9,7,3];=[4,0]", conventions(false, false), "output size must be positive");
  INFER_OK("ResizeBicubicGrad", "[2,4,5,3];[2,9,7,3]:float64", conventions(false, true), "[2,9,7,3]:float64");
}

TEST(ResizeAreaShape, FloatOfTheGivenSize) {
  INFER_OK("ResizeArea", "[2,9,7,3]:int32;=[4,5]", {false}, "[2,4,5,3]");
  INFER_ERROR("ResizeArea", "[2,9,7,3];=[4,5,1]", {false}, "size must have 2 elements");
}

}  // namespace
}  // namespace ember
