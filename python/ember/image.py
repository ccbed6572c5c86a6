"""``ember.image``: TensorFlow's ``tf.image`` basics — resize (bilinear and nearest, on the ResizeBilinear and
ResizeNearestNeighbor ops, with TensorFlow 2's half-pixel centers), flips, adjust_contrast and
convert_image_dtype. Images are [height, width, channels] or [batch, height, width, channels]."""

import numpy as np

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops
from ember.ops.array_ops import clip_by_value
from ember.ops.math_ops import cast, reduce_mean

__all__ = ["ResizeMethod", "adjust_contrast", "convert_image_dtype", "flip_left_right", "flip_up_down", "resize"]

_ResizeBilinear = _C.op("ResizeBilinear")
_ResizeNearest = _C.op("ResizeNearestNeighbor")


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


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False, antialias=False, name=None):
    """Resize to ``size`` = [new_height, new_width]: bilinear gives float32, nearest keeps the dtype."""
    x, single = _image(images)
    method = str(method).lower()
    if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR):
        raise NotImplementedError(f"ember.image.resize: method {method!r} is not supported (bilinear, nearest)")
    if antialias and method == ResizeMethod.BILINEAR:
        raise NotImplementedError("ember.image.resize: antialias=True is not supported")
    if preserve_aspect_ratio:
        raise NotImplementedError("ember.image.resize: preserve_aspect_ratio=True is not supported")
    from ember.ops.nn_conv_ops import _ints

    size_t = size if isinstance(size, Tensor) else convert_to_tensor(_ints(size, "size"), dtype=dtypes.int32)
    if size_t.shape.as_list() != [2]:
        raise ValueError(f"'size' must be a 1-D Tensor of 2 elements: new_height, new_width, got {size}")
    if single:
        x = array_ops.expand_dims(x, 0)
    if method == ResizeMethod.BILINEAR:
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


def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean, the mean per image and channel over height and width; computed in
    float32 for non-float images, as TensorFlow."""
    x = images if isinstance(images, Tensor) else convert_to_tensor(images)
    if x.shape.rank is not None and x.shape.rank < 3:
        raise ValueError(f"adjust_contrast: images must be at least 3-D, got shape {x.shape}")
    orig = x.dtype
    f = x if orig in (dtypes.float16, dtypes.float32, dtypes.float64) else convert_image_dtype(x, dtypes.float32)
    mean = reduce_mean(f, [-3, -2], keepdims=True)
    y = (f - mean) * convert_to_tensor(contrast_factor, dtype=f.dtype) + mean
    return y if orig == f.dtype else convert_image_dtype(y, orig, saturate=True)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Converts between float images in [0, 1] and integer images in [0, MAX], scaling as TensorFlow."""
    x = image if isinstance(image, Tensor) else convert_to_tensor(image)
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
