// ScaleAndTranslate and ScaleAndTranslateGrad (ops/image_scale_translate.cc): their shape functions and
// attribute checks here; values and gradients of every kernel against TensorFlow in
// tests/python/test_image_resize_methods.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> kernel(std::string name, bool antialias = true) { return {name, antialias}; }

TEST(ScaleAndTranslateShape, SizeGivesTheSpatialDims) {
  INFER_OK("ScaleAndTranslate", "[2,9,7,3]:uint8;=[4,5];[2];[2]", kernel("lanczos3"), "[2,4,5,3]");
  INFER_OK("ScaleAndTranslate", "?;[2]:int32;[2];[2]", kernel("box", false), "[?,?,?,?]");
  INFER_ERROR("ScaleAndTranslate", "[2,9,7,3];=[4,5];[2];[2]", kernel("cubic"), "unrecognized kernel type");
  INFER_ERROR("ScaleAndTranslate", "[9,7,3];=[4,5];[2];[2]", kernel("gaussian"), "images must be 4-D");
  INFER_ERROR("ScaleAndTranslate", "[2,9,7,3];=[4,5];[3];[2]", kernel("gaussian"),
              "scale must be a vector of 2");
  INFER_ERROR("ScaleAndTranslate", "[2,9,7,3];=[0,5];[2];[2]", kernel("gaussian"),
              "output size must be positive");
}

TEST(ScaleAndTranslateGradShape, OriginalImageShapeInGradsDtype) {
  INFER_OK("ScaleAndTranslateGrad", "[2,4,5,3];[2,9,7,3]:float64;[2];[2]", kernel("keyscubic"), "[2,9,7,3]");
  INFER_OK("ScaleAndTranslateGrad", "[2,4,5,3]:float64;[2,9,7,3];[2];[2]", kernel("triangle"),
           "[2,9,7,3]:float64");
  INFER_ERROR("ScaleAndTranslateGrad", "[4,5,3];[2,9,7,3];[2];[2]", kernel("triangle"), "grads must be 4-D");
}

}  // namespace
}  // namespace ember
