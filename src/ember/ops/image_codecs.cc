// TensorFlow's image file ops: DecodeJpeg, DecodeAndCropJpeg, EncodeJpeg, EncodeJpegVariableQuality,
// ExtractJpegShape, DecodePng, EncodePng, DecodeGif, DecodeBmp and DecodeImage, over the codecs of
// kernels/image_codecs.h.
//
// As TensorFlow's one DecodeImageV2 kernel, every decode op reads the format from the magic bytes and
// decodes what it finds, within each op's rules: DecodeJpeg and DecodePng also read GIFs of one frame and
// each other's format, DecodeGif gives [frames, height, width, 3] of whatever it reads, DecodeBmp reads only
// BMP and DecodeAndCropJpeg only JPEG. A damaged file is an InvalidArgumentError naming the op.
//
// TensorFlow's uint16 outputs (DecodePng and DecodeImage dtype=uint16, EncodePng of uint16) are refused:
// ember has no uint16 dtype. DecodeImage's float32 is the 8-bit value / 255, or for PNG the 16-bit value /
// 65535, as TensorFlow computes it.
#include "ember/kernels/image_codecs.h"

#include <cstring>

#include "ember/ops/families.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

using codecs::Image;
using codecs::ImageFormat;

enum class DecodeOp { kJpeg, kAndCropJpeg, kPng, kGif, kBmp, kImage };

constexpr const char* op_name(DecodeOp op) {
  switch (op) {
    case DecodeOp::kJpeg:
      return "DecodeJpeg";
    case DecodeOp::kAndCropJpeg:
      return "DecodeAndCropJpeg";
    case DecodeOp::kPng:
      return "DecodePng";
    case DecodeOp::kGif:
      return "DecodeGif";
    case DecodeOp::kBmp:
      return "DecodeBmp";
    case DecodeOp::kImage:
      return "DecodeImage";
  }
  return "";
}

constexpr bool is_jpeg_op(DecodeOp op) { return op == DecodeOp::kJpeg || op == DecodeOp::kAndCropJpeg; }

// Attributes by op (their declaration order below): the JPEG ops' six, DecodePng's channels and dtype,
// DecodeBmp's channels, DecodeImage's channels, dtype and expand_animations; DecodeGif has none.
struct DecodeAttrs {
  int channels = 0;  // DecodeGif: 3
  DType dtype = DType::kUInt8;
  bool expand_animations = true;
  codecs::JpegDecodeOptions jpeg;
};

Status read_decode_attrs(const AttrReader& a, DecodeOp op, DecodeAttrs* out) {
  const char* name = op_name(op);
  out->channels = op == DecodeOp::kGif ? 3 : static_cast<int>(a.attr_int(0));
  if (out->channels != 0 && out->channels != 1 && out->channels != 3 && out->channels != 4)
    return invalid_argument(name, ": `channels` must be 0, 1, 3 or 4 but got ", a.attr_int(0));
  if (is_jpeg_op(op)) {
    const int64_t ratio = a.attr_int(1);
    if (ratio != 1 && ratio != 2 && ratio != 4 && ratio != 8)
      return invalid_argument(name, ": ratio must be 1, 2, 4, or 8, got ", ratio);
    const std::string& dct = a.attr_string(5);
    if (!dct.empty() && dct != "INTEGER_FAST" && dct != "INTEGER_ACCURATE")
      return invalid_argument(
          name, ": dct_method must be one of {'', 'INTEGER_FAST', 'INTEGER_ACCURATE'}, got '", dct, "'");
    out->jpeg.ratio = static_cast<int>(ratio);
    out->jpeg.fancy_upscaling = a.attr_bool(2);
    out->jpeg.try_recover_truncated = a.attr_bool(3);
    out->jpeg.acceptable_fraction = static_cast<float>(a.attr_float(4));
    out->jpeg.integer_accurate_dct = dct == "INTEGER_ACCURATE";
  }
  if (op == DecodeOp::kPng || op == DecodeOp::kImage) {
    out->dtype = a.attr_dtype(1);
    const bool allowed =
        out->dtype == DType::kUInt8 || (op == DecodeOp::kImage && out->dtype == DType::kFloat32);
    if (!allowed)
      return invalid_argument(name, ": `dtype` must be uint8", op == DecodeOp::kImage ? " or float32" : "",
                              " (TensorFlow's uint16 too, a dtype ember does not have), got ",
                              dtype_name(out->dtype));
  }
  if (op == DecodeOp::kImage) out->expand_animations = a.attr_bool(2);
  return Status::OK();
}

