"""TensorFlow's image file functions (``tf.io.decode_jpeg``, ``encode_png``, ``decode_image``, ... and their
``tf.image`` aliases) on the registry ops of src/ember/ops/image_codecs.cc, which decode with libjpeg-turbo,
libpng and giflib.

ember has no uint16 dtype: ``decode_png(dtype=tf.uint16)`` and ``encode_png`` of uint16 images raise
UnimplementedError naming uint16. ``decode_image`` to other dtypes goes, as TensorFlow's, through each
sample's 16-bit value, so its results are TensorFlow's."""

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor

__all__ = ["decode_and_crop_jpeg", "decode_bmp", "decode_gif", "decode_image", "decode_jpeg", "decode_png",
           "encode_jpeg", "encode_png", "extract_jpeg_shape", "is_jpeg"]


def _contents(contents):
    return contents if isinstance(contents, Tensor) else convert_to_tensor(contents, dtype=dtypes.string)


def _is_uint16(dtype):
    return getattr(dtype, "name", dtype) == "uint16" or str(dtype) in ("uint16", "<dtype: 'uint16'>")


def _no_uint16(what):
    return errors.UnimplementedError(None, None, f"{what}: dtype uint16 is not supported: ember has no uint16 dtype "
                                                 "(decode to uint8, or with decode_image to float32)")


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    """uint8 [height, width, channels] of a JPEG file (also PNG, or a GIF of one frame)."""
    return _C.op("DecodeJpeg")(_contents(contents), int(channels), int(ratio), bool(fancy_upscaling),
                               bool(try_recover_truncated), float(acceptable_fraction), str(dct_method))


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """The window ``crop_window = [y, x, height, width]`` of a JPEG file, decoding only that window."""
    window = crop_window if isinstance(crop_window, Tensor) else convert_to_tensor(crop_window, dtype=dtypes.int32)
    return _C.op("DecodeAndCropJpeg")(_contents(contents), window, int(channels), int(ratio), bool(fancy_upscaling),
                                      bool(try_recover_truncated), float(acceptable_fraction), str(dct_method))


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002 - TF's name
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300, xmp_metadata="",
                name=None):
    """A JPEG file (a scalar string) of uint8 [height, width, 1 or 3]."""
    image = image if isinstance(image, Tensor) else convert_to_tensor(image, dtype=dtypes.uint8)
    return _C.op("EncodeJpeg")(image, str(format), int(quality), bool(progressive), bool(optimize_size),
                               bool(chroma_downsampling), str(density_unit), int(x_density), int(y_density),
                               xmp_metadata.decode() if isinstance(xmp_metadata, bytes) else str(xmp_metadata))


def adjust_jpeg_quality(image, jpeg_quality, dct_method="", name=None):
    """``image`` (3-D, 1 or 3 channels, any image dtype) through a JPEG file of ``jpeg_quality`` (an int or an
    int32 scalar tensor in [0, 100]), back in its dtype: TensorFlow's composition of convert_image_dtype,
    EncodeJpegVariableQuality and DecodeJpeg, pixel for pixel."""
    from ember.ops.image_color_ops import convert_image_dtype

    image = image if isinstance(image, Tensor) else convert_to_tensor(image)
    channels = image.shape[-1] if image.shape.rank is not None else None
    original = image.dtype
    pixels = convert_image_dtype(image, dtypes.uint8, saturate=True)
    if not isinstance(jpeg_quality, Tensor):
        jpeg_quality = convert_to_tensor(jpeg_quality, dtype=dtypes.int32)
    contents = _C.op("EncodeJpegVariableQuality")(pixels, jpeg_quality)
    decoded = decode_jpeg(contents, channels=0 if channels is None else channels, dct_method=dct_method)
    return convert_image_dtype(decoded, original, saturate=True)


def _jpeg_quality_range(min_jpeg_quality, max_jpeg_quality):
    if min_jpeg_quality < 0 or max_jpeg_quality < 0 or min_jpeg_quality > 100 or max_jpeg_quality > 100:
        raise ValueError("jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise ValueError("`min_jpeg_quality` must be less than `max_jpeg_quality`.")


def random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed=None):
    """adjust_jpeg_quality with a quality drawn uniformly from [min, max) (int32 random_uniform, as TensorFlow,
    so with the same seeds the same quality)."""
    from ember.ops import random_ops

    _jpeg_quality_range(min_jpeg_quality, max_jpeg_quality)
    quality = random_ops.uniform([], min_jpeg_quality, max_jpeg_quality, dtype=dtypes.int32, seed=seed)
    return adjust_jpeg_quality(image, quality)


