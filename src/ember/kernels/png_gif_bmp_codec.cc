// PNG (libpng), GIF (giflib) and BMP (read here) with TensorFlow's semantics: its png_io.cc's channel and
// bit-depth conversions, its gif_io.cc's composition of frames on the logical screen, its decode_image_op's
// BMP reader. libpng reports fatal errors by longjmp like libjpeg (Note [libjpeg errors and longjmp] in
// jpeg_codec.cc: the same discipline here, every buffer owned outside the setjmp frame). giflib returns
// error codes; its frames are read one record at a time so that each frame's size is checked before its
// raster is allocated (DGifSlurp would allocate whatever a descriptor claims).
#include <gif_lib.h>
#include <png.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ember/kernels/image_codecs.h"

namespace ember::codecs {

ImageFormat classify_image(std::string_view b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (starts("\xff\xd8\xff")) return ImageFormat::kJpeg;
  if (starts("\x89PNG\r\n\x1a\n")) return ImageFormat::kPng;
  if (starts("GIF8")) return ImageFormat::kGif;
  if (starts("BM")) return ImageFormat::kBmp;
  return ImageFormat::kUnknown;
}

const char* format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kGif:
      return "GIF";
    case ImageFormat::kBmp:
      return "BMP";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

namespace {

// ---- PNG

struct PngJob {
  std::string_view bytes;
  size_t offset = 0;
  int channels = 0;  // asked for; then the output's
  bool sixteen_bits = false;
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::string message;
  std::vector<png_bytep> rows;
  Image* image = nullptr;
};

void png_error_fn(png_structp png, png_const_charp message) {
  auto* job = static_cast<PngJob*>(png_get_error_ptr(png));
  job->message = message;
  png_longjmp(png, 1);
}

void png_warning_fn(png_structp, png_const_charp) {}

void png_read_fn(png_structp png, png_bytep out, png_size_t count) {
  auto* job = static_cast<PngJob*>(png_get_io_ptr(png));
  if (count > job->bytes.size() - job->offset) png_error(png, "the file ends early");
  std::memcpy(out, job->bytes.data() + job->offset, count);
  job->offset += count;
}

// Returns false with job->message set. Only trivially destructible locals (Note [libjpeg errors and
// longjmp]).
bool decode_png_low(PngJob* job) {
  job->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, job, png_error_fn, png_warning_fn);
  if (job->png == nullptr) {
    job->message = "the PNG library could not start";
    return false;
  }
  job->info = png_create_info_struct(job->png);
  if (setjmp(png_jmpbuf(job->png))) {
    png_destroy_read_struct(&job->png, &job->info, nullptr);
    return false;
  }
  if (job->info == nullptr) png_error(job->png, "the PNG library could not start");
  png_set_read_fn(job->png, job, png_read_fn);
  png_read_info(job->png, job->info);
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
  png_get_IHDR(job->png, job->info, &width, &height, &bit_depth, &color_type, nullptr, nullptr, nullptr);
  const bool has_trns = png_get_valid(job->png, job->info, PNG_INFO_tRNS) != 0;
  int channels = job->channels;
  if (channels == 0)
    channels =
        color_type == PNG_COLOR_TYPE_PALETTE ? (has_trns ? 4 : 3) : png_get_channels(job->png, job->info);
  const int sample_bytes = job->sixteen_bits ? 2 : 1;
  const int64_t pixels = int64_t{width} * height;
  if (width >= (1u << 27) || height >= (1u << 27) || pixels >= kMaxImageBytes ||
      pixels * channels * sample_bytes >= 2 * kMaxImageBytes) {
    job->message = "PNG size too large for int: " + std::to_string(width) + " by " + std::to_string(height);
    png_destroy_read_struct(&job->png, &job->info, nullptr);
    return false;
  }
  // TensorFlow's conversions: alpha added, expanded from tRNS or stripped; 16 bits stripped to 8 or 8
  // widened to 16 (below, after reading); palettes and small gray depths expanded; RGB to gray by Rec. 601.
  const bool has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0;
  if (channels % 2 == 0) {
    if (!has_alpha && has_trns) {
      png_set_tRNS_to_alpha(job->png);
    } else if (!has_alpha) {
      png_set_add_alpha(job->png, (1 << bit_depth) - 1, PNG_FILLER_AFTER);
    }
  } else if (has_alpha || has_trns) {
    png_set_strip_alpha(job->png);
  }
  if (bit_depth > 8 && !job->sixteen_bits) png_set_strip_16(job->png);
  png_set_packing(job->png);
  const int passes = png_set_interlace_handling(job->png);
  if (job->sixteen_bits) png_set_swap(job->png);  // PNG is big-endian, ember's uint16 little-endian
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(job->png);
  const bool is_gray = (color_type & PNG_COLOR_MASK_COLOR) == 0;
  if (is_gray && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(job->png);
  if (channels < 3 && !is_gray) png_set_rgb_to_gray(job->png, 1, 0.299, 0.587);
  if (channels >= 3 && is_gray) png_set_gray_to_rgb(job->png);
  png_read_update_info(job->png, job->info);
  const size_t stride = size_t{width} * channels * sample_bytes;
  // Files of 8 bits or fewer read as 8 bits even when 16 are asked for; widened after reading.
  const size_t read_stride = png_get_rowbytes(job->png, job->info);
  if (read_stride > stride || png_get_channels(job->png, job->info) != channels) {
    job->message = "the decoded rows are " + std::to_string(read_stride) + " bytes, expected at most " +
                   std::to_string(stride);
    png_destroy_read_struct(&job->png, &job->info, nullptr);
    return false;
  }
  Image* image = job->image;
  image->height = height;
  image->width = width;
  image->channels = channels;
  image->pixels.assign(stride * height, 0);
  job->rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) job->rows[y] = image->pixels.data() + y * stride;
  for (int pass = 0; pass < passes; ++pass)
    for (png_uint_32 y = 0; y < height; ++y) png_read_row(job->png, job->rows[y], nullptr);
  png_read_end(job->png, nullptr);
  if (job->sixteen_bits && bit_depth <= 8) {
    // Each 8-bit sample v becomes the 16-bit v * 257, from the row's end backwards (in place).
    for (png_uint_32 y = 0; y < height; ++y) {
      uint8_t* row = job->rows[y];
      for (size_t i = size_t{width} * channels; i-- > 0;) {
        const uint16_t wide = static_cast<uint16_t>(row[i] * 257);
        std::memcpy(row + 2 * i, &wide, 2);
      }
    }
  }
  png_destroy_read_struct(&job->png, &job->info, nullptr);
  return true;
}

struct PngWriteJob {
  const uint8_t* pixels = nullptr;
  int64_t height = 0, width = 0;
  int channels = 0, compression = -1;
  std::string* out = nullptr;
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::string message;
};

void png_write_fn(png_structp png, png_bytep data, png_size_t count) {
  auto* job = static_cast<PngWriteJob*>(png_get_io_ptr(png));
  job->out->append(reinterpret_cast<const char*>(data), count);
}

void png_flush_fn(png_structp) {}

void png_write_error_fn(png_structp png, png_const_charp message) {
  static_cast<PngWriteJob*>(png_get_error_ptr(png))->message = message;
  png_longjmp(png, 1);
}

bool encode_png_low(PngWriteJob* job) {
  job->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, job, png_write_error_fn, png_warning_fn);
  if (job->png == nullptr) return false;
  job->info = png_create_info_struct(job->png);
  if (setjmp(png_jmpbuf(job->png))) {
    png_destroy_write_struct(&job->png, &job->info);
    return false;
  }
  if (job->info == nullptr) png_error(job->png, "the PNG library could not start");
  static constexpr int kColorTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                        PNG_COLOR_TYPE_RGB_ALPHA};
  png_set_write_fn(job->png, job, png_write_fn, png_flush_fn);
  png_set_compression_level(job->png, job->compression);
  png_set_IHDR(job->png, job->info, static_cast<png_uint_32>(job->width),
               static_cast<png_uint_32>(job->height), 8, kColorTypes[job->channels - 1], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(job->png, job->info);
  const size_t stride = static_cast<size_t>(job->width) * job->channels;
  for (int64_t y = 0; y < job->height; ++y) png_write_row(job->png, job->pixels + y * stride);
  png_write_end(job->png, nullptr);
  png_destroy_write_struct(&job->png, &job->info);
  return true;
}

