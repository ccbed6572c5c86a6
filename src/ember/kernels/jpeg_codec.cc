// JPEG decoding and encoding on libjpeg-turbo with TensorFlow's semantics (its lib/jpeg/jpeg_mem.cc): the
// same source manager (a truncated file is an error, or with try_recover_truncated gets one fake EOI
// marker), the same DCT default (fast integer), CMYK converted to RGB as TensorFlow converts it, and the same
// acceptance rule for partly read images. Same library, same settings: the pixels are TensorFlow's, bit for
// bit.
//
// Note [libjpeg errors and longjmp]
// libjpeg reports a fatal error by calling error_exit, which must not return. Ours longjmps back to the
// setjmp in the function that drives the library. A longjmp that skips a C++ destructor is undefined, so
// those functions (decode_jpeg_low, jpeg_shape_low, encode_jpeg_low) hold nothing with a destructor: every
// buffer lives in a job struct owned by their caller, which frees it whatever happened, and the libjpeg
// object is destroyed on both paths. State written after setjmp and read after the jump lives in that
// struct (memory, not registers), so it needs no volatile.
// jpeglib.h needs size_t and FILE declared before it.
#include <cstddef>
#include <cstdio>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <memory>

#include "ember/kernels/image_codecs.h"

namespace ember::codecs {
namespace {

// libjpeg's memory ceiling: progressive files keep every coefficient in memory, twice the pixels' size.
constexpr long kMaxJpegLibraryMemory = 2 * kMaxImageBytes + (64l << 20);

struct ErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void no_output(j_common_ptr) {}  // warnings are counted, not printed

// Points the library object (a jpeg_decompress_struct or jpeg_compress_struct) at our error manager.
template <typename LibraryObject>
void attach_errors(LibraryObject* cinfo, ErrorManager* err) {
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = error_exit;
  err->pub.output_message = no_output;
  err->message[0] = '\0';
}

// The source manager over the bytes in memory (Note [libjpeg errors and longjmp] for why failures jump),
// with TensorFlow's rules so that damaged files decode to TensorFlow's pixels: the whole file is the first
// buffer; a call for more with bytes_in_buffer not 0 (the library's marker readers keep their own copy of
// the count, so it is stale) "suspends" (returns FALSE: the read stops there), or when recovering returns
// TRUE, so the library reads the stale bytes again; at the end, recovering gives a fake end marker, else
// it is an error. TensorFlow's rules alone can loop for ever (a segment claiming more bytes than the file
// has, read again and again): here the bytes handed out again are limited to the file's size plus 64 KiB,
// past which the file is an error.
struct MemorySource {
  jpeg_source_mgr pub;  // first
  const JOCTET* data;
  size_t size;
  bool try_recover_truncated;
  size_t handed_again;  // bytes given again by refills (stale counts and fake markers)
};

constexpr JOCTET kFakeEoi[2] = {0xff, JPEG_EOI};

void init_source(j_decompress_ptr cinfo) {
  auto* src = reinterpret_cast<MemorySource*>(cinfo->src);
  src->pub.next_input_byte = src->data;
  src->pub.bytes_in_buffer = src->size;
}

boolean fill_input_buffer(j_decompress_ptr cinfo) {
  auto* src = reinterpret_cast<MemorySource*>(cinfo->src);
  src->handed_again += src->pub.bytes_in_buffer + 2;
  if (src->handed_again > src->size + (64 << 10)) ERREXIT(cinfo, JERR_FILE_READ);
  if (src->pub.bytes_in_buffer == 0 && src->pub.next_input_byte == src->data)
    ERREXIT(cinfo, JERR_INPUT_EMPTY);
  if (src->pub.bytes_in_buffer != 0) return src->try_recover_truncated ? TRUE : FALSE;
  if (src->pub.next_input_byte != kFakeEoi && src->try_recover_truncated) {
    WARNMS(cinfo, JWRN_JPEG_EOF);
    src->pub.next_input_byte = kFakeEoi;
    src->pub.bytes_in_buffer = 2;
    return TRUE;
  }
  ERREXIT(cinfo, JERR_FILE_READ);
  return FALSE;
}

void skip_input_data(j_decompress_ptr cinfo, long count) {
  auto* src = reinterpret_cast<MemorySource*>(cinfo->src);
  if (count < 0) return;
  if (static_cast<size_t>(count) > src->pub.bytes_in_buffer) {
    src->pub.bytes_in_buffer = 0;
    (void)fill_input_buffer(cinfo);
  } else {
    src->pub.bytes_in_buffer -= count;
    src->pub.next_input_byte += count;
  }
}

void term_source(j_decompress_ptr) {}

void set_source(j_decompress_ptr cinfo, MemorySource* src, std::string_view bytes, bool try_recover) {
  src->pub.init_source = init_source;
  src->pub.fill_input_buffer = fill_input_buffer;
  src->pub.skip_input_data = skip_input_data;
  src->pub.resync_to_restart = jpeg_resync_to_restart;
  src->pub.term_source = term_source;
  src->pub.bytes_in_buffer = 0;
  src->pub.next_input_byte = nullptr;
  src->data = reinterpret_cast<const JOCTET*>(bytes.data());
  src->size = bytes.size();
  src->try_recover_truncated = try_recover;
  src->handed_again = 0;
  cinfo->src = &src->pub;
}

// Everything decode_jpeg_low writes that outlives a longjmp (Note [libjpeg errors and longjmp]).
struct DecodeJob {
  std::string_view bytes;
  JpegDecodeOptions options;
  ErrorManager err;
  MemorySource src;
  jpeg_decompress_struct cinfo;
  std::vector<JSAMPLE> row;  // one library row: CMYK, or a crop not on an MCU boundary
  Image* image = nullptr;
  int64_t rows_wanted = 0, rows_read = 0;
  std::string problem;  // a refusal decided here rather than by the library
};

// Returns false with job->problem or job->err.message set. Only trivially destructible locals.
bool decode_jpeg_low(DecodeJob* job) {
  jpeg_decompress_struct* cinfo = &job->cinfo;
  const JpegDecodeOptions& opt = job->options;
  attach_errors(cinfo, &job->err);
  if (setjmp(job->err.jump)) {
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  jpeg_create_decompress(cinfo);
  cinfo->mem->max_memory_to_use = kMaxJpegLibraryMemory;
  set_source(cinfo, &job->src, job->bytes, opt.try_recover_truncated);
  jpeg_read_header(cinfo, TRUE);
  const int channels = opt.channels == 0 ? std::min(cinfo->num_components, 3) : opt.channels;
  const bool cmyk =
      channels == 3 && (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK);
  cinfo->out_color_space = channels == 1 ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_RGB;
  cinfo->do_fancy_upsampling = opt.fancy_upscaling ? TRUE : FALSE;
  cinfo->scale_num = 1;
  cinfo->scale_denom = opt.ratio;
  cinfo->dct_method = opt.integer_accurate_dct ? JDCT_ISLOW : JDCT_IFAST;
  jpeg_calc_output_dimensions(cinfo);
  const int64_t size = int64_t{cinfo->output_width} * cinfo->output_height * cinfo->num_components;
  if (cinfo->output_width == 0 || cinfo->output_height == 0 || size >= kMaxImageBytes) {
    job->problem = "image of " + std::to_string(cinfo->output_height) + " x " +
                   std::to_string(cinfo->output_width) + " x " + std::to_string(cinfo->num_components) +
                   " is empty or larger than 2^29 bytes";
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  jpeg_start_decompress(cinfo);
  JDIMENSION out_width = cinfo->output_width, out_height = cinfo->output_height, skipped = 0;
  if (opt.crop) {
    if (opt.crop_width <= 0 || opt.crop_height <= 0 || opt.crop_x < 0 || opt.crop_y < 0 ||
        opt.crop_x + opt.crop_width > cinfo->output_width ||
        opt.crop_y + opt.crop_height > cinfo->output_height) {
      job->problem = "crop window [y=" + std::to_string(opt.crop_y) + ", x=" + std::to_string(opt.crop_x) +
                     ", height=" + std::to_string(opt.crop_height) +
                     ", width=" + std::to_string(opt.crop_width) + "] is empty or outside the " +
                     std::to_string(cinfo->output_height) + " x " + std::to_string(cinfo->output_width) +
                     " image";
      jpeg_destroy_decompress(cinfo);
      return false;
    }
    out_width = static_cast<JDIMENSION>(opt.crop_width);
    out_height = static_cast<JDIMENSION>(opt.crop_height);
    // The library moves the window's left edge down to an MCU boundary and widens it to match.
    JDIMENSION x = static_cast<JDIMENSION>(opt.crop_x), width = out_width;
    jpeg_crop_scanline(cinfo, &x, &width);
    skipped = jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(opt.crop_y));
  }
  Image* image = job->image;
  image->height = out_height;
  image->width = out_width;
  image->channels = channels;
  image->pixels.assign(static_cast<size_t>(out_height) * out_width * channels, 0);
  const size_t stride = static_cast<size_t>(out_width) * channels;
  const size_t library_channels = cmyk ? 4 : channels;
  const size_t shift = (cinfo->output_width - out_width) * library_channels;  // crop realignment
  const bool via_row = cmyk || cinfo->output_width != out_width;
  if (via_row) job->row.resize(static_cast<size_t>(cinfo->output_width) * library_channels);
  job->rows_wanted = out_height;
  job->rows_read = out_height;
  const JDIMENSION last = skipped + out_height;
  JSAMPLE* line = image->pixels.data();
  while (cinfo->output_scanline < last) {
    JSAMPROW target = via_row ? job->row.data() : line;
    if (jpeg_read_scanlines(cinfo, &target, 1) == 0) {
      if (!opt.try_recover_truncated) {
        job->rows_read = cinfo->output_scanline - skipped;
        break;
      }
      // Recovering: rows not read repeat the one above (black when there is none).
      for (JDIMENSION y = cinfo->output_scanline; y < last; ++y, line += stride) {
        if (y == 0) {
          std::memset(line, 0, stride);
        } else {
          std::memcpy(line, line - stride, stride);
        }
      }
      cinfo->output_scanline = last;
      break;
    }
    if (cmyk) {
      const JSAMPLE* p = job->row.data() + shift;
      for (JDIMENSION x = 0; x < out_width; ++x, p += 4) {
        const int c = p[0], m = p[1], yel = p[2], k = p[3];
        // Adobe's files store CMYK inverted.
        line[3 * x + 0] = cinfo->saw_Adobe_marker ? k * c / 255 : (255 - k) * (255 - c) / 255;
        line[3 * x + 1] = cinfo->saw_Adobe_marker ? k * m / 255 : (255 - k) * (255 - m) / 255;
        line[3 * x + 2] = cinfo->saw_Adobe_marker ? k * yel / 255 : (255 - k) * (255 - yel) / 255;
      }
    } else if (via_row) {
      std::memcpy(line, job->row.data() + shift, stride);
    }
    line += stride;
  }
  if (opt.crop && cinfo->output_scanline < cinfo->output_height)
    jpeg_skip_scanlines(cinfo, cinfo->output_height - cinfo->output_scanline);
  const int expected_components = cmyk ? 4 : channels;
  if (cinfo->output_components != expected_components) {
    job->problem = "the library gave " + std::to_string(cinfo->output_components) + " components, not " +
                   std::to_string(expected_components);
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  if (job->rows_read == out_height) {
    jpeg_finish_decompress(cinfo);
  } else {
    jpeg_abort(reinterpret_cast<j_common_ptr>(cinfo));
  }
  jpeg_destroy_decompress(cinfo);
  return true;
}

struct ShapeJob {
  std::string_view bytes;
  ErrorManager err;
  MemorySource src;
  jpeg_decompress_struct cinfo;
  int64_t height = 0, width = 0, channels = 0;
};

bool jpeg_shape_low(ShapeJob* job) {
  jpeg_decompress_struct* cinfo = &job->cinfo;
  attach_errors(cinfo, &job->err);
  if (setjmp(job->err.jump)) {
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  jpeg_create_decompress(cinfo);
  set_source(cinfo, &job->src, job->bytes, false);
  jpeg_read_header(cinfo, TRUE);
  jpeg_calc_output_dimensions(cinfo);  // the output size without allocating the decoder's buffers
  job->height = cinfo->output_height;
  job->width = cinfo->output_width;
  job->channels = cinfo->output_components;
  jpeg_destroy_decompress(cinfo);
  return true;
}

// The destination manager appends to a std::string through a fixed buffer.
struct StringDestination {
  jpeg_destination_mgr pub;  // first
  std::string* out;
  JOCTET buffer[1 << 14];
};

void init_destination(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<StringDestination*>(cinfo->dest);
  dest->pub.next_output_byte = dest->buffer;
  dest->pub.free_in_buffer = sizeof(dest->buffer);
}

boolean empty_output_buffer(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<StringDestination*>(cinfo->dest);
  dest->out->append(reinterpret_cast<const char*>(dest->buffer), sizeof(dest->buffer));
  init_destination(cinfo);
  return TRUE;
}

void term_destination(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<StringDestination*>(cinfo->dest);
  dest->out->append(reinterpret_cast<const char*>(dest->buffer),
                    sizeof(dest->buffer) - dest->pub.free_in_buffer);
}

struct EncodeJob {
  const uint8_t* pixels;
  int64_t height, width;
  int channels;
  JpegEncodeOptions options;
  ErrorManager err;
  StringDestination dest;
  jpeg_compress_struct cinfo;
  std::string xmp_packet;
};

bool encode_jpeg_low(EncodeJob* job) {
  jpeg_compress_struct* cinfo = &job->cinfo;
  const JpegEncodeOptions& opt = job->options;
  attach_errors(cinfo, &job->err);
  if (setjmp(job->err.jump)) {
    jpeg_destroy_compress(cinfo);
    return false;
  }
  jpeg_create_compress(cinfo);
  job->dest.pub.init_destination = init_destination;
  job->dest.pub.empty_output_buffer = empty_output_buffer;
  job->dest.pub.term_destination = term_destination;
  cinfo->dest = &job->dest.pub;
  cinfo->image_width = static_cast<JDIMENSION>(job->width);
  cinfo->image_height = static_cast<JDIMENSION>(job->height);
  cinfo->input_components = job->channels;
  cinfo->in_color_space = job->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(cinfo);
  if (opt.optimize_size) cinfo->optimize_coding = TRUE;
  cinfo->density_unit = static_cast<UINT8>(opt.density_unit);
  cinfo->X_density = static_cast<UINT16>(opt.x_density);
  cinfo->Y_density = static_cast<UINT16>(opt.y_density);
  jpeg_set_quality(cinfo, opt.quality, TRUE);
  if (opt.progressive) jpeg_simple_progression(cinfo);
  if (!opt.chroma_downsampling) {
    for (int i = 0; i < cinfo->num_components; ++i) {
      cinfo->comp_info[i].h_samp_factor = 1;
      cinfo->comp_info[i].v_samp_factor = 1;
    }
  }
  jpeg_start_compress(cinfo, TRUE);
  if (!job->xmp_packet.empty())
    jpeg_write_marker(cinfo, JPEG_APP0 + 1, reinterpret_cast<const JOCTET*>(job->xmp_packet.data()),
                      static_cast<unsigned>(job->xmp_packet.size()));
  const size_t stride = static_cast<size_t>(job->width) * job->channels;
  while (cinfo->next_scanline < cinfo->image_height) {
    JSAMPROW row = const_cast<JSAMPLE*>(job->pixels + cinfo->next_scanline * stride);
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
  jpeg_destroy_compress(cinfo);
  return true;
}

std::string library_message(const ErrorManager& err) {
  return err.message[0] ? std::string(": ") + err.message : std::string();
}

}  // namespace

Status decode_jpeg(std::string_view bytes, const JpegDecodeOptions& options, Image* out) {
  if (bytes.empty()) return invalid_argument("Input is empty.");
  auto job = std::make_unique<DecodeJob>();
  job->bytes = bytes;
  job->options = options;
  job->image = out;
  *out = Image();
  if (!decode_jpeg_low(job.get())) {
    const std::string why = job->problem.empty() ? library_message(job->err) : ": " + job->problem;
    return invalid_argument("Invalid JPEG data or crop window, data size ", bytes.size(), why);
  }
  // TensorFlow's rule for a file cut short: enough rows read, the rest black.
  const float fraction = job->rows_wanted == 0 ? 1.0f : static_cast<float>(job->rows_read) / job->rows_wanted;
  if (fraction < std::min(1.0f, options.acceptable_fraction))
    return invalid_argument("Invalid JPEG data or crop window, data size ", bytes.size(), ": only ",
                            job->rows_read, " of ", job->rows_wanted, " rows could be read");
  return Status::OK();
}

Status jpeg_shape(std::string_view bytes, int64_t* height, int64_t* width, int64_t* channels) {
  auto job = std::make_unique<ShapeJob>();
  job->bytes = bytes;
  if (bytes.empty() || !jpeg_shape_low(job.get()))
    return invalid_argument("Invalid JPEG data, size ", bytes.size(), library_message(job->err));
  *height = job->height;
  *width = job->width;
  *channels = job->channels;
  return Status::OK();
}

Status encode_jpeg(const uint8_t* pixels, int64_t height, int64_t width, int channels,
                   const JpegEncodeOptions& options, std::string* out) {
  out->clear();
  if (height <= 0 || width <= 0 || height * width >= kMaxImageBytes || height > JPEG_MAX_DIMENSION ||
      width > JPEG_MAX_DIMENSION)
    return make_error(Code::kInternal, "JPEG encoding failed: a ", height, " x ", width,
                      " image is empty or too large for JPEG");
  auto job = std::make_unique<EncodeJob>();
  job->pixels = pixels;
  job->height = height;
  job->width = width;
  job->channels = channels;
  job->options = options;
  job->dest.out = out;
  if (!options.xmp_metadata.empty()) {
    // XMP's APP1 packet: the namespace, NUL-terminated, then the metadata.
    job->xmp_packet = std::string("http://ns.adobe.com/xap/1.0/") + '\0' + options.xmp_metadata;
    if (job->xmp_packet.size() > 65533)
      return invalid_argument("xmp_metadata of ", options.xmp_metadata.size(),
                              " bytes does not fit in a JPEG marker segment (65504 at most)");
  }
  if (!encode_jpeg_low(job.get())) {
    out->clear();
    return make_error(Code::kInternal, "JPEG encoding failed", library_message(job->err));
  }
  return Status::OK();
}

}  // namespace ember::codecs
