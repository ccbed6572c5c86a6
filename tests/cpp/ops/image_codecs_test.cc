// The image file ops (ops/image_codecs.cc): their shape functions and attribute checks here; pixels, files
// and damaged inputs against TensorFlow in tests/python/test_image_codec_ops.py and tests/fuzz.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> jpeg_attrs(int64_t channels, int64_t ratio = 1, std::string dct = "") {
  return {channels, ratio, true, false, 1.0, dct};
}

TEST(DecodeJpegShape, ChannelsKnownFromTheAttribute) {
  INFER_OK("DecodeJpeg", "[]:string", jpeg_attrs(0), "[?,?,?]:uint8");
  INFER_OK("DecodeJpeg", "?:string", jpeg_attrs(3), "[?,?,3]:uint8");
  INFER_OK("DecodeAndCropJpeg", "[]:string;[4]:int32", jpeg_attrs(1), "[?,?,1]:uint8");
  INFER_ERROR("DecodeJpeg", "[2]:string", jpeg_attrs(0), "`contents` must be scalar");
  INFER_ERROR("DecodeJpeg", "[]:string", jpeg_attrs(2), "`channels` must be 0, 1, 3 or 4 but got 2");
  INFER_ERROR("DecodeJpeg", "[]:string", jpeg_attrs(0, 3), "ratio must be 1, 2, 4, or 8, got 3");
  INFER_ERROR("DecodeJpeg", "[]:string", jpeg_attrs(0, 1, "SLOW"), "dct_method must be one of");
  INFER_ERROR("DecodeAndCropJpeg", "[]:string;[3]:int32", jpeg_attrs(0),
              "crop_window must be a vector of four");
}

// Attribute lists for the ops with a dtype attribute (a braced list would split a macro's arguments).
std::vector<AttrValue> channels_dtype(int64_t channels, DType dtype) { return {channels, dtype}; }
std::vector<AttrValue> image_attrs(int64_t channels, DType dtype, bool expand) {
  return {channels, dtype, expand};
}

TEST(DecodeImageShape, GifsAreFourDimensional) {
  INFER_OK("DecodeGif", "[]:string", {}, "[?,?,?,3]:uint8");
  INFER_OK("DecodeBmp", "[]:string", {int64_t{4}}, "[?,?,4]:uint8");
  INFER_OK("DecodePng", "[]:string", channels_dtype(0, DType::kUInt8), "[?,?,?]:uint8");
  INFER_OK("DecodeImage", "[]:string", image_attrs(3, DType::kFloat32, false), "[?,?,3]");
  INFER_OK("DecodeImage", "[]:string", image_attrs(0, DType::kUInt8, true), "<unknown>:uint8");
  INFER_ERROR("DecodePng", "[]:string", channels_dtype(0, DType::kFloat32), "uint16");
  INFER_ERROR("DecodeImage", "[]:string", image_attrs(0, DType::kInt32, true),
              "`dtype` must be uint8 or float32");
}

TEST(EncodeShapes, JpegTakesOneImageAndPngABatch) {
  const std::vector<AttrValue> jpeg = {std::string(),     int64_t{95},  false,        false,        true,
                                       std::string("in"), int64_t{300}, int64_t{300}, std::string()};
  INFER_OK("EncodeJpeg", "[4,5,3]:uint8", jpeg, "[]:string");
  INFER_ERROR("EncodeJpeg", "[4,5]:uint8", jpeg, "image must be 3-dimensional");
  INFER_ERROR("EncodeJpeg", "[4,5,2]:uint8", jpeg, "image must have 1 or 3 channels");
  INFER_OK("EncodePng", "[2,7,4,5,1]:uint8", {int64_t{-1}}, "[2,7]:string");
  INFER_OK("EncodePng", "?:uint8", {int64_t{9}}, "<unknown>:string");
  INFER_ERROR("EncodePng", "[4,5,3]:uint8", {int64_t{10}}, "compression should be in [-1,9], got 10");
  INFER_ERROR("EncodePng", "[4,5]:uint8", {int64_t{-1}}, "images must be at least rank 3");
  INFER_OK("ExtractJpegShape", "[]:string", {DType::kInt64}, "[3]:int64");
}

}  // namespace
}  // namespace ember
