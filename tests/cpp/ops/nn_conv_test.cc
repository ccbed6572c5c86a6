// Shape functions of the convolution and pooling ops (ops/nn_conv.cc, ops/nn_pool.cc) in the mini-language of
// infer_testing.h: layouts, paddings, strides and dilations, unknown dims, and the errors.
#include <gtest/gtest.h>

#include "infer_testing.h"

namespace ember {
namespace {

using Ints = std::vector<int64_t>;
using Attrs = std::vector<AttrValue>;

std::vector<AttrValue> conv2d(Ints strides, std::string padding, Ints explicit_paddings = {},
                              std::string format = "NHWC", Ints dilations = {1, 1, 1, 1}) {
  return {strides, true, padding, explicit_paddings, format, dilations};
}

TEST(ConvShapes, Conv2D) {
  INFER_OK("Conv2D", "[2,7,9,4];[3,2,4,5]", conv2d({1, 1, 1, 1}, "SAME"), "[2,7,9,5]");
  INFER_OK("Conv2D", "[2,7,9,4];[3,2,4,5]", conv2d({1, 2, 3, 1}, "SAME"), "[2,4,3,5]");
  INFER_OK("Conv2D", "[2,7,9,4];[3,2,4,5]", conv2d({1, 2, 3, 1}, "VALID"), "[2,3,3,5]");
  INFER_OK("Conv2D", "[2,7,9,4];[3,2,4,5]", conv2d({1, 1, 1, 1}, "VALID", {}, "NHWC", {1, 2, 3, 1}),
           "[2,3,6,5]");
  INFER_OK("Conv2D", "[2,7,9,4];[3,2,4,5]", conv2d({1, 1, 1, 1}, "EXPLICIT", {0, 0, 1, 2, 0, 3, 0, 0}),
           "[2,8,11,5]");
  INFER_OK("Conv2D", "[2,4,7,9];[3,2,4,5]", conv2d({1, 1, 2, 1}, "SAME", {}, "NCHW"), "[2,5,4,9]");
  INFER_OK("Conv2D", "[2,7,9,4];[3,2,2,6]", conv2d({1, 1, 1, 1}, "SAME"), "[2,7,9,6]");  // 2 groups
  // Unknown dims: the batch passes through, a spatial dim is unknown where the input's is.
  INFER_OK("Conv2D", "[?,?,9,4];[3,2,4,5]", conv2d({1, 1, 1, 1}, "VALID"), "[?,?,8,5]");
  INFER_OK("Conv2D", "?;[3,2,4,5]", conv2d({1, 1, 1, 1}, "VALID"), "[?,?,?,5]");
  INFER_OK("Conv2D", "[1,5,5,4];?", conv2d({1, 1, 1, 1}, "VALID"), "[1,?,?,?]");
  INFER_ERROR("Conv2D", "[7,9,4];[3,2,4,5]", conv2d({1, 1, 1, 1}, "SAME"), "input must be 4-D");
  INFER_ERROR("Conv2D", "[2,7,9,3];[3,2,2,5]", conv2d({1, 1, 1, 1}, "SAME"),
              "must be a positive multiple of the filter's");
  INFER_ERROR("Conv2D", "[2,7,9,4];[3,2,2,5]", conv2d({1, 1, 1, 1}, "SAME"),
              "multiple of the number of groups");
  INFER_ERROR("Conv2D", "[2,7,9,4];[3,2,4,5]", conv2d({1, 1, 1}, "SAME"), "strides must have 4 elements");
  INFER_ERROR("Conv2D", "[2,7,9,4];[3,2,4,5]", conv2d({1, 1, 1, 2}, "SAME"), "batch and channel dimensions");
  INFER_ERROR("Conv2D", "[2,7,9,4];[3,2,4,5]", conv2d({1, 1, 1, 1}, "EXPLICIT", {1, 1}), "8 elements");
  INFER_ERROR("Conv2D", "[2,7,9,4];[3,2,4,5]", conv2d({1, 1, 1, 1}, "SAME", {0, 0, 1, 1, 1, 1, 0, 0}),
              "must be empty unless");
  INFER_ERROR("Conv2D", "[2,1,1,4];[3,3,4,5]", conv2d({1, 1, 1, 1}, "VALID"), "negative size");
}

TEST(ConvShapes, BackpropOperandsAreShapes) {
  INFER_OK("Conv2DBackpropInput", "=[2,7,9,4];[3,2,4,5];[2,4,3,5]", conv2d({1, 2, 3, 1}, "SAME"),
           "[2,7,9,4]");
  INFER_OK("Conv2DBackpropInput", "=[?,7,9,4];[3,2,4,5];[?,4,3,5]", conv2d({1, 2, 3, 1}, "SAME"),
           "[?,7,9,4]");
  INFER_OK("Conv2DBackpropFilter", "[2,7,9,4];=[3,2,4,5];[2,4,3,5]", conv2d({1, 2, 3, 1}, "SAME"),
           "[3,2,4,5]");
  INFER_ERROR("Conv2DBackpropInput", "=[2,7,9,4];[3,2,4,5];[2,7,9,5]", conv2d({1, 2, 3, 1}, "SAME"),
              "out_backprop must have the shape of the forward op's output, [2,4,3,5]");
  INFER_ERROR("Conv2DBackpropInput", "=[2,7,9];[3,2,4,5];[2,4,3,5]", conv2d({1, 2, 3, 1}, "SAME"),
              "input_sizes must have 4 elements");
}

TEST(ConvShapes, Conv3DAndDepthwise) {
  INFER_OK("Conv3D", "[1,4,5,6,2];[2,3,2,2,3]",
           Attrs({Ints{1, 1, 2, 1, 1}, std::string("VALID"), std::string("NDHWC"), Ints{1, 1, 1, 1, 1}}),
           "[1,3,2,5,3]");
  INFER_OK("DepthwiseConv2dNative", "[2,5,6,3];[3,3,3,2]",
           Attrs({Ints{1, 1, 1, 1}, std::string("SAME"), Ints{}, std::string("NHWC"), Ints{1, 1, 1, 1}}),
           "[2,5,6,6]");
  INFER_ERROR("DepthwiseConv2dNative", "[2,5,6,3];[3,3,4,2]",
              Attrs({Ints{1, 1, 1, 1}, std::string("SAME"), Ints{}, std::string("NHWC"), Ints{1, 1, 1, 1}}),
              "must equal the input's channels");
  INFER_ERROR(
      "Conv3D", "[1,4,5,6,2];[2,3,2,2,3]",
      Attrs({Ints{1, 1, 1, 1, 1}, std::string("EXPLICIT"), std::string("NDHWC"), Ints{1, 1, 1, 1, 1}}),
      "padding must be \"SAME\" or \"VALID\"");
}

TEST(PoolShapes, MaxAndAvg) {
  const Attrs max = {Ints{1, 3, 2, 1}, Ints{1, 2, 2, 1}, std::string("SAME"), Ints{}, std::string("NHWC")};
  const Attrs avg = {Ints{1, 1, 3, 2}, Ints{1, 1, 2, 2}, std::string("VALID"), std::string("NCHW")};
  INFER_OK("MaxPool", "[2,5,6,3]", max, "[2,3,3,3]");
  INFER_OK("MaxPool", "[?,5,?,3]", max, "[?,3,?,3]");
  INFER_OK("AvgPool", "[2,3,5,6]", avg, "[2,3,2,3]");
  INFER_OK("AvgPoolGrad", "=[2,3,5,6];[2,3,2,3]", avg, "[2,3,5,6]");
  INFER_OK("MaxPoolGrad", "[2,5,6,3];[2,3,3,3];[2,3,3,3]", max, "[2,5,6,3]");
  INFER_ERROR("MaxPoolGrad", "[2,5,6,3];[2,3,3,3];[2,3,4,3]", max, "grad must have shape [2,3,3,3]");
  INFER_ERROR("MaxPool", "[5,6,3]", max, "input must be 4-D");
  INFER_ERROR("MaxPool", "[2,5,6,3]",
              Attrs({Ints{2, 3, 2, 1}, Ints{1, 2, 2, 1}, std::string("SAME"), Ints{}, std::string("NHWC")}),
              "batch or channel dimension");
  INFER_OK("MaxPool3D", "[1,4,5,3,2]",
           Attrs({Ints{1, 2, 2, 2, 1}, Ints{1, 2, 2, 1, 1}, std::string("SAME"), std::string("NDHWC")}),
           "[1,2,3,3,2]");
}

}  // namespace
}  // namespace ember
