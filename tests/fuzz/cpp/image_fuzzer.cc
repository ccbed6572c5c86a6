// libFuzzer target for the image file codecs (kernels/image_codecs.h): an input is [option byte][file bytes];
// the file is decoded by every decoder whose format the option byte picks (the JPEG decoder with the ratio,
// channels, DCT, truncation recovery and crop window that byte's bits choose), and a decoded image is
// encoded back to JPEG and PNG. Every problem must be an InvalidArgument Status, never a crash, a read out of
// bounds, a hang or an allocation a header alone asks for: sizes are checked before buffers are made.
//
// Build: cmake -S . -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DEMBER_BUILD_FUZZERS=ON
//        -DEMBER_BUILD_PYTHON=OFF -DEMBER_BUILD_EXAMPLES=OFF && ninja -C build/fuzz image_fuzzer
// Run:   build/fuzz/image_fuzzer -max_total_time=60 tests/fuzz/cpp/corpus/image
// The driver tests/fuzz/test_image_fuzz.py runs it under pytest.
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/kernels/image_codecs.h"

namespace {

using namespace ember;

void expect_invalid_argument(const Status& s) {
  if (!s.ok() && s.code() != Code::kInvalidArgument) __builtin_trap();
}

// A decoded image must be as large as its dimensions say; then it must encode.
void check_and_encode(const codecs::Image& image) {
  const uint64_t expected = uint64_t(image.frames) * image.height * image.width * image.channels;
  if (image.pixels.size() != expected) __builtin_trap();
  if (image.frames != 1 || image.height == 0 || image.width == 0) return;
  std::string out;
  if (image.channels == 1 || image.channels == 3) {
    codecs::JpegEncodeOptions options;
    if (!codecs::encode_jpeg(image.pixels.data(), image.height, image.width, image.channels, options, &out)
             .ok())
      __builtin_trap();
  }
  if (image.channels >= 1 && image.channels <= 4 &&
      !codecs::encode_png(image.pixels.data(), image.height, image.width, image.channels, 1, &out).ok())
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t option = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  codecs::Image image;
  static constexpr int kChannels[] = {0, 1, 3, 4};
  static constexpr int kRatios[] = {1, 2, 4, 8};
  switch (codecs::classify_image(bytes)) {
    case codecs::ImageFormat::kJpeg: {
      codecs::JpegDecodeOptions options;
      options.channels = kChannels[option & 3] == 4 ? 3 : kChannels[option & 3];
      options.ratio = kRatios[(option >> 2) & 3];
      options.integer_accurate_dct = option & 16;
      options.try_recover_truncated = option & 32;
      options.acceptable_fraction = option & 32 ? 0.5f : 1.0f;
      options.fancy_upscaling = !(option & 64);
      if (option & 128) {
        options.crop = true;
        options.crop_y = option & 7;
        options.crop_x = (option >> 3) & 7;
        options.crop_height = 1 + (option & 15);
        options.crop_width = 1 + ((option >> 2) & 15);
      }
      Status s = codecs::decode_jpeg(bytes, options, &image);
      expect_invalid_argument(s);
      if (s.ok()) check_and_encode(image);
      int64_t h = 0, w = 0, c = 0;
      expect_invalid_argument(codecs::jpeg_shape(bytes, &h, &w, &c));
      break;
    }
    case codecs::ImageFormat::kPng: {
      Status s = codecs::decode_png(bytes, kChannels[option & 3], option & 4, &image);
      expect_invalid_argument(s);
      if (s.ok() && !(option & 4)) check_and_encode(image);
      break;
    }
    case codecs::ImageFormat::kGif: {
      Status s = codecs::decode_gif(bytes, option & 1, &image);
      expect_invalid_argument(s);
      if (s.ok()) check_and_encode(image);
      break;
    }
    case codecs::ImageFormat::kBmp: {
      Status s = codecs::decode_bmp(bytes, (option & 1) ? 0 : 3 + (option & 2) / 2, &image);
      expect_invalid_argument(s);
      if (s.ok()) check_and_encode(image);
      break;
    }
    case codecs::ImageFormat::kUnknown:
      break;
  }
  return 0;
}
