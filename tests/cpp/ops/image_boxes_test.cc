// CropAndResize, its gradient ops and the non-max suppressions (ops/image_boxes.cc): their shape functions
// and the errors tracing can raise here; values, gradients, selections and run-time errors against TensorFlow
// in tests/python/test_image_boxes.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> combined_attrs(bool pad_per_class) { return {pad_per_class, true}; }

std::vector<AttrValue> crop_attrs(std::string method = "bilinear") { return {method, 0.0}; }

TEST(CropAndResizeShape, BoxesByCropSizeByDepth) {
  INFER_OK("CropAndResize", "[2,5,6,3];[7,4];[7]:int32;=[3,4]", crop_attrs(), "[7,3,4,3]");
  INFER_OK("CropAndResize", "[2,5,6,3]:uint8;[?,4];[?]:int32;=[1,1]", crop_attrs("nearest"), "[?,1,1,3]");
  INFER_OK("CropAndResize", "?;[?,4];[5]:int32;[2]:int32", crop_attrs(), "[5,?,?,?]");
  INFER_ERROR("CropAndResize", "[5,6,3];[7,4];[7]:int32;=[3,4]", crop_attrs(), "image must be 4-D");
  INFER_ERROR("CropAndResize", "[2,5,6,3];[7,3];[7]:int32;=[3,4]", crop_attrs(), "boxes must have 4 columns");
  INFER_ERROR("CropAndResize", "[2,5,6,3];[7,4];[6]:int32;=[3,4]", crop_attrs(),
              "box_ind has incompatible shape");
  INFER_ERROR("CropAndResize", "[2,5,6,3];[7,4];[7]:int32;=[0,4]", crop_attrs(),
              "crop dimensions must be positive");
  INFER_ERROR("CropAndResize", "[2,5,6,3];[7,4];[7]:int32;=[3,4,1]", crop_attrs(), "crop_size must have two");
  INFER_ERROR("CropAndResize", "[2,5,6,3];[7,4];[7]:int32;=[3,4]", crop_attrs("bicubic"), "method must be");
}

TEST(CropAndResizeGradShape, ImageSizeAndBoxes) {
  INFER_OK("CropAndResizeGradImage", "[7,3,4,3];[7,4];[7]:int32;=[2,5,6,3]",
           std::vector<AttrValue>({DType::kFloat64, std::string("nearest")}), "[2,5,6,3]:float64");
  INFER_ERROR("CropAndResizeGradImage", "[7,3,4,3];[7,4];[7]:int32;=[2,5,6,2]",
              std::vector<AttrValue>({DType::kFloat32, std::string("bilinear")}), "image_size and grads");
  INFER_ERROR("CropAndResizeGradImage", "[7,3,4,3];[7,4];[7]:int32;=[2,5,6,3]",
              std::vector<AttrValue>({DType::kInt32, std::string("bilinear")}), "T must be");
  INFER_OK("CropAndResizeGradBoxes", "[7,3,4,3];[2,5,6,3]:uint8;[7,4];[7]:int32", {std::string("bilinear")},
           "[7,4]");
  INFER_ERROR("CropAndResizeGradBoxes", "[7,3,4,3];[2,5,6,3];[7,4];[7]:int32", {std::string("nearest")},
              "method must be \"bilinear\"");
}

TEST(NonMaxSuppressionShape, SelectedCountIsKnownOnlyWhenPadded) {
  INFER_OK("NonMaxSuppressionV3", "[9,4];[9];=4;[];[]", {}, "[?]:int32");
  INFER_OK("NonMaxSuppressionV4", "[9,4];[9];=4;[];[]", {true}, "[4]:int32;[]:int32");
  INFER_OK("NonMaxSuppressionV4", "[9,4];[9];[]:int32;[];[]", {true}, "[?]:int32;[]:int32");
  INFER_OK("NonMaxSuppressionV5", "[9,4]:float16;[9]:float16;=4;[]:float16;[]:float16;[]:float16", {false},
           "[?]:int32;[?]:float16;[]:int32");
  INFER_OK("NonMaxSuppressionWithOverlaps", "[9,9];[9];=4;[];[]", {}, "[?]:int32");
  INFER_ERROR("NonMaxSuppressionV3", "[9,3];[9];=4;[];[]", {}, "boxes must have 4 columns");
  INFER_ERROR("NonMaxSuppressionV3", "[9,4];[8];=4;[];[]", {}, "scores has incompatible shape");
  INFER_ERROR("NonMaxSuppressionV3", "[9,4];[9];=[4];[];[]", {}, "max_output_size must be 0-D");
  INFER_ERROR("NonMaxSuppressionV3", "[9,4];[9];=-3;[];[]", {}, "output size must be non-negative");
  INFER_ERROR("NonMaxSuppressionWithOverlaps", "[9,8];[9];=4;[];[]", {}, "overlaps must be square");
}

TEST(CombinedNonMaxSuppressionShape, PaddedToTotalOrPerClass) {
  INFER_OK("CombinedNonMaxSuppression", "[2,9,1,4];[2,9,3];=2;=10;[];[]", combined_attrs(false),
           "[2,10,4];[2,10];[2,10];[2]:int32");
  INFER_OK("CombinedNonMaxSuppression", "[2,9,3,4];[2,9,3];=2;=10;[];[]", combined_attrs(true),
           "[2,6,4];[2,6];[2,6];[2]:int32");
  INFER_ERROR("CombinedNonMaxSuppression", "[2,9,1,4];[2,9,3];=2;=0;[];[]", combined_attrs(false),
              "max_total_size must be > 0");
  INFER_ERROR("CombinedNonMaxSuppression", "[2,9,1,3];[2,9,3];=2;=4;[];[]", combined_attrs(false),
              "boxes must have 4 columns");
}

}  // namespace
}  // namespace ember