Status check_scalar_contents(const Shape& shape, const char* name) {
  if (shape.rank_known() && shape.rank() != 0)
    return invalid_argument(name, ": `contents` must be scalar but got shape ", shape.to_string());
  return Status::OK();
}

template <DecodeOp kOp>
Status decode_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_scalar_contents(ctx.inputs[0].shape, op_name(kOp)));
  DecodeAttrs attrs;
  EMBER_RETURN_IF_ERROR(read_decode_attrs(ctx, kOp, &attrs));
  if (kOp == DecodeOp::kAndCropJpeg) {
    const Shape& window = ctx.inputs[1].shape;
    if (window.rank_known() && (window.rank() != 1 || (window.dim(0) != kUnknownDim && window.dim(0) != 4)))
      return invalid_argument("DecodeAndCropJpeg: crop_window must be a vector of four elements, got shape ",
                              window.to_string());
  }
  const int64_t channels = attrs.channels == 0 ? kUnknownDim : attrs.channels;
  Shape shape({kUnknownDim, kUnknownDim, channels});
  if (kOp == DecodeOp::kGif) shape = Shape({kUnknownDim, kUnknownDim, kUnknownDim, 3});
  if (kOp == DecodeOp::kImage && attrs.expand_animations)
    shape = Shape::unknown_rank();  // 3-D, or 4-D for a GIF
  ctx.outputs.push_back({attrs.dtype, shape});
  return Status::OK();
}

// TensorFlow's float conversion: the integer value times the float nearest 1 / max.
template <typename Sample>
void to_float(const Sample* in, size_t n, float* out, double max) {
  const float scale = static_cast<float>(1.0 / max);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]) * scale;
}

