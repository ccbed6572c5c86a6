"""``ember.image``: TensorFlow's ``tf.image`` — resize (bilinear and nearest on the ResizeBilinear and
ResizeNearestNeighbor ops, with TensorFlow 2's half-pixel centers; bicubic and area on ResizeBicubic and
ResizeArea; lanczos3/5, gaussian, mitchellcubic and antialiased bilinear and bicubic on ScaleAndTranslate), crops and pads, flips (plain, random and
stateless), patches, image gradients and Sobel edges, here; the colour conversions and adjustments
(ops/image_color_ops.py), the quality measures psnr, ssim, ssim_multiscale and total_variation (ops/image_metrics_ops.py) and the
box operations crop_and_resize and non-max suppression (ops/image_boxes_ops.py) are imported into this
namespace. Images are [height, width, channels] or [batch, height, width, channels].

Everything is composed of registry ops as TensorFlow's Python writes it, so gradients, tracing and pfor come
from those ops. As TensorFlow, a check whose operands are Python values raises ValueError at once and one on a
tensor raises InvalidArgumentError when it runs (an Assert inside ``ember.function``)."""

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.ops.array_ops import clip_by_value
from ember.ops.math_ops import cast, reduce_mean

__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue", "adjust_jpeg_quality",
           "adjust_saturation", "central_crop", "combined_non_max_suppression", "convert_image_dtype", "crop_and_resize",
           "crop_to_bounding_box", "draw_bounding_boxes", "extract_patches", "flip_left_right",
           "flip_up_down", "grayscale_to_rgb", "hsv_to_rgb", "image_gradients", "non_max_suppression",
           "non_max_suppression_overlaps", "non_max_suppression_padded", "non_max_suppression_with_scores",
           "pad_to_bounding_box",
           "per_image_standardization", "psnr", "random_brightness", "random_contrast", "random_crop",
           "random_jpeg_quality",
           "random_flip_left_right", "random_flip_up_down", "random_hue", "random_saturation", "resize",
           "resize_with_crop_or_pad", "resize_with_pad", "rgb_to_grayscale", "rgb_to_hsv", "rgb_to_yiq", "rgb_to_yuv",
           "rot90", "transpose", "yiq_to_rgb", "yuv_to_rgb",
           "sample_distorted_bounding_box", "sobel_edges", "ssim",
           "ssim_multiscale", "stateless_random_brightness", "stateless_random_contrast", "stateless_random_crop",
           "stateless_random_flip_left_right", "stateless_random_flip_up_down", "stateless_random_hue",
           "stateless_random_jpeg_quality", "stateless_random_saturation", "stateless_sample_distorted_bounding_box", "total_variation"]

_ResizeBilinear = _C.op("ResizeBilinear")
_ResizeNearest = _C.op("ResizeNearestNeighbor")
_ScaleAndTranslate = _C.op("ScaleAndTranslate")


class ResizeMethod:
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


def _image(image):
    x = image if isinstance(image, Tensor) else convert_to_tensor(image)
    rank = x.shape.rank
    if rank not in (3, 4):
        raise ValueError(f"'image' (shape {x.shape}) must have either 3 or 4 dimensions.")
    return x, rank == 3


# tf.image.resize's methods that TensorFlow 2 computes with ScaleAndTranslate, and the kernel each uses.
_SCALE_AND_TRANSLATE_KERNELS = {ResizeMethod.LANCZOS3: "lanczos3", ResizeMethod.LANCZOS5: "lanczos5",
                                ResizeMethod.GAUSSIAN: "gaussian", ResizeMethod.MITCHELLCUBIC: "mitchellcubic"}
# With antialias=True, bilinear and bicubic resize through ScaleAndTranslate too.
_ANTIALIAS_KERNELS = {ResizeMethod.BILINEAR: "triangle", ResizeMethod.BICUBIC: "keyscubic"}


