"""``tf.compat.v1.image``: TensorFlow 1's resize functions, thin calls of the resize kernels with their
``align_corners`` and ``half_pixel_centers`` (both False by default: TensorFlow 1's corner-aligned grid, not
TensorFlow 2's half-pixel one), v1's ``crop_and_resize`` (``box_ind``), and the non-max suppressions, which are
the same in both versions. Images are 4-D [batch, height, width, channels], as the kernels take them."""

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops.image_boxes_ops import (combined_non_max_suppression, non_max_suppression,  # noqa: F401
                                       non_max_suppression_overlaps, non_max_suppression_padded,
                                       non_max_suppression_with_scores)
from ember.ops.image_boxes_ops import crop_and_resize as _crop_and_resize
from ember.ops.math_ops import cast

__all__ = ["combined_non_max_suppression", "crop_and_resize", "non_max_suppression", "non_max_suppression_overlaps",
           "non_max_suppression_padded", "non_max_suppression_with_scores", "resize_area", "resize_bicubic",
           "resize_bilinear", "resize_nearest_neighbor"]


def _operands(images, size):
    x = images if isinstance(images, Tensor) else convert_to_tensor(images)
    return x, size if isinstance(size, Tensor) else convert_to_tensor(size, dtype=dtypes.int32)


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """ResizeBicubic: float32 images of size [new_height, new_width]."""
    return _C.op("ResizeBicubic")(*_operands(images, size), bool(align_corners), bool(half_pixel_centers))


def resize_area(images, size, align_corners=False, name=None):
    """ResizeArea: each output pixel the mean of the input area it covers, as float32."""
    return _C.op("ResizeArea")(*_operands(images, size), bool(align_corners))


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """ResizeBilinear, as float32 (integer images are sampled as float32, as TensorFlow's kernel reads them)."""
    x, size = _operands(images, size)
    x = x if x.dtype in (dtypes.float32, dtypes.float64) else cast(x, dtypes.float32)
    return _C.op("ResizeBilinear")(x, size, bool(align_corners), bool(half_pixel_centers))


def resize_nearest_neighbor(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """ResizeNearestNeighbor, in the images' dtype."""
    x, size = _operands(images, size)
    if x.dtype in (dtypes.float32, dtypes.float64):
        return _C.op("ResizeNearestNeighbor")(x, size, bool(align_corners), bool(half_pixel_centers))
    # ember's kernel is float: float64 holds every 32-bit integer exactly
    return cast(_C.op("ResizeNearestNeighbor")(cast(x, dtypes.float64), size, bool(align_corners),
                                               bool(half_pixel_centers)), x.dtype)


def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear", extrapolation_value=0.0,
                    name=None, box_indices=None):
    """TensorFlow 1's crop_and_resize: the box indices are ``box_ind`` (or ``box_indices``)."""
    if box_ind is not None and box_indices is not None:
        raise ValueError("Cannot specify both 'box_ind' and 'box_indices'.")
    return _crop_and_resize(image, boxes, box_ind if box_ind is not None else box_indices, crop_size, method,
                            extrapolation_value)