template <DecodeOp kOp>
Status decode_kernel(KernelContext& ctx) {
  const char* name = op_name(kOp);
  EMBER_RETURN_IF_ERROR(check_scalar_contents(ctx.input(0).shape(), name));
  DecodeAttrs attrs;
  EMBER_RETURN_IF_ERROR(read_decode_attrs(ctx, kOp, &attrs));
  const std::string& bytes = ctx.input(0).data<std::string>()[0];
  if (bytes.empty()) return invalid_argument(name, ": Input is empty.");
  const std::string prefix = std::string(name) + ": ";
  const ImageFormat format = codecs::classify_image(bytes);
  if (format == ImageFormat::kUnknown)
    return invalid_argument(name, ": Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
  if (kOp == DecodeOp::kAndCropJpeg && format != ImageFormat::kJpeg)
    return invalid_argument(name, ": DecodeAndCropJpeg operation can run on JPEG only, but detected ",
                            codecs::format_name(format), ".");
  if (kOp == DecodeOp::kBmp && format != ImageFormat::kBmp)
    return invalid_argument(name, ": Trying to decode ", codecs::format_name(format),
                            " format using DecodeBmp op. Use `decode_",
                            format == ImageFormat::kJpeg  ? "jpeg"
                            : format == ImageFormat::kPng ? "png"
                                                          : "gif",
                            "` or `decode_image` instead.");
  if (format == ImageFormat::kBmp && kOp != DecodeOp::kBmp && kOp != DecodeOp::kImage)
    return invalid_argument(name,
                            ": Trying to decode BMP format using a wrong op. Use `decode_bmp` or "
                            "`decode_image` instead. Op used: ",
                            name);
  Image image;
  bool png_sixteen_bits = false;
  switch (format) {
    case ImageFormat::kJpeg: {
      if (attrs.channels == 4) return invalid_argument(name, ": JPEG does not support 4 channels");
      codecs::JpegDecodeOptions options = attrs.jpeg;
      options.channels = attrs.channels;
      if (kOp == DecodeOp::kAndCropJpeg) {
        const TensorImpl& window = ctx.input(1);
        if (window.shape().rank() != 1 || window.shape().dim(0) != 4)
          return invalid_argument(name, ": crop_window must be a vector of four elements, got shape ",
                                  window.shape().to_string());
        const int32_t* w = window.data<int32_t>();
        options.crop = true;
        options.crop_y = w[0];
        options.crop_x = w[1];
        options.crop_height = w[2];
        options.crop_width = w[3];
      }
      EMBER_RETURN_IF_ERROR(codecs::decode_jpeg(bytes, options, &image).with_prefix(prefix));
      break;
    }
    case ImageFormat::kPng:
      png_sixteen_bits = attrs.dtype == DType::kFloat32;  // floats come from 16 bits, as TensorFlow's
      EMBER_RETURN_IF_ERROR(
          codecs::decode_png(bytes, attrs.channels, png_sixteen_bits, &image).with_prefix(prefix));
      break;
    case ImageFormat::kGif: {
      if (attrs.channels != 0 && attrs.channels != 3)
        return invalid_argument(name, ": channels must be 0 or 3 for GIF, got ", attrs.channels);
      EMBER_RETURN_IF_ERROR(
          codecs::decode_gif(bytes, attrs.expand_animations, &image)
              .with_prefix(prefix + "Invalid GIF data (size " + std::to_string(bytes.size()) + "), "));
      if ((kOp == DecodeOp::kJpeg || kOp == DecodeOp::kPng) && image.frames != 1)
        return invalid_argument(name, ": Got ", image.frames,
                                " frames, but animated gifs can only be decoded by tf.io.decode_gif or "
                                "tf.io.decode_image");
      break;
    }
    case ImageFormat::kBmp:
      if (attrs.channels == 1)
        return invalid_argument(name, ": `channels` must be 0, 3 or 4 for BMP, but got 1");
      EMBER_RETURN_IF_ERROR(codecs::decode_bmp(bytes, attrs.channels, &image).with_prefix(prefix));
      break;
    case ImageFormat::kUnknown:
      break;
  }
  const bool four_d = kOp == DecodeOp::kGif ||
                      (kOp == DecodeOp::kImage && format == ImageFormat::kGif && attrs.expand_animations);
  const Shape shape = four_d ? Shape({image.frames, image.height, image.width, image.channels})
                             : Shape({image.height, image.width, image.channels});
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, attrs.dtype, shape));
  const size_t n = static_cast<size_t>(image.frames * image.height * image.width * image.channels);
  if (attrs.dtype == DType::kUInt8) {
    if (n > 0) std::memcpy(ctx.output(0).mutable_data<uint8_t>(), image.pixels.data(), n);
  } else if (png_sixteen_bits) {
    std::vector<uint16_t> wide(n);
    if (n > 0) std::memcpy(wide.data(), image.pixels.data(), 2 * n);
    to_float(wide.data(), n, ctx.output(0).mutable_data<float>(), 65535.0);
  } else {
    to_float(image.pixels.data(), n, ctx.output(0).mutable_data<float>(), 255.0);
  }
  return Status::OK();
}

Status extract_jpeg_shape_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_scalar_contents(ctx.inputs[0].shape, "ExtractJpegShape"));
  const DType type = ctx.attr_dtype(0);
  if (type != DType::kInt32 && type != DType::kInt64)
    return invalid_argument("ExtractJpegShape: output_type must be int32 or int64, got ", dtype_name(type));
  ctx.outputs.push_back({type, Shape({3})});
  return Status::OK();
}

