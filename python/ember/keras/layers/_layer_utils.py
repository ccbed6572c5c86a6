"""What the convolutional, pooling, normalization, recurrent and attention layers share: argument
normalisation as Keras 2 does it (``conv_utils``), output-length arithmetic for ``compute_output_shape``,
and the error a layer raises on an input it cannot take."""

from ember import dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.keras.mixed_precision import autocast_variable
from ember.ops import math_ops


class LayerInputError(errors.InvalidArgumentError, ValueError):
    """A layer got an input it cannot take. An ``InvalidArgumentError`` as ember's errors are, and a
    ``ValueError`` as Keras raises for an input that does not fit a layer's input spec, so code written for
    either catches it."""


def input_error(layer, expected, got):
    """The error for ``layer`` receiving ``got`` where it needs ``expected``; the message names the layer's
    class and name."""
    return LayerInputError(None, None, f"{type(layer).__name__} '{layer.name}': expected {expected}, got {got}")


def static_shape(x):
    """A tensor's (or a shape's) static shape as a TensorShape."""
    if isinstance(x, TensorShape):
        return x
    if isinstance(x, (list, tuple)):
        return TensorShape(x)
    return x.shape


def as_tensor(x, dtype=None):
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=dtype)


def check_rank(layer, x, rank, layout):
    """Raises unless ``x`` has rank ``rank``; ``layout`` ("[batch, steps, channels]") says what the axes are."""
    shape = static_shape(x)
    if shape.rank is not None and shape.rank != rank:
        raise input_error(layer, f"an input of rank {rank} ({layout})",
                          f"shape {tuple(shape.as_list())} of rank {shape.rank}")


def check_min_rank(layer, x, rank):
    shape = static_shape(x)
    if shape.rank is not None and shape.rank < rank:
        raise input_error(layer, f"an input of rank >= {rank}", f"shape {tuple(shape.as_list())}")


def check_axis_size(layer, x, axis, size, what):
    """Raises unless dimension ``axis`` of ``x`` is ``size`` (the size the layer was built for)."""
    shape = static_shape(x)
    if shape.rank is None:
        return
    dim = shape[axis]
    if dim is not None and dim != size:
        raise input_error(layer, f"{size} {what} (axis {axis}, as when the layer was built)",
                          f"{dim} in shape {tuple(shape.as_list())}")


def known_dim(layer, shape, axis, what):
    """The static size of ``axis``, which the layer needs to create its weights."""
    if shape.rank is None or shape[axis] is None:
        shown = "unknown rank" if shape.rank is None else f"shape {tuple(shape.as_list())}"
        raise input_error(layer, f"a known number of {what} (axis {axis}) to build the weights", shown)
    return int(shape[axis])


def normalize_tuple(value, n, name, allow_zero=False):
    """An int or an iterable of ``n`` ints as a tuple of ``n`` ints (Keras's ``conv_utils.normalize_tuple``)."""
    if isinstance(value, int):
        values = (value,) * n
    else:
        try:
            values = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: {value!r}") from None
        if len(values) != n:
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: {value!r}")
    low = 0 if allow_zero else 1
    if any(v < low for v in values):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers >= {low}. Received: {value!r}")
    return values


def normalize_padding(value, allowed=("valid", "same")):
    if not isinstance(value, str) or value.lower() not in allowed:
        raise ValueError(f"The `padding` argument must be one of {', '.join(map(repr, allowed))}. "
                         f"Received: {value!r}")
    return value.lower()


def normalize_data_format(value):
    if value is None:
        return "channels_last"
    if not isinstance(value, str) or value.lower() not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of 'channels_first', 'channels_last'. "
                         f"Received: {value!r}")
    return value.lower()


def conv_output_length(length, kernel, padding, stride, dilation=1):
    """Keras's ``conv_utils.conv_output_length``: the output length of a convolution or pooling window."""
    if length is None:
        return None
    effective = kernel + (kernel - 1) * (dilation - 1)
    if padding in ("same", "causal"):
        out = length
    else:  # valid
        out = length - effective + 1
    return (out + stride - 1) // stride


def deconv_output_length(length, kernel, padding, output_padding, stride, dilation=1):
    """Keras's ``conv_utils.deconv_output_length``: the output length of a transposed convolution."""
    if length is None:
        return None
    kernel = kernel + (kernel - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return length * stride + max(kernel - stride, 0)
        return length * stride
    pad = kernel // 2 if padding == "same" else 0
    return (length - 1) * stride + kernel - 2 * pad + output_padding


def serialize(module_name, obj):
    """``ember.keras.<module_name>.serialize(obj)`` (initializers, regularizers, constraints, activations) for
    a layer's config; None stays None."""
    if obj is None:
        return None
    import importlib

    module = importlib.import_module(f"ember.keras.{module_name}")
    return module.serialize(obj)


def in_float32(fn, x):
    """``fn(x)``; for a float16/bfloat16 ``x`` (a mixed precision layer's input) computed in float32 and cast
    back, with the layer's autocast variables read as float32: ember's convolution and pooling kernels are
    float32/float64 only (TensorFlow's CPU kernels compute float16 in float32 too, then round)."""
    if x.dtype not in (dtypes.float16, dtypes.bfloat16):
        return fn(x)
    with autocast_variable.enable_auto_cast_variables(dtypes.float32):
        return math_ops.cast(fn(math_ops.cast(x, dtypes.float32)), x.dtype)