// ---- GIF

struct GifInput {
  std::string_view bytes;
  size_t offset = 0;
};

int gif_read_fn(GifFileType* gif, GifByteType* out, int count) {
  auto* in = static_cast<GifInput*>(gif->UserData);
  const size_t n = std::min<size_t>(count < 0 ? 0 : count, in->bytes.size() - in->offset);
  std::memcpy(out, in->bytes.data() + in->offset, n);
  in->offset += n;
  return static_cast<int>(n);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};

// One frame as read: its place on the screen, raster (one colour index per pixel), colour map and the
// transparent index of its Graphics Control Extension (-1: none).
struct GifFrame {
  int left = 0, top = 0, width = 0, height = 0;
  // Not zero-filled: a descriptor may claim far more pixels than the file holds, and untouched pages of
  // a large allocation cost nothing; every pixel is written before the frame is used.
  std::unique_ptr<GifByteType[]> raster;
  std::vector<GifColorType> colors;  // the frame's own map, else the screen's
  int transparent = -1;
};

Status gif_failure(const char* what, int code) {
  const char* reason = GifErrorString(code);
  return invalid_argument(what, reason ? reason : "unknown error");
}

// Reads every frame record by record, as DGifSlurp does (each frame takes the first Graphics Control
// Extension before it), but checking each frame's size before allocating its raster. A file that fails
// part way keeps the frames read whole, as TensorFlow keeps what its DGifSlurp read, unless there are none;
// the frame being read is dropped. (TensorFlow's gif_io.cc names D_GIF_ERR_EOF_TOO_SOON as fatal too, but
// with its giflib a frame whose LZW data ends early is dropped like any other:
// tests/fuzz/test_image_fuzz.py.)
Status read_gif_frames(GifFileType* gif, std::vector<GifFrame>* frames) {
  int pending_transparent = -1;
  bool pending_gcb = false;
  int error = D_GIF_SUCCEEDED;
  GifRecordType record = UNDEFINED_RECORD_TYPE;
  while (error == D_GIF_SUCCEEDED && record != TERMINATE_RECORD_TYPE) {
    if (DGifGetRecordType(gif, &record) == GIF_ERROR) {
      error = gif->Error;
      break;
    }
    if (record == IMAGE_DESC_RECORD_TYPE) {
      if (DGifGetImageDesc(gif) == GIF_ERROR) {
        error = gif->Error;
        break;
      }
      const GifImageDesc& desc = gif->Image;
      if (desc.Width <= 0 || desc.Height <= 0 || int64_t{desc.Width} * desc.Height > kMaxImageBytes / 3)
        return invalid_argument("frame ", frames->size(), " of ", desc.Width, " x ", desc.Height,
                                " is empty or exceeds 2^29 bytes of output");
      GifFrame frame;
      frame.left = desc.Left;
      frame.top = desc.Top;
      frame.width = desc.Width;
      frame.height = desc.Height;
      const ColorMapObject* map = desc.ColorMap ? desc.ColorMap : gif->SColorMap;
      if (map != nullptr) frame.colors.assign(map->Colors, map->Colors + map->ColorCount);
      frame.raster.reset(new GifByteType[size_t(desc.Width) * desc.Height]);
      // Row by row in file order (DGifSlurp's reading): an interlaced frame's four passes are rows 0, 8, ...;
      // 4, 12, ...; 2, 6, ...; then the odd rows.
      std::vector<int> rows;
      static constexpr int kStart[] = {0, 4, 2, 1}, kStep[] = {8, 8, 4, 2};
      for (int pass = 0; pass < (desc.Interlace ? 4 : 1); ++pass)
        for (int y = desc.Interlace ? kStart[pass] : 0; y < desc.Height;
             y += desc.Interlace ? kStep[pass] : 1)
          rows.push_back(y);
      for (size_t i = 0; i < rows.size() && error == D_GIF_SUCCEEDED; ++i)
        if (DGifGetLine(gif, frame.raster.get() + size_t(rows[i]) * desc.Width, desc.Width) == GIF_ERROR)
          error = gif->Error;
      if (error != D_GIF_SUCCEEDED) break;
      frame.transparent = pending_transparent;
      pending_transparent = -1;
      pending_gcb = false;
      frames->push_back(std::move(frame));
    } else if (record == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* block = nullptr;
      if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) {
        error = gif->Error;
        break;
      }
      if (code == GRAPHICS_EXT_FUNC_CODE && block != nullptr && !pending_gcb) {
        pending_gcb = true;
        GraphicsControlBlock gcb;
        if (block[0] == 4 && DGifExtensionToGCB(block[0], block + 1, &gcb) == GIF_OK)
          pending_transparent = gcb.TransparentColor;
      }
      while (block != nullptr && error == D_GIF_SUCCEEDED)
        if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) error = gif->Error;
    }
  }
  if (error != D_GIF_SUCCEEDED && frames->empty()) return gif_failure("failed to slurp gif file: ", error);
  if (frames->empty()) return invalid_argument("gif file does not contain any image");
  return Status::OK();
}

}  // namespace