Status extract_jpeg_shape_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_scalar_contents(ctx.input(0).shape(), "ExtractJpegShape"));
  int64_t dims[3];
  EMBER_RETURN_IF_ERROR(codecs::jpeg_shape(ctx.input(0).data<std::string>()[0], &dims[0], &dims[1], &dims[2])
                            .with_prefix("ExtractJpegShape: "));
  for (int i = 0; i < 3; ++i) {
    if (ctx.attr_dtype(0) == DType::kInt32) {
      ctx.output(0).mutable_data<int32_t>()[i] = static_cast<int32_t>(dims[i]);
    } else {
      ctx.output(0).mutable_data<int64_t>()[i] = dims[i];
    }
  }
  return Status::OK();
}

// EncodeJpeg's attributes: format, quality, progressive, optimize_size, chroma_downsampling, density_unit,
// x_density, y_density, xmp_metadata.
Status read_encode_jpeg_attrs(const AttrReader& a, codecs::JpegEncodeOptions* out) {
  const std::string& format = a.attr_string(0);
  if (format != "" && format != "grayscale" && format != "rgb")
    return invalid_argument("EncodeJpeg: format must be one of \"\", \"grayscale\", \"rgb\", got \"", format,
                            "\"");
  const int64_t quality = a.attr_int(1);
  if (quality < 0 || quality > 100)
    return invalid_argument("EncodeJpeg: quality must be in [0,100], got ", quality);
  const std::string& unit = a.attr_string(5);
  if (unit != "in" && unit != "cm")
    return invalid_argument("EncodeJpeg: density_unit must be \"in\" or \"cm\", got \"", unit, "\"");
  for (int i : {6, 7})
    if (a.attr_int(i) < 0 || a.attr_int(i) > 65535)
      return invalid_argument("EncodeJpeg: ", i == 6 ? "x_density" : "y_density",
                              " must be in [0, 65535], got ", a.attr_int(i));
  out->quality = static_cast<int>(quality);
  out->progressive = a.attr_bool(2);
  out->optimize_size = a.attr_bool(3);
  out->chroma_downsampling = a.attr_bool(4);
  out->density_unit = unit == "in" ? 1 : 2;
  out->x_density = static_cast<int>(a.attr_int(6));
  out->y_density = static_cast<int>(a.attr_int(7));
  out->xmp_metadata = a.attr_string(8);
  return Status::OK();
}

// The channels `format` asks for (0: the image's), and a check of the image's channels against it.
Status encode_jpeg_channels(const AttrReader& a, const Shape& image, int64_t* channels) {
  const std::string& format = a.attr_string(0);
  const int64_t wanted = format == "grayscale" ? 1 : format == "rgb" ? 3 : 0;
  if (!image.rank_known()) return Status::OK();
  if (image.rank() != 3)
    return invalid_argument("EncodeJpeg: image must be 3-dimensional, got shape ", image.to_string());
  const int64_t c = image.dim(2);
  if (c == kUnknownDim) return Status::OK();
  if (wanted != 0 && c != wanted)
    return invalid_argument("EncodeJpeg: format ", format, " expects ", wanted, " channels, got ",
                            image.to_string());
  if (c != 1 && c != 3)
    return invalid_argument("EncodeJpeg: image must have 1 or 3 channels, got ", image.to_string());
  *channels = c;
  return Status::OK();
}

Status encode_jpeg_shape(InferContext& ctx) {
  codecs::JpegEncodeOptions options;
  EMBER_RETURN_IF_ERROR(read_encode_jpeg_attrs(ctx, &options));
  int64_t channels = 0;
  EMBER_RETURN_IF_ERROR(encode_jpeg_channels(ctx, ctx.inputs[0].shape, &channels));
  ctx.outputs.push_back({DType::kString, Shape()});
  return Status::OK();
}

Status encode_jpeg_kernel(KernelContext& ctx) {
  codecs::JpegEncodeOptions options;
  EMBER_RETURN_IF_ERROR(read_encode_jpeg_attrs(ctx, &options));
  const TensorImpl& image = ctx.input(0);
  int64_t channels = 0;
  EMBER_RETURN_IF_ERROR(encode_jpeg_channels(ctx, image.shape(), &channels));
  std::string out;
  EMBER_RETURN_IF_ERROR(codecs::encode_jpeg(image.data<uint8_t>(), image.shape().dim(0), image.shape().dim(1),
                                            static_cast<int>(channels), options, &out)
                            .with_prefix("EncodeJpeg: "));
  ctx.output(0).mutable_data<std::string>()[0] = std::move(out);
  return Status::OK();
}