def stateless_random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed):
    """adjust_jpeg_quality with a quality drawn from the stateless stream of ``seed``: TensorFlow's."""
    from ember.ops import random_ops

    _jpeg_quality_range(min_jpeg_quality, max_jpeg_quality)
    quality = random_ops.stateless_uniform([], seed=seed, minval=min_jpeg_quality, maxval=max_jpeg_quality,
                                           dtype=dtypes.int32)
    return adjust_jpeg_quality(image, quality)


def extract_jpeg_shape(contents, output_type=dtypes.int32, name=None):
    """[height, width, channels] of a JPEG file, read from its header."""
    return _C.op("ExtractJpegShape")(_contents(contents), dtypes.as_dtype(output_type))


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    """uint8 [height, width, channels] of a PNG file (also JPEG, or a GIF of one frame)."""
    if _is_uint16(dtype):
        raise _no_uint16("decode_png")
    return _C.op("DecodePng")(_contents(contents), int(channels), dtypes.as_dtype(dtype))


def encode_png(image, compression=-1, name=None):
    """PNG files of uint8 images [..., height, width, channels]: a string tensor of the batch shape."""
    if _is_uint16(getattr(image, "dtype", None)):
        raise _no_uint16("encode_png")
    image = image if isinstance(image, Tensor) else convert_to_tensor(image, dtype=dtypes.uint8)
    return _C.op("EncodePng")(image, int(compression))


def decode_gif(contents, name=None):
    """uint8 [frames, height, width, 3] of a GIF file, each frame composed over the one before."""
    return _C.op("DecodeGif")(_contents(contents))


def decode_bmp(contents, channels=0, name=None):
    """uint8 [height, width, channels] of an uncompressed BMP file."""
    return _C.op("DecodeBmp")(_contents(contents), int(channels))


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None, expand_animations=True):
    """A JPEG, PNG, GIF or BMP file by its magic bytes: [height, width, channels], or [frames, height, width,
    3] for a GIF when ``expand_animations``. uint8 and float32 (in [0, 1]) come from the op; other dtypes, as
    TensorFlow's, from each sample's 16-bit value (a PNG's own, else the 8-bit value * 256) by
    ``convert_image_dtype``'s rule."""
    if _is_uint16(dtype):
        raise _no_uint16("decode_image")
    dtype = dtypes.as_dtype(dtype)
    channels = 0 if channels is None else int(channels)
    contents = _contents(contents)
    decode = _C.op("DecodeImage")
    if dtype in (dtypes.uint8, dtypes.float32):
        return decode(contents, channels, dtype, bool(expand_animations))
    if not (dtype.is_floating or dtype.is_integer):
        raise TypeError(f"decode_image: dtype must be a float or integer dtype, got {dtype.name}")
    from ember import strings
    from ember.ops import array_ops, math_ops

    # The float32 decode is v / 65535 for a PNG's 16-bit v and v / 255 for 8-bit v elsewhere: both exact
    # enough to recover v, and so TensorFlow's uint16 image without a uint16 dtype.
    unit = decode(contents, channels, dtypes.float32, bool(expand_animations))
    is_png = math_ops.equal(strings.substr(contents, 0, 8), b"\x89PNG\r\n\x1a\n")
    wide = array_ops.where(is_png, math_ops.round(unit * 65535.0), math_ops.round(unit * 255.0) * 256.0)
    wide = math_ops.cast(wide, dtypes.int64)
    if dtype.is_floating:
        return math_ops.cast(wide, dtype) * (1.0 / 65535)
    bits = {dtypes.int8: 7, dtypes.int16: 15, dtypes.int32: 31, dtypes.int64: 63}[dtype]
    if bits > 16:
        return math_ops.cast(wide, dtype) * (1 << (bits - 16))
    return math_ops.cast(wide // (1 << (16 - bits)), dtype)


def is_jpeg(contents, name=None):
    """Whether ``contents`` starts with JPEG's magic bytes FF D8 FF (a bool tensor)."""
    from ember import strings
    from ember.ops import math_ops

    return math_ops.equal(strings.substr(_contents(contents), 0, 3), b"\xff\xd8\xff")