def _aspect_preserving_size(x, size_t):
    """The largest [height, width] within size with x's aspect ratio, as TensorFlow computes it (float32)."""
    dims = array_ops.shape(x)
    height, width = cast(dims[1], dtypes.float32), cast(dims[2], dtypes.float32)
    factor = math_ops.minimum(cast(size_t[0], dtypes.float32) / height, cast(size_t[1], dtypes.float32) / width)
    return array_ops.stack([cast(math_ops.round(factor * height), dtypes.int32),
                            cast(math_ops.round(factor * width), dtypes.int32)])


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False, antialias=False, name=None):
    """Resize to ``size`` = [new_height, new_width] (with ``preserve_aspect_ratio``, the largest size within it
    that keeps the aspect ratio): nearest keeps the dtype, the other methods give float32. lanczos3/5, gaussian
    and mitchellcubic, and bilinear/bicubic with ``antialias``, run the ScaleAndTranslate op, as TensorFlow 2;
    bicubic without it ResizeBicubic (half-pixel centers), area ResizeArea."""
    x, single = _image(images)
    method = str(method).lower()
    if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR, ResizeMethod.BICUBIC, ResizeMethod.AREA,
                      *_SCALE_AND_TRANSLATE_KERNELS):
        raise ValueError(f"Resize method is not implemented: {method}")
    from ember.ops.nn_conv_ops import _ints

    size_t = size if isinstance(size, Tensor) else convert_to_tensor(_ints(size, "size"), dtype=dtypes.int32)
    if size_t.shape.as_list() != [2]:
        raise ValueError(f"'size' must be a 1-D Tensor of 2 elements: new_height, new_width, got {size}")
    if single:
        x = array_ops.expand_dims(x, 0)
    if preserve_aspect_ratio:
        size_t = _aspect_preserving_size(x, size_t)
    kernel = _SCALE_AND_TRANSLATE_KERNELS.get(method) or (_ANTIALIAS_KERNELS.get(method) if antialias else None)
    if kernel is not None:
        scale = cast(size_t, dtypes.float32) / cast(array_ops.shape(x)[1:3], dtypes.float32)
        y = _ScaleAndTranslate(x, size_t, scale, array_ops.zeros([2]), kernel, bool(antialias))
    elif method == ResizeMethod.BICUBIC:
        y = _C.op("ResizeBicubic")(x, size_t, False, True)
    elif method == ResizeMethod.AREA:  # antialias or not, as TensorFlow
        y = _C.op("ResizeArea")(x, size_t, False)
    elif method == ResizeMethod.BILINEAR:
        y = _ResizeBilinear(x if x.dtype in (dtypes.float32, dtypes.float64) else cast(x, dtypes.float32), size_t,
                            False, True)
    elif x.dtype in (dtypes.float32, dtypes.float64):
        y = _ResizeNearest(x, size_t, False, True)
    else:  # ember's kernel is float: float64 holds every int32/uint8 value exactly
        y = cast(_ResizeNearest(cast(x, dtypes.float64), size_t, False, True), x.dtype)
    return array_ops.squeeze(y, [0]) if single else y


def flip_left_right(image):
    """Reverses the width dimension."""
    x, _ = _image(image)
    return x[..., ::-1, :]


def flip_up_down(image):
    """Reverses the height dimension."""
    x, _ = _image(image)
    return x[..., ::-1, :, :]


def _image_at_least_3d(image):
    x = image if isinstance(image, Tensor) else convert_to_tensor(image)
    rank = x.shape.rank
    if rank is not None and rank < 3:
        raise ValueError(f"'image' (shape {x.shape}) must be at least three-dimensional.")
    if rank not in (3, 4):
        raise ValueError(f"'image' (shape {x.shape}) must have either 3 or 4 dimensions.")
    return x, rank == 3


def transpose(image, name=None):
    """Swaps height and width of one image [h, w, c] or a batch [n, h, w, c]."""
    x, single = _image_at_least_3d(image)
    return array_ops.transpose(x, [1, 0, 2] if single else [0, 2, 1, 3])


def _reverse(x, axes):
    from ember.ops.indexing_ops import reverse

    return reverse(x, axes)