// EncodeJpegVariableQuality(images, quality): EncodeJpeg with its default attributes and the quality an int32
// scalar input (tf.image.adjust_jpeg_quality), so that a quality computed in the graph can be used.
Status encode_jpeg_variable_quality_shape(InferContext& ctx) {
  const Shape &image = ctx.inputs[0].shape, &quality = ctx.inputs[1].shape;
  if (image.rank_known() && image.rank() != 3)
    return invalid_argument("EncodeJpegVariableQuality: image must be 3-dimensional, got shape ",
                            image.to_string());
  if (image.rank_known() && image.dim(2) != kUnknownDim && image.dim(2) != 1 && image.dim(2) != 3)
    return invalid_argument("EncodeJpegVariableQuality: image must have 1 or 3 channels, got ",
                            image.to_string());
  if (quality.rank_known() && quality.rank() != 0)
    return invalid_argument("EncodeJpegVariableQuality: quality must be a scalar, got shape ",
                            quality.to_string());
  ctx.outputs.push_back({DType::kString, Shape()});
  return Status::OK();
}

Status encode_jpeg_variable_quality_kernel(KernelContext& ctx) {
  const TensorImpl &image = ctx.input(0), &quality = ctx.input(1);
  if (image.rank() != 3 || (image.shape().dim(2) != 1 && image.shape().dim(2) != 3))
    return invalid_argument("EncodeJpegVariableQuality: image must be [height, width, 1 or 3], got shape ",
                            image.shape().to_string());
  if (quality.rank() != 0)
    return invalid_argument("EncodeJpegVariableQuality: quality must be a scalar, got shape ",
                            quality.shape().to_string());
  codecs::JpegEncodeOptions options;
  const int32_t q = quality.data<int32_t>()[0];
  if (q < 0 || q > 100)
    return invalid_argument("EncodeJpegVariableQuality: quality must be in [0,100], got ", q);
  options.quality = q;
  std::string out;
  EMBER_RETURN_IF_ERROR(codecs::encode_jpeg(image.data<uint8_t>(), image.shape().dim(0), image.shape().dim(1),
                                            static_cast<int>(image.shape().dim(2)), options, &out)
                            .with_prefix("EncodeJpegVariableQuality: "));
  ctx.output(0).mutable_data<std::string>()[0] = std::move(out);
  return Status::OK();
}

// EncodePng takes a batch: images [..., height, width, channels] give strings [...].
Status encode_png_check(const AttrReader& a, const Shape& image) {
  const int64_t compression = a.attr_int(0);
  if (compression < -1 || compression > 9)
    return invalid_argument("EncodePng: compression should be in [-1,9], got ", compression);
  if (!image.rank_known()) return Status::OK();
  if (image.rank() < 3)
    return invalid_argument("EncodePng: images must be at least rank 3, got shape ", image.to_string());
  const int64_t c = image.dim(image.rank() - 1);
  if (c != kUnknownDim && (c < 1 || c > 4))
    return invalid_argument("EncodePng: image must have 1, 2, 3, or 4 channels, got ", c);
  return Status::OK();
}

Status encode_png_shape(InferContext& ctx) {
  const Shape& image = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(encode_png_check(ctx, image));
  if (!image.rank_known()) {
    ctx.outputs.push_back({DType::kString, Shape::unknown_rank()});
    return Status::OK();
  }
  std::vector<int64_t> batch;
  for (int i = 0; i + 3 < image.rank(); ++i) batch.push_back(image.dim(i));
  ctx.outputs.push_back({DType::kString, Shape(batch)});
  return Status::OK();
}

