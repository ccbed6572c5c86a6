// DecodeWav and EncodeWav (ops/audio.cc): their shape functions and errors here; bytes, decodes and corrupt
// files against TensorFlow's tf.audio in tests/python/test_audio.py.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> desired(int64_t channels, int64_t samples) { return {channels, samples}; }

TEST(DecodeWavShape, DesiredSizesOrUnknown) {
  INFER_OK("DecodeWav", "[]:string", desired(-1, -1), "[?,?];[]:int32");
  INFER_OK("DecodeWav", "[]:string", desired(2, 16000), "[16000,2];[]:int32");
  INFER_OK("DecodeWav", "?:string", desired(1, -1), "[?,1];[]:int32");
  INFER_ERROR("DecodeWav", "[2]:string", desired(-1, -1), "contents must be scalar");
  INFER_ERROR("DecodeWav", "[]:string", desired(-2, -1), "desired_channels must be -1");
}

TEST(EncodeWavShape, AudioIsAMatrixAndTheRateAScalar) {
  INFER_OK("EncodeWav", "[100,2];[]:int32", {}, "[]:string");
  INFER_OK("EncodeWav", "[?,?];?:int32", {}, "[]:string");
  INFER_ERROR("EncodeWav", "[100];[]:int32", {}, "audio must be 2-dimensional");
  INFER_ERROR("EncodeWav", "[100,1];[1]:int32", {}, "sample_rate must be scalar");
}

}  // namespace
}  // namespace ember