def _rot90_static(x, k, single):
    h, w = (0, 1) if single else (1, 2)
    if k == 0:
        return array_ops.identity(x)
    if k == 2:
        return _reverse(x, [h, w])
    turned = transpose(x)
    return _reverse(turned, [h]) if k == 1 else _reverse(turned, [w])


def rot90(image, k=1, name=None):
    """Rotates images counter-clockwise by k quarter turns (k may be negative, or a scalar tensor)."""
    x, single = _image_at_least_3d(image)
    if isinstance(k, Tensor) or not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        k = convert_to_tensor(k, dtype=dtypes.int32)
        if k.shape.rank not in (None, 0):
            raise ValueError(f"rot90: k must be a scalar; got shape {k.shape}")
        if _C.in_trace():
            from ember.ops.control_flow_ops import switch_case

            return switch_case(math_ops.floormod(k, 4),
                               [lambda i=i: _rot90_static(x, i, single) for i in (0, 1, 2, 3)])
        k = int(k.numpy())
    return _rot90_static(x, int(k) % 4, single)


# ---- crops and pads ---------------------------------------------------------------------------------------


def _batched(image):
    """image as a 4-D batch, whether it was one image, and [batch, height, width, depth]: Python ints where the
    static shape knows them, scalar tensors where not."""
    from ember.ops.indexing_ops import _dims

    x, single = _image(image)
    if single:
        x = array_ops.expand_dims(x, 0)
    return x, single, _dims(x)


def _assert(condition, message):
    """TensorFlow's image checks: on Python values a ValueError now; on a tensor an Assert (InvalidArgumentError
    when it runs)."""
    if isinstance(condition, Tensor):
        from ember import debugging

        debugging.Assert(condition, [message])
    elif not condition:
        raise ValueError(message)


def _unbatched(y, single):
    return array_ops.squeeze(y, [0]) if single else y


def _max(a, b):
    return math_ops.maximum(a, b) if isinstance(a, Tensor) or isinstance(b, Tensor) else max(a, b)


def _min(a, b):
    return math_ops.minimum(a, b) if isinstance(a, Tensor) or isinstance(b, Tensor) else min(a, b)


