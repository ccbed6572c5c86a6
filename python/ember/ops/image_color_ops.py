"""``tf.image``'s colour and value operations: dtype conversion, grayscale, HSV, brightness, contrast,
saturation, hue, gamma and per-image standardization (exported by ``ember.image``).

TensorFlow has kernels for RGBToHSV, HSVToRGB, AdjustHue and AdjustSaturation; here they are compositions of
element-wise registry ops with the kernels' formulas (hue in [0, 1), saturation range / max, value max), so they
trace, batch and differentiate like any composition. TensorFlow registers gradients for RGBToHSV and HSVToRGB
only; the compositions give adjust_hue and adjust_saturation gradients too, where TensorFlow has none.
"""

import numpy as np

from ember import dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.ops.array_ops import clip_by_value
from ember.ops.math_ops import cast, reduce_mean

_GRAYSCALE_WEIGHTS = [0.2989, 0.5870, 0.1140]  # TensorFlow's rgb_to_grayscale weights (ITU-R BT.601, rounded)


def _tensor(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _float_image(x):
    """x as TensorFlow's adjust_* compute it: float16 and float32 as they are, anything else converted to
    float32 (float64 too)."""
    return x if x.dtype in (dtypes.float16, dtypes.float32) else convert_image_dtype(x, dtypes.float32)


def _check_three_channels(x, op, ending="but input only has"):
    channels = x.shape[-1] if x.shape.rank else None
    if x.shape.rank is not None and x.shape.rank < 1:
        raise errors.InvalidArgumentError(None, None, f"{op}: input must be at least 1-D, got shape {x.shape}")
    if channels is not None and channels != 3:
        raise errors.InvalidArgumentError(None, None, f"{op}: input must have 3 channels {ending} {channels} channels.")


def _check_hsv_dtype(x, op):
    if not x.dtype.is_floating:
        raise TypeError(f"{op}: images must be float16, bfloat16, float32 or float64, got {x.dtype.name}")


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Converts between float images in [0, 1] and integer images in [0, MAX], scaling as TensorFlow."""
    x = _tensor(image)
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    if x.dtype == dtype:
        return x
    if x.dtype.is_integer and dtype.is_integer:
        src_max, dst_max = np.iinfo(x.dtype.as_numpy_dtype).max, np.iinfo(dtype.as_numpy_dtype).max
        if src_max > dst_max:
            return cast(x // convert_to_tensor((src_max + 1) // (dst_max + 1), dtype=x.dtype), dtype)
        y = cast(x, dtype)
        return y * convert_to_tensor((dst_max + 1) // (src_max + 1), dtype=dtype)
    if x.dtype.is_floating and dtype.is_floating:
        return cast(x, dtype)
    if x.dtype.is_integer:
        y = cast(x, dtype)
        return y * convert_to_tensor(1.0 / np.iinfo(x.dtype.as_numpy_dtype).max, dtype=dtype)
    scale = np.iinfo(dtype.as_numpy_dtype).max + 0.5
    y = x * convert_to_tensor(scale, dtype=x.dtype)
    if saturate:
        y = clip_by_value(y, convert_to_tensor(float(np.iinfo(dtype.as_numpy_dtype).min), dtype=x.dtype),
                          convert_to_tensor(float(np.iinfo(dtype.as_numpy_dtype).max), dtype=x.dtype))
    return cast(y, dtype)


def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean, the mean per image and channel over height and width; computed in
    float32 for images that are not float16 or float32 (float64 ones too, rounded there), as TensorFlow."""
    x = _tensor(images)
    if x.shape.rank is not None and x.shape.rank < 3:
        raise ValueError(f"adjust_contrast: images must be at least 3-D, got shape {x.shape}")
    orig = x.dtype
    f = x if orig in (dtypes.float16, dtypes.float32) else convert_image_dtype(x, dtypes.float32)
    mean = reduce_mean(f, [-3, -2], keepdims=True)
    # TensorFlow's AdjustContrastv2 takes a float32 factor for float16 images too (a drawn factor is float32).
    y = (f - mean) * cast(convert_to_tensor(contrast_factor), f.dtype) + mean
    return y if orig == f.dtype else convert_image_dtype(y, orig, saturate=True)


def adjust_brightness(image, delta):
    """image + delta, in float32 for images that are not float16 or float32, converted back saturating."""
    x = _tensor(image)
    orig = x.dtype
    f = _float_image(x)
    y = f + cast(convert_to_tensor(delta), f.dtype)
    return convert_image_dtype(y, orig, saturate=True)


def adjust_gamma(image, gamma=1, gain=1):
    """gain * image ** gamma, in float32 for images that are not float16 or float32; gamma must be >= 0."""
    x = _tensor(image)
    orig = x.dtype
    f = _float_image(x)
    if isinstance(gamma, Tensor):
        from ember import debugging

        debugging.Assert(math_ops.greater_equal(gamma, convert_to_tensor(0, dtype=gamma.dtype)),
                         ["Gamma should be a non-negative real number."])
    elif gamma < 0:
        raise ValueError("Gamma should be a non-negative real number.")
    gamma = cast(convert_to_tensor(gamma), f.dtype)
    gain = cast(convert_to_tensor(gain), f.dtype)
    return convert_image_dtype(gain * math_ops.pow(f, gamma), orig, saturate=True)


def rgb_to_grayscale(images, name=None):
    """The weighted sum 0.2989 R + 0.5870 G + 0.1140 B, keeping a last dimension of 1, computed in float32."""
    x = _tensor(images)
    orig = x.dtype
    f = convert_image_dtype(x, dtypes.float32)
    if f.shape.rank is not None and f.shape[-1] is not None and f.shape[-1] != 3:
        raise errors.InvalidArgumentError(
            None, None, f"rgb_to_grayscale: the last dimension must be 3 (R, G, B), got shape {x.shape}")
    weights = convert_to_tensor(np.asarray(_GRAYSCALE_WEIGHTS, np.float32))
    gray = math_ops.reduce_sum(f * weights, -1, keepdims=True)
    return convert_image_dtype(gray, orig)


def grayscale_to_rgb(images, name=None):
    """Repeats the single channel three times."""
    x = _tensor(images)
    rank = x.shape.rank
    if rank is not None and rank < 2:
        raise ValueError(f"A grayscale image (shape {x.shape}) must be at least two-dimensional.")
    if rank is not None and x.shape[-1] is not None and x.shape[-1] != 1:
        raise ValueError("Last dimension of a grayscale image should be size 1.")
    return array_ops.concat([x, x, x], -1)


def rgb_to_hsv(images, name=None):
    """RGB in [0, 1] to HSV: hue in [0, 1) (0 for grays), saturation (max - min) / max (0 for black) and value
    max, as TensorFlow's RGBToHSV kernel."""
    x = _tensor(images)
    _check_hsv_dtype(x, "RGBToHSV")
    _check_three_channels(x, "RGBToHSV")
    r, g, b = array_ops.unstack(x, 3, -1)
    value = math_ops.maximum(math_ops.maximum(r, g), b)
    spread = value - math_ops.minimum(math_ops.minimum(r, g), b)
    zero, one = array_ops.zeros_like(value), array_ops.ones_like(value)
    positive = math_ops.greater(spread, zero)
    saturation = array_ops.where(math_ops.greater(value, zero),
                                 spread / array_ops.where(math_ops.greater(value, zero), value, one), zero)
    # The sector formula divides by the spread; a gray pixel (spread 0) takes hue 0 through a safe divisor so
    # that its gradient is 0, not NaN.
    norm = one / (convert_to_tensor(6.0, dtype=x.dtype) * array_ops.where(positive, spread, one))
    third = convert_to_tensor(2.0 / 6.0, dtype=x.dtype)
    hue = array_ops.where(math_ops.equal(r, value), norm * (g - b),
                          array_ops.where(math_ops.equal(g, value), norm * (b - r) + third,
                                          norm * (r - g) + third + third))
    hue = array_ops.where(positive, hue, zero)
    hue = array_ops.where(math_ops.less(hue, zero), hue + one, hue)
    return array_ops.stack([hue, saturation, value], -1)


def hsv_to_rgb(images, name=None):
    """HSV to RGB, the inverse of rgb_to_hsv, as TensorFlow's HSVToRGB kernel."""
    x = _tensor(images)
    _check_hsv_dtype(x, "HSVToRGB")
    _check_three_channels(x, "HSVToRGB")
    hue, saturation, value = array_ops.unstack(x, 3, -1)
    return _hsv_to_rgb(hue, saturation, value)


def _hsv_to_rgb(hue, saturation, value):
    def c(v):
        return convert_to_tensor(v, dtype=hue.dtype)

    sector = hue * c(6.0)
    red = clip_by_value(math_ops.abs(sector - c(3.0)) - c(1.0), c(0.0), c(1.0))
    green = clip_by_value(c(2.0) - math_ops.abs(sector - c(2.0)), c(0.0), c(1.0))
    blue = clip_by_value(c(2.0) - math_ops.abs(sector - c(4.0)), c(0.0), c(1.0))
    gray = c(1.0) - saturation
    return array_ops.stack([value * (gray + saturation * red), value * (gray + saturation * green),
                            value * (gray + saturation * blue)], -1)


def adjust_saturation(image, saturation_factor, name=None):
    """Scales the HSV saturation by ``saturation_factor``, clipped to [0, 1]; in float32 for images that are not
    float16 or float32."""
    x = _tensor(image)
    orig = x.dtype
    f = _float_image(x)
    _check_three_channels(f, "AdjustSaturation", "but instead has")
    hue, saturation, value = array_ops.unstack(rgb_to_hsv(f), 3, -1)
    factor = cast(convert_to_tensor(saturation_factor), f.dtype)
    saturation = clip_by_value(saturation * factor, convert_to_tensor(0.0, dtype=f.dtype),
                               convert_to_tensor(1.0, dtype=f.dtype))
    return convert_image_dtype(_hsv_to_rgb(hue, saturation, value), orig)


def adjust_hue(image, delta, name=None):
    """Rotates the HSV hue by ``delta`` (in [-1, 1], a fraction of the full turn); in float32 for images that are
    not float16 or float32."""
    if not isinstance(delta, Tensor) and not -1 <= delta <= 1:
        raise ValueError("delta must be in the interval [-1, 1]")
    x = _tensor(image)
    orig = x.dtype
    f = _float_image(x)
    _check_three_channels(f, "AdjustHue", "but instead has")
    hue, saturation, value = array_ops.unstack(rgb_to_hsv(f), 3, -1)
    hue = math_ops.floormod(hue + cast(convert_to_tensor(delta), f.dtype), convert_to_tensor(1.0, dtype=f.dtype))
    return convert_image_dtype(_hsv_to_rgb(hue, saturation, value), orig)


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(pixels * channels)) per image, in float32 whatever the input dtype."""
    x = _tensor(image)
    if x.shape.rank is not None and x.shape.rank < 3:
        raise ValueError(f"'image' (shape {x.shape}) must be at least three-dimensional.")
    x = cast(x, dtypes.float32)
    count = math_ops.reduce_prod(array_ops.shape(x)[-3:])
    mean = reduce_mean(x, [-1, -2, -3], keepdims=True)
    stddev = math_ops.reduce_std(x, [-1, -2, -3], keepdims=True)
    floor = math_ops.rsqrt(cast(count, dtypes.float32))
    return (x - mean) / math_ops.maximum(stddev, floor)


# ---- YIQ and YUV: one 3x3 matrix per direction, applied along the channel axis --------------------------
# The matrices are TensorFlow's (read back by converting the identity with it); each inverse is its own
# table of rounded constants, not the exact inverse of the forward one, so a round trip is as inexact as
# TensorFlow's.
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617], [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1.0, 1.0, 1.0], [0.95598634, -0.27201283, -1.10674021], [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512], [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1.0, 1.0, 1.0], [0.0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0.0]]


def _color_matrix(images, kernel, op):
    x = _tensor(images)
    if not x.dtype.is_floating:
        raise TypeError(f"{op}: images must be a floating-point tensor (TensorFlow converts the color matrix to "
                        f"the images' dtype); got {x.dtype.name}")
    if x.shape.rank is not None and x.shape.rank < 1:
        raise errors.InvalidArgumentError(None, None, f"{op}: images must be at least 1-D, got shape {x.shape}")
    if x.shape.rank is not None and x.shape[-1] is not None and x.shape[-1] != 3:
        raise errors.InvalidArgumentError(None, None, f"{op}: the last dimension must be 3 (the channels); got "
                                                      f"shape {x.shape}")
    k = convert_to_tensor(np.array(kernel, np.float64)) if x.dtype == dtypes.float64 else \
        convert_to_tensor(np.array(kernel, np.float64).astype(x.dtype.as_numpy_dtype))
    flat = array_ops.reshape(x, [-1, 3])
    return array_ops.reshape(math_ops.matmul(flat, k), array_ops.shape(x))


def rgb_to_yiq(images):
    """RGB to YIQ (Y in [0, 1], I in [-0.5957, 0.5957], Q in [-0.5226, 0.5226]) along the last axis."""
    return _color_matrix(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images):
    """YIQ to RGB along the last axis."""
    return _color_matrix(images, _YIQ_TO_RGB, "yiq_to_rgb")


def rgb_to_yuv(images):
    """RGB to YUV (Y in [0, 1], U in [-0.5, 0.5], V in [-0.5, 0.5]) along the last axis."""
    return _color_matrix(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images):
    """YUV to RGB along the last axis."""
    return _color_matrix(images, _YUV_TO_RGB, "yuv_to_rgb")