Status encode_png_kernel(KernelContext& ctx) {
  const TensorImpl& image = ctx.input(0);
  const Shape& s = image.shape();
  EMBER_RETURN_IF_ERROR(encode_png_check(ctx, s));
  const int r = s.rank();
  const int64_t height = s.dim(r - 3), width = s.dim(r - 2), channels = s.dim(r - 1);
  const int64_t count = ctx.output(0).shape().num_elements();
  const size_t image_bytes = static_cast<size_t>(height * width * channels);
  std::string* out = ctx.output(0).mutable_data<std::string>();
  for (int64_t i = 0; i < count; ++i)
    EMBER_RETURN_IF_ERROR(
        codecs::encode_png(image.data<uint8_t>() + i * image_bytes, height, width, static_cast<int>(channels),
                           static_cast<int>(ctx.attr_int(0)), &out[i])
            .with_prefix("EncodePng: at flattened batch index " + std::to_string(i) + ": "));
  return Status::OK();
}

// The attributes the JPEG decode ops share, in TensorFlow's order.
OpBuilder jpeg_decode_attrs(OpBuilder b) {
  b.attr("channels", AttrType::kInt, int64_t{0})
      .attr("ratio", AttrType::kInt, int64_t{1})
      .attr("fancy_upscaling", AttrType::kBool, true)
      .attr("try_recover_truncated", AttrType::kBool, false)
      .attr("acceptable_fraction", AttrType::kFloat, 1.0)
      .attr("dct_method", AttrType::kString, std::string());
  return b;
}

}  // namespace