def _scalar(v):
    """An offset or size given as a tensor, as an int32 scalar (a Python int stays one)."""
    return cast(v, dtypes.int32) if isinstance(v, Tensor) else v


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The [target_height, target_width] window whose top-left corner is (offset_height, offset_width)."""
    x, single, (_, height, width, _) = _batched(image)
    offset_height, offset_width = _scalar(offset_height), _scalar(offset_width)
    target_height, target_width = _scalar(target_height), _scalar(target_width)
    _assert(offset_width >= 0, "offset_width must be >= 0.")
    _assert(offset_height >= 0, "offset_height must be >= 0.")
    _assert(target_width > 0, "target_width must be > 0.")
    _assert(target_height > 0, "target_height must be > 0.")
    _assert(width >= target_width + offset_width, "width must be >= target + offset.")
    _assert(height >= target_height + offset_height, "height must be >= target + offset.")
    y = array_ops.slice(x, [0, offset_height, offset_width, 0], [-1, target_height, target_width, -1])
    return _unbatched(y, single)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """Zero-pads to [target_height, target_width] with the image's top-left corner at (offset_height,
    offset_width)."""
    x, single, (_, height, width, _) = _batched(image)
    offset_height, offset_width = _scalar(offset_height), _scalar(offset_width)
    after_height = _scalar(target_height) - offset_height - height
    after_width = _scalar(target_width) - offset_width - width
    _assert(offset_height >= 0, "offset_height must be >= 0")
    _assert(offset_width >= 0, "offset_width must be >= 0")
    _assert(after_width >= 0, "width must be <= target - offset")
    _assert(after_height >= 0, "height must be <= target - offset")
    y = array_ops.pad(x, [[0, 0], [offset_height, after_height], [offset_width, after_width], [0, 0]])
    return _unbatched(y, single)


def central_crop(image, central_fraction):
    """The central ``central_fraction`` (in (0, 1]) of the height and the width."""
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    x = image if isinstance(image, Tensor) else convert_to_tensor(image)
    if central_fraction == 1.0:
        return x
    rank = x.shape.rank
    if rank not in (3, 4):
        raise ValueError(f"`image` should either be a Tensor with rank = 3 or rank = 4. Had rank = {rank}.")
    x, single, (_, height, width, _) = _batched(x)

    def start(size):  # TensorFlow's rounding: int((size - size * fraction) / 2) in float64
        if isinstance(size, Tensor):
            size = cast(size, dtypes.float64)
            return cast((size - size * central_fraction) / 2, dtypes.int32)
        return int((float(size) - float(size) * central_fraction) / 2)

    top, left = start(height), start(width)
    y = array_ops.slice(x, [0, top, left, 0], [-1, height - top * 2, width - left * 2, -1])
    return _unbatched(y, single)


def resize_with_crop_or_pad(image, target_height, target_width):
    """Crops the centre or zero-pads around it to [target_height, target_width]."""
    x, single, (_, height, width, _) = _batched(image)
    target_height, target_width = _scalar(target_height), _scalar(target_width)
    _assert(target_width > 0, "target_width must be > 0.")
    _assert(target_height > 0, "target_height must be > 0.")
    width_diff, height_diff = target_width - width, target_height - height
    cropped = crop_to_bounding_box(x, _max(-height_diff // 2, 0), _max(-width_diff // 2, 0),
                                   _min(target_height, height), _min(target_width, width))
    y = pad_to_bounding_box(cropped, _max(height_diff // 2, 0), _max(width_diff // 2, 0), target_height,
                            target_width)
    return _unbatched(y, single)


def resize_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR, antialias=False):
    """Resizes keeping the aspect ratio so that the image fits [target_height, target_width], then zero-pads it
    centred; TensorFlow's float32 arithmetic for the sizes."""
    x, single, (_, height, width, _) = _batched(image)
    target_height, target_width = _scalar(target_height), _scalar(target_width)
    _assert(target_width > 0, "target_width must be > 0.")
    _assert(target_height > 0, "target_height must be > 0.")

    def f32(v):
        return cast(v, dtypes.float32) if isinstance(v, Tensor) else np.float32(v)

    def floor_int(v):
        return cast(math_ops.floor(v), dtypes.int32) if isinstance(v, Tensor) else int(np.floor(v))

    f_height, f_width = f32(height), f32(width)
    f_target_height, f_target_width = f32(target_height), f32(target_width)
    ratio = _max(f_width / f_target_width, f_height / f_target_height)
    resized_height, resized_width = f_height / ratio, f_width / ratio
    pad_height = floor_int((f_target_height - resized_height) / np.float32(2))
    pad_width = floor_int((f_target_width - resized_width) / np.float32(2))
    size = [floor_int(resized_height), floor_int(resized_width)]
    if any(isinstance(v, Tensor) for v in size):
        size = array_ops.stack([s if isinstance(s, Tensor) else convert_to_tensor(s) for s in size])
    resized = resize(x, size, method=method, antialias=antialias)
    y = pad_to_bounding_box(resized, _max(0, pad_height), _max(0, pad_width), target_height, target_width)
    return _unbatched(y, single)


# ---- random and stateless random flips, crops and adjustments ----------------------------------------------


def _random_flip(image, axis, draw):
    """TensorFlow's _random_flip: one image flips when its uniform draw is < 0.5; in a batch, image i flips when
    round(draw[i]) is 1 (a draw of exactly 0.5 does not flip)."""
    from ember.ops.indexing_ops import reverse

    x, single = _image(image)
    if single:
        return array_ops.where(math_ops.less(draw([]), convert_to_tensor(0.5)), reverse(x, [axis]), x)
    batch = x.shape[0] if x.shape[0] is not None else array_ops.shape(x)[0]
    flips = cast(array_ops.reshape(math_ops.round(draw([batch])), [-1, 1, 1, 1]), x.dtype)
    one = convert_to_tensor(1, dtype=x.dtype)
    return flips * reverse(x, [axis + 1]) + (one - flips) * x


def _uniform(seed):
    from ember.ops import random_ops

    return lambda shape: random_ops.uniform(shape, 0, 1.0, seed=seed)