Status decode_png(std::string_view bytes, int channels, bool sixteen_bits, Image* out) {
  *out = Image();
  auto job = std::make_unique<PngJob>();
  job->bytes = bytes;
  job->channels = channels;
  job->sixteen_bits = sixteen_bits;
  job->image = out;
  if (!decode_png_low(job.get())) {
    *out = Image();
    return invalid_argument("Invalid PNG data, size ", bytes.size(), ": ", job->message);
  }
  return Status::OK();
}

Status encode_png(const uint8_t* pixels, int64_t height, int64_t width, int channels, int compression,
                  std::string* out) {
  out->clear();
  if (height <= 0 || width <= 0 || height >= (1 << 30) || width >= (1 << 30))
    return make_error(Code::kInternal, "PNG encoding failed: a ", height, " x ", width,
                      " image is empty or too large for PNG");
  auto job = std::make_unique<PngWriteJob>();
  job->pixels = pixels;
  job->height = height;
  job->width = width;
  job->channels = channels;
  job->compression = compression;
  job->out = out;
  if (!encode_png_low(job.get())) {
    out->clear();
    return make_error(Code::kInternal, "PNG encoding failed: ", job->message);
  }
  return Status::OK();
}

Status decode_gif(std::string_view bytes, bool all_frames, Image* out) {
  *out = Image();
  GifInput input{bytes};
  int error = 0;
  std::unique_ptr<GifFileType, GifCloser> gif(DGifOpen(&input, gif_read_fn, &error));
  if (!gif) return gif_failure("failed to open gif file: ", error);
  std::vector<GifFrame> frames;
  EMBER_RETURN_IF_ERROR(read_gif_frames(gif.get(), &frames));
  // TensorFlow's canvas is as large as the largest frame, not the logical screen.
  int64_t width = 0, height = 0;
  for (const GifFrame& f : frames) {
    width = std::max<int64_t>(width, f.width);
    height = std::max<int64_t>(height, f.height);
  }
  const int64_t channels = 3;
  const int64_t count = all_frames ? static_cast<int64_t>(frames.size()) : 1;
  if (count * height * width * channels >= kMaxImageBytes)
    return invalid_argument(count, " frames of ", height, " x ", width, " exceed 2^29 bytes");
  const size_t frame_bytes = static_cast<size_t>(width * height * channels);
  out->frames = count;
  out->height = height;
  out->width = width;
  out->channels = channels;
  out->pixels.assign(frame_bytes * count, 0);
  // Each frame starts as the one before (black for the first) and paints its rectangle, clipped to the
  // canvas; transparent pixels keep what is under them.
  for (int64_t k = 0; k < count; ++k) {
    uint8_t* canvas = out->pixels.data() + k * frame_bytes;
    if (k > 0) std::memcpy(canvas, canvas - frame_bytes, frame_bytes);
    const GifFrame& f = frames[k];
    if (f.colors.empty()) return invalid_argument("missing color map for frame ", k);
    const int64_t top = std::max(f.top, 0), left = std::max(f.left, 0);
    const int64_t bottom = std::min<int64_t>(int64_t{f.top} + f.height, height);
    const int64_t right = std::min<int64_t>(int64_t{f.left} + f.width, width);
    for (int64_t y = top; y < bottom; ++y)
      for (int64_t x = left; x < right; ++x) {
        const int index = f.raster[(y - f.top) * f.width + (x - f.left)];
        if (index == f.transparent) continue;
        if (index >= static_cast<int>(f.colors.size()))
          return invalid_argument("found color index ", index, " outside of color map range ",
                                  f.colors.size());
        uint8_t* p = canvas + (y * width + x) * channels;
        p[0] = f.colors[index].Red;
        p[1] = f.colors[index].Green;
        p[2] = f.colors[index].Blue;
      }
  }
  return Status::OK();
}

