// Image file codecs over Debian's libraries: JPEG (libjpeg-turbo), PNG (libpng), GIF (giflib) and BMP (read
// here: the format is a header and rows). The registry ops DecodeJpeg, EncodePng, DecodeImage, ...
// (ops/image_codecs.cc) call these; so does the libFuzzer target tests/fuzz/cpp/image_fuzzer.cc.
//
// Every function takes untrusted bytes: a damaged, truncated or hostile file is an InvalidArgument Status
// whose message says what was wrong (the ops prefix their name), never a crash, a read past the end or an
// allocation the file's size does not justify. Images are limited to kMaxImageBytes of output before any
// pixel buffer is allocated, so a header claiming 100000 x 100000 is refused from its header alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/status.h"

namespace ember::codecs {

/// The largest decoded image (all frames, all channels) in bytes: TensorFlow's JPEG limit, 2^29.
inline constexpr int64_t kMaxImageBytes = int64_t{1} << 29;

enum class ImageFormat { kUnknown, kJpeg, kPng, kGif, kBmp };
/// The format by its magic bytes, as TensorFlow's ClassifyFileFormat.
ImageFormat classify_image(std::string_view bytes);
const char* format_name(ImageFormat format);  // "JPEG", "PNG", ...

/// Decoded pixels, row-major [frames, height, width, channels], 8 bits per sample.
struct Image {
  int64_t frames = 1, height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

struct JpegDecodeOptions {
  int channels = 0;  // 0: the file's (at most 3), 1: grayscale, 3: RGB (CMYK files converted)
  int ratio = 1;     // downscale by 1, 2, 4 or 8 while decoding
  bool fancy_upscaling = true;
  bool try_recover_truncated = false;  // fill the rows a truncated file lacks by repeating the last one
  float acceptable_fraction = 1.0f;    // the fraction of rows that must be read for a truncated file
  bool integer_accurate_dct = false;   // dct_method "INTEGER_ACCURATE"; "" and "INTEGER_FAST" are fast
  bool crop = false;                   // decode only the window below (DecodeAndCropJpeg)
  int64_t crop_y = 0, crop_x = 0, crop_height = 0, crop_width = 0;
};
Status decode_jpeg(std::string_view bytes, const JpegDecodeOptions& options, Image* out);
/// [height, width, channels] from the header (ExtractJpegShape).
Status jpeg_shape(std::string_view bytes, int64_t* height, int64_t* width, int64_t* channels);

struct JpegEncodeOptions {
  int quality = 95;
  bool progressive = false;
  bool optimize_size = false;
  bool chroma_downsampling = true;
  int density_unit = 1;  // JFIF: 1 dots per inch, 2 per cm
  int x_density = 300, y_density = 300;
  std::string xmp_metadata;  // written as an APP1 XMP packet when not empty
};
/// `pixels` is [height, width, channels] with 1 (grayscale) or 3 (RGB) channels.
Status encode_jpeg(const uint8_t* pixels, int64_t height, int64_t width, int channels,
                   const JpegEncodeOptions& options, std::string* out);

/// channels 0 (the file's), 1, 2 (gray + alpha), 3 or 4. 8-bit samples (16-bit files keep their high
/// byte), or with `sixteen_bits` native-endian uint16 samples (8-bit files widened: v * 257).
Status decode_png(std::string_view bytes, int channels, bool sixteen_bits, Image* out);
/// `pixels` is [height, width, channels], 1 to 4 channels; compression -1 (zlib's default) to 9.
Status encode_png(const uint8_t* pixels, int64_t height, int64_t width, int channels, int compression,
                  std::string* out);

/// Every frame (or only the first), composed on the logical screen as TensorFlow's gif_io:
/// [frames, height, width, 3]. Every frame is read and checked either way.
Status decode_gif(std::string_view bytes, bool all_frames, Image* out);

/// Uncompressed 8-, 24- or 32-bit BMP; channels 0 (the file's) or equal to the file's.
Status decode_bmp(std::string_view bytes, int channels, Image* out);

}  // namespace ember::codecs