def _stateless_uniform(seed):
    from ember.ops import random_ops

    return lambda shape: random_ops.stateless_uniform(shape, seed=seed, minval=0, maxval=1.0)


def random_flip_left_right(image, seed=None):
    """Flips each image's width with probability 1/2; draws as TensorFlow (equal seeds, equal flips)."""
    return _random_flip(image, 1, _uniform(seed))


def random_flip_up_down(image, seed=None):
    """Flips each image's height with probability 1/2; draws as TensorFlow."""
    return _random_flip(image, 0, _uniform(seed))


def stateless_random_flip_left_right(image, seed):
    """Flips each image's width when its stateless uniform draw from ``seed`` says so, as TensorFlow."""
    return _random_flip(image, 1, _stateless_uniform(seed))


def stateless_random_flip_up_down(image, seed):
    """Flips each image's height when its stateless uniform draw from ``seed`` says so, as TensorFlow."""
    return _random_flip(image, 0, _stateless_uniform(seed))


def _by_random_factor(adjust, image, lower, upper, seed, stateless):
    """adjust(image, factor) with a factor uniform in [lower, upper), TensorFlow's checks and draw."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return adjust(image, _scalar_draw(lower, upper, seed, stateless))


def _check_hue_delta(max_delta):
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")


def _scalar_draw(minval, maxval, seed, stateless):
    from ember.ops import random_ops

    if stateless:
        return random_ops.stateless_uniform([], seed=seed, minval=minval, maxval=maxval)
    return random_ops.uniform([], minval, maxval, seed=seed)


def random_brightness(image, max_delta, seed=None):
    """adjust_brightness by a delta uniform in [-max_delta, max_delta); draws as TensorFlow."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _scalar_draw(-max_delta, max_delta, seed, False))


def stateless_random_brightness(image, max_delta, seed):
    """adjust_brightness by a stateless uniform delta in [-max_delta, max_delta) from ``seed``, as TensorFlow."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _scalar_draw(-max_delta, max_delta, seed, True))


def random_contrast(image, lower, upper, seed=None):
    """adjust_contrast by a factor uniform in [lower, upper); draws as TensorFlow."""
    return _by_random_factor(adjust_contrast, image, lower, upper, seed, False)


def stateless_random_contrast(image, lower, upper, seed):
    """adjust_contrast by a stateless uniform factor in [lower, upper) from ``seed``, as TensorFlow."""
    return _by_random_factor(adjust_contrast, image, lower, upper, seed, True)


def random_saturation(image, lower, upper, seed=None):
    """adjust_saturation by a factor uniform in [lower, upper); draws as TensorFlow."""
    return _by_random_factor(adjust_saturation, image, lower, upper, seed, False)


def stateless_random_saturation(image, lower, upper, seed):
    """adjust_saturation by a stateless uniform factor in [lower, upper) from ``seed``, as TensorFlow."""
    return _by_random_factor(adjust_saturation, image, lower, upper, seed, True)


def random_hue(image, max_delta, seed=None):
    """adjust_hue by a delta uniform in [-max_delta, max_delta), max_delta <= 0.5; draws as TensorFlow."""
    _check_hue_delta(max_delta)
    return adjust_hue(image, _scalar_draw(-max_delta, max_delta, seed, False))


def stateless_random_hue(image, max_delta, seed):
    """adjust_hue by a stateless uniform delta in [-max_delta, max_delta) from ``seed``, as TensorFlow."""
    _check_hue_delta(max_delta)
    return adjust_hue(image, _scalar_draw(-max_delta, max_delta, seed, True))


def _random_crop(value, size, draw):
    """A window of shape ``size`` at offset draw(rank) % (shape - size + 1), TensorFlow's random_crop."""
    from ember import debugging

    x = value if isinstance(value, Tensor) else convert_to_tensor(value)
    size = cast(size, dtypes.int32) if isinstance(size, Tensor) else convert_to_tensor(size, dtype=dtypes.int32)
    shape = array_ops.shape(x)
    debugging.Assert(math_ops.reduce_all(math_ops.greater_equal(shape, size)),
                     ["Need value.shape >= size, got ", shape, size], summarize=1000)
    offset = math_ops.floormod(draw(array_ops.shape(shape)), shape - size + 1)
    return array_ops.slice(x, offset, size)