Status decode_bmp(std::string_view bytes, int channels, Image* out) {
  *out = Image();
  if (bytes.size() < 32)
    return invalid_argument(
        "Incomplete bmp content, requires at least 32 bytes to find the header size, width, "
        "height, and bpp, got ",
        bytes.size(), " bytes");
  auto le = [&](size_t at, int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint32_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
    return v;
  };
  const int64_t data_offset = static_cast<int32_t>(le(10, 4));
  const int64_t width = static_cast<int32_t>(le(18, 4));
  const int64_t signed_height = static_cast<int32_t>(le(22, 4));
  const int bits = static_cast<int16_t>(le(28, 2));
  const int file_channels = bits / 8;
  if (file_channels != 1 && file_channels != 3 && file_channels != 4)
    return invalid_argument("Number of channels inherent in the image must be 1, 3 or 4, was ",
                            file_channels);
  const int out_channels = channels ? channels : file_channels;
  if (width <= 0) return invalid_argument("Width must be positive");
  if (signed_height == 0) return invalid_argument("Height must be nonzero");
  if (data_offset < 0) return invalid_argument("header size must be nonnegative");
  const int64_t height = std::abs(signed_height);
  if (width * height >= (int64_t{1} << 31) / 8)
    return invalid_argument("Total possible pixel bytes must be less than 2^30");
  if (width * height * out_channels >= kMaxImageBytes)
    return invalid_argument("a ", height, " x ", width, " x ", out_channels, " image exceeds 2^29 bytes");
  const int64_t row_bytes = (file_channels * width + 3) / 4 * 4;  // rows are padded to 4 bytes
  const int64_t size_difference = static_cast<int64_t>(bytes.size()) - data_offset - row_bytes * height;
  if (size_difference != 0)
    return invalid_argument(
        "Input size should match (header_size + row_size * abs_height) but they differ by ", size_difference);
  const bool top_down = signed_height < 0;
  out->height = height;
  out->width = width;
  out->channels = out_channels;
  out->pixels.resize(static_cast<size_t>(height * width * out_channels));
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data()) + data_offset;
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = data + (top_down ? y : height - 1 - y) * row_bytes;
    uint8_t* dst = out->pixels.data() + y * width * out_channels;
    for (int64_t x = 0; x < width; ++x, dst += out_channels) {
      const uint8_t* src = row + x * file_channels;
      // Stored BGR(A) or gray; written RGB(A), gray repeated, alpha opaque when the file has none.
      dst[0] = file_channels == 1 ? src[0] : src[2];
      if (out_channels >= 3) {
        dst[1] = file_channels == 1 ? src[0] : src[1];
        dst[2] = src[0];
      }
      if (out_channels == 4) dst[3] = file_channels == 4 ? src[3] : 255;
    }
  }
  return Status::OK();
}

}  // namespace ember::codecs