void register_image_codec_ops(OpRegistry& r) {
  constexpr DTypeSet kString = dtype_bit(DType::kString);
  constexpr DTypeSet kUInt8 = dtype_bit(DType::kUInt8);
  // Every decode op: one string in, pixels out, not differentiable, its output shape known only after
  // reading the file.
  auto decoder = [&](const char* name, const char* doc, bool crop_window = false) -> OpBuilder {
    OpBuilder b(name);
    b.input_fixed("contents", kString);
    if (crop_window) b.input_fixed("crop_window", dtype_bit(DType::kInt32));
    b.doc(doc)
        .output("image")
        .type_var(kString)
        .dispatch_on_input(0)
        .flags(kNotDifferentiable | kKernelAllocates)
        .batching(BatchingRule::kFallback);
    return b;
  };
  jpeg_decode_attrs(
      decoder("DecodeJpeg",
              "A JPEG file (a scalar string; also PNG or a one-frame GIF) as uint8 [height, width, "
              "channels]. decode_jpeg(encode_jpeg(zeros([2, 2, 3], uint8))).shape == [2, 2, 3]"))
      .shape(&decode_shape<DecodeOp::kJpeg>)
      .kernel(kString, &decode_kernel<DecodeOp::kJpeg>)
      .done(r);
  jpeg_decode_attrs(
      decoder("DecodeAndCropJpeg",
              "The window crop_window = [y, x, height, width] of a JPEG file as uint8 [height, width, "
              "channels], decoding only that window. decode_and_crop_jpeg(jpeg, [0, 0, 1, 2]).shape == "
              "[1, 2, 3]",
              true))
      .shape(&decode_shape<DecodeOp::kAndCropJpeg>)
      .kernel(kString, &decode_kernel<DecodeOp::kAndCropJpeg>)
      .done(r);
  decoder(
      "DecodePng",
      "A PNG file (also JPEG or a one-frame GIF) as uint8 [height, width, channels]; channels 0 keeps the "
      "file's. decode_png(encode_png([[[7]]])) == [[[7]]]")
      .attr("channels", AttrType::kInt, int64_t{0})
      .attr("dtype", AttrType::kDType, DType::kUInt8)
      .shape(&decode_shape<DecodeOp::kPng>)
      .kernel(kString, &decode_kernel<DecodeOp::kPng>)
      .done(r);
  decoder("DecodeGif",
          "Every frame of a GIF file (also JPEG or PNG, as one frame) as uint8 [frames, height, width, 3], "
          "each frame composed over the one before. decode_gif(gif).shape == [frames, height, width, 3]")
      .shape(&decode_shape<DecodeOp::kGif>)
      .kernel(kString, &decode_kernel<DecodeOp::kGif>)
      .done(r);
  decoder("DecodeBmp",
          "An uncompressed 8-, 24- or 32-bit BMP file as uint8 [height, width, channels]. "
          "decode_bmp(bmp).shape == [height, width, 3]")
      .attr("channels", AttrType::kInt, int64_t{0})
      .shape(&decode_shape<DecodeOp::kBmp>)
      .kernel(kString, &decode_kernel<DecodeOp::kBmp>)
      .done(r);
  decoder("DecodeImage",
          "A JPEG, PNG, GIF or BMP file by its magic bytes: [height, width, channels], or a GIF's [frames, "
          "height, width, 3] when expand_animations; uint8 or float32 in [0, 1]. "
          "decode_image(encode_png([[[255]]]), dtype=float32) == [[[1.]]]")
      .attr("channels", AttrType::kInt, int64_t{0})
      .attr("dtype", AttrType::kDType, DType::kUInt8)
      .attr("expand_animations", AttrType::kBool, true)
      .shape(&decode_shape<DecodeOp::kImage>)
      .kernel(kString, &decode_kernel<DecodeOp::kImage>)
      .done(r);
  OpBuilder("ExtractJpegShape")
      .doc("[height, width, channels] of a JPEG file from its header. extract_jpeg_shape(jpeg) == [2, 2, 3]")
      .input_fixed("contents", kString)
      .output("image_shape")
      .type_var(kString)
      .dispatch_on_input(0)
      .attr("output_type", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable)
      .shape(&extract_jpeg_shape_shape)
      .kernel(kString, &extract_jpeg_shape_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("EncodeJpeg")
      .doc(
          "uint8 [height, width, 1 or 3] as a JPEG file (a scalar string). "
          "encode_jpeg(zeros([2, 2, 3], uint8))[:2] == b\"\\xff\\xd8\"")
      .input("image")
      .output("contents")
      .type_var(kUInt8)
      .dispatch_on_input(0)
      .attr("format", AttrType::kString, std::string())
      .attr("quality", AttrType::kInt, int64_t{95})
      .attr("progressive", AttrType::kBool, false)
      .attr("optimize_size", AttrType::kBool, false)
      .attr("chroma_downsampling", AttrType::kBool, true)
      .attr("density_unit", AttrType::kString, std::string("in"))
      .attr("x_density", AttrType::kInt, int64_t{300})
      .attr("y_density", AttrType::kInt, int64_t{300})
      .attr("xmp_metadata", AttrType::kString, std::string())
      .flags(kNotDifferentiable)
      .shape(&encode_jpeg_shape)
      .kernel(kUInt8, &encode_jpeg_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("EncodeJpegVariableQuality")
      .doc(
          "uint8 [height, width, 1 or 3] as a JPEG file of the quality (an int32 scalar in [0, 100]) given "
          "as an "
          "input; EncodeJpeg's defaults otherwise. encode_jpeg_variable_quality(zeros([2, 2, 3], uint8), "
          "50)[:2] "
          "== b\"\\xff\\xd8\"")
      .input("images")
      .input_fixed("quality", dtype_bit(DType::kInt32))
      .output("contents")
      .type_var(kUInt8)
      .dispatch_on_input(0)
      .flags(kNotDifferentiable)
      .shape(&encode_jpeg_variable_quality_shape)
      .kernel(kUInt8, &encode_jpeg_variable_quality_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("EncodePng")
      .doc(
          "uint8 images [..., height, width, 1 to 4] as PNG files (strings [...]); compression -1 (zlib's "
          "default) to 9. encode_png(zeros([1, 1, 1], uint8))[:4] == b\"\\x89PNG\"")
      .input("image")
      .output("contents")
      .type_var(kUInt8)
      .dispatch_on_input(0)
      .attr("compression", AttrType::kInt, int64_t{-1})
      .flags(kNotDifferentiable)
      .shape(&encode_png_shape)
      .kernel(kUInt8, &encode_png_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