def random_crop(value, size, seed=None, name=None):
    """A window of shape ``size`` at a random offset (of any rank); the offsets are TensorFlow's draws."""
    from ember.ops import random_ops

    return _random_crop(value, size, lambda shape: random_ops.uniform(
        shape, maxval=np.iinfo(np.int32).max, dtype=dtypes.int32, seed=seed))


def stateless_random_crop(value, size, seed, name=None):
    """A window of shape ``size`` at an offset drawn statelessly from ``seed``, as TensorFlow's."""
    from ember.ops import random_ops

    return _random_crop(value, size, lambda shape: random_ops.stateless_uniform(
        shape, seed=seed, minval=0, maxval=np.iinfo(np.int32).max, dtype=dtypes.int32))


# ---- patches, gradients, edges ----------------------------------------------------------------------------


def _window_sizes(values, name):
    from ember.ops.nn_conv_ops import _ints

    values = _ints(values, name)
    if len(values) != 4:
        raise errors.InvalidArgumentError(
            None, None, f"ExtractImagePatches: '{name}' must have 4 elements [1, rows, cols, 1], got {values}")
    if values[0] != 1 or values[3] != 1:
        raise errors.UnimplementedError(None, None, f"ExtractImagePatches: only support {name} across space, "
                                                    f"got {values}")
    if values[1] < 1 or values[2] < 1:
        raise errors.InvalidArgumentError(None, None, f"ExtractImagePatches: {name} must be positive, got {values}")
    return values[1], values[2]


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """Each output pixel holds the [size_rows, size_cols] patch (taps ``rates`` apart) that starts there, flattened
    as (row, col, depth): TensorFlow's ExtractImagePatches, composed of strided slices."""
    x = images if isinstance(images, Tensor) else convert_to_tensor(images)
    if x.shape.rank is not None and x.shape.rank != 4:
        raise ValueError(f"extract_patches: images must be 4-D [batch, rows, cols, depth], got shape {x.shape}")
    size_rows, size_cols = _window_sizes(sizes, "ksizes")
    stride_rows, stride_cols = _window_sizes(strides, "strides")
    rate_rows, rate_cols = _window_sizes(rates, "rates")
    padding = str(padding).upper() if isinstance(padding, str) else padding
    if padding not in ("SAME", "VALID"):
        raise errors.InvalidArgumentError(
            None, None, f'ExtractImagePatches: padding must be "SAME" or "VALID", got {padding!r}')
    _, rows, cols, depth = x.shape.as_list()
    if rows is None or cols is None or depth is None:
        raise errors.InvalidArgumentError(
            None, None, f"ExtractImagePatches: rows, cols and depth must be known while tracing, got {x.shape}")
    span_rows, span_cols = (size_rows - 1) * rate_rows + 1, (size_cols - 1) * rate_cols + 1
    if padding == "VALID":
        out_rows = (rows - span_rows + stride_rows) // stride_rows
        out_cols = (cols - span_cols + stride_cols) // stride_cols
        if out_rows < 0 or out_cols < 0:
            raise errors.InvalidArgumentError(
                None, None, f"ExtractImagePatches: computed output size would be negative: {min(out_rows, out_cols)}"
                            f" [input: {rows}x{cols}, effective filter: {span_rows}x{span_cols}]")
    else:
        out_rows, out_cols = -(-rows // stride_rows), -(-cols // stride_cols)
        pad_rows = max((out_rows - 1) * stride_rows + span_rows - rows, 0)
        pad_cols = max((out_cols - 1) * stride_cols + span_cols - cols, 0)
        top, left = pad_rows // 2, pad_cols // 2
        x = array_ops.pad(x, [[0, 0], [top, pad_rows - top], [left, pad_cols - left], [0, 0]])
    if out_rows == 0 or out_cols == 0:
        batch = x.shape[0] if x.shape[0] is not None else array_ops.shape(x)[0]
        return array_ops.zeros([batch, out_rows, out_cols, size_rows * size_cols * depth], x.dtype)
    taps = []
    for i in range(size_rows):
        for j in range(size_cols):
            r, c = i * rate_rows, j * rate_cols
            taps.append(x[:, r:r + (out_rows - 1) * stride_rows + 1:stride_rows,
                          c:c + (out_cols - 1) * stride_cols + 1:stride_cols, :])
    return array_ops.reshape(array_ops.stack(taps, 3), [-1, out_rows, out_cols, size_rows * size_cols * depth])


def image_gradients(image):
    """(dy, dx): the forward differences along height and width, 0 in the last row and column."""
    x = image if isinstance(image, Tensor) else convert_to_tensor(image)
    if x.shape.rank != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {x.shape}.")
    dy = x[:, 1:, :, :] - x[:, :-1, :, :]
    dx = x[:, :, 1:, :] - x[:, :, :-1, :]
    dy = array_ops.concat([dy, array_ops.zeros_like(x[:, :1, :, :])], 1)
    dx = array_ops.concat([dx, array_ops.zeros_like(x[:, :, :1, :])], 2)
    return dy, dx


_SOBEL = np.array([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]],  # vertical change (dy)
                   [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]])  # horizontal change (dx)


def sobel_edges(image):
    """[batch, h, w, d, 2]: the 3x3 Sobel responses (dy, dx) of each channel, the border reflected."""
    from ember.ops.nn_conv_ops import depthwise_conv2d

    x = image if isinstance(image, Tensor) else convert_to_tensor(image)
    if x.shape.rank != 4:
        raise ValueError(f"sobel_edges: image must be 4-D [batch, h, w, d], got shape {x.shape}")
    depth = x.shape[-1]
    if depth is None:
        raise ValueError(f"sobel_edges: the depth must be known, got shape {x.shape}")
    kernel = np.tile(np.transpose(_SOBEL, (1, 2, 0))[:, :, None, :], [1, 1, depth, 1])
    padded = array_ops.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    y = depthwise_conv2d(padded, convert_to_tensor(kernel.astype(x.dtype.as_numpy_dtype)), [1, 1, 1, 1], "VALID")
    _, height, width, _ = x.shape.as_list()
    if height is None or width is None:
        return array_ops.reshape(y, array_ops.concat([array_ops.shape(x), convert_to_tensor([2])], 0))
    return array_ops.reshape(y, [-1, height, width, depth, 2])


from ember.ops.image_color_ops import (adjust_brightness, adjust_contrast, adjust_gamma, adjust_hue,  # noqa: E402
                                       adjust_saturation, convert_image_dtype, grayscale_to_rgb, hsv_to_rgb,
                                       per_image_standardization, rgb_to_grayscale, rgb_to_hsv, rgb_to_yiq,
                                       rgb_to_yuv, yiq_to_rgb, yuv_to_rgb)
from ember.ops.image_metrics_ops import psnr, ssim, ssim_multiscale, total_variation  # noqa: E402
# The image file functions, also tf.io's (ops/image_codec_ops.py).
from ember.ops.image_codec_ops import (decode_and_crop_jpeg, decode_bmp, decode_gif, decode_image,  # noqa: E402
                                       decode_jpeg, decode_png, encode_jpeg, encode_png, extract_jpeg_shape,
                                       is_jpeg)
from ember.ops.image_codec_ops import (adjust_jpeg_quality, random_jpeg_quality,  # noqa: E402
                                       stateless_random_jpeg_quality)
from ember.ops import image_codec_ops as _image_codec_ops  # noqa: E402

__all__ += _image_codec_ops.__all__
from ember.ops.image_boxes_ops import (combined_non_max_suppression, crop_and_resize, non_max_suppression,  # noqa: E402
                                       non_max_suppression_overlaps, non_max_suppression_padded,
                                       non_max_suppression_with_scores, sample_distorted_bounding_box,
                                       stateless_sample_distorted_bounding_box, draw_bounding_boxes)
