"""``ember.nn``: activations, softmax and the cross-entropy losses, with TensorFlow's signatures.

The checks TF's Python layer makes before its kernels run (data_format, the shapes of labels against
logits) are made here too, with TF's exception types: ValueError, not an op error.
"""

import math

import numpy as np

from ember import _C, dtypes, errors
from ember.framework import side_attributes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops
from ember.ops.math_ops import (abs, cast, elu, erf, erfc, exp, log1p, maximum, pow, reduce_mean,  # noqa: F401
                                reduce_sum, relu, relu6, rsqrt, sigmoid, softplus, squared_difference, tanh)

__all__ = ["bias_add", "dropout", "elu", "gelu", "isotonic_regression", "l2_loss", "l2_normalize", "leaky_relu", "log_softmax", "moments", "relu",
           "relu6", "selu", "sigmoid", "sigmoid_cross_entropy_with_logits", "silu", "softmax",
           "softmax_cross_entropy_with_logits", "softplus", "softsign", "sparse_softmax_cross_entropy_with_logits",
           "swish", "tanh", "weighted_cross_entropy_with_logits"]

_Softmax = _C.op("Softmax")
_LogSoftmax = _C.op("LogSoftmax")
_BiasAdd = _C.op("BiasAdd")
_L2Loss = _C.op("L2Loss")
_SigmoidXent = _C.op("SigmoidCrossEntropyWithLogits")
_SoftmaxXent = _C.op("SoftmaxCrossEntropyWithLogits")
_SparseSoftmaxXent = _C.op("SparseSoftmaxCrossEntropyWithLogits")
_IsotonicRegression = _C.op("IsotonicRegression")
_Neg = _C.op("Neg")
_ISOTONIC_OUTPUT = {dtypes.int8: dtypes.float32, dtypes.int16: dtypes.float32, dtypes.int32: dtypes.float64,
                    dtypes.int64: dtypes.float64}


def isotonic_regression(inputs, decreasing=True, axis=-1):
    """The least-squares fit of ``inputs`` that is non-increasing (``decreasing``) or non-decreasing along
    ``axis``, and the segment of each element (int32: which pooled block, counted from 0 along the axis).
    Floats keep their dtype, int8/int16 give float32, int32/int64 float64, as in TensorFlow."""
    x = inputs if isinstance(inputs, Tensor) else convert_to_tensor(inputs)
    output_dtype = _ISOTONIC_OUTPUT.get(x.dtype, x.dtype)
    rank = x.shape.rank
    if rank is None:
        raise ValueError("isotonic_regression: the rank of the input must be known")
    axis = _to_axis(axis, rank)
    perm = None
    if rank and axis != rank - 1:  # the op works along the last axis: swap `axis` with it, as TensorFlow does
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = array_ops.transpose(x, perm)
    if decreasing:
        output, segments = _IsotonicRegression(x, output_dtype)
    else:
        output, segments = _IsotonicRegression(_Neg(x), output_dtype)
        output = _Neg(output)
    if perm is not None:
        output, segments = array_ops.transpose(output, perm), array_ops.transpose(segments, perm)
    return output, segments


def _to_axis(axis, rank):
    axis = array_ops._to_int(axis, "isotonic_regression", "axis")
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise errors.InvalidArgumentError(None, None, f"isotonic_regression: axis {axis} is out of range for an "
                                                      f"input of rank {rank}")
    return axis % max(rank, 1)


def _tensor(x, dtype_hint=None):
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype_hint=dtype_hint)


def _axis(axis):
    return -1 if axis is None else array_ops._to_int(axis, "softmax", "axis")


def softmax(logits, axis=None, name=None):
    """exp(logits) / sum(exp(logits)) along ``axis`` (default -1)."""
    axis = _axis(axis)
    output = _Softmax(logits, axis)
    if output._is_symbolic and (axis == -1 or axis == (output.shape.rank or 0) - 1):
        side_attributes.softmax_input.set(output, logits)  # TensorFlow's Softmax op: Keras' losses look at it
    return output


def log_softmax(logits, axis=None, name=None):
    """logits - log(sum(exp(logits))) along ``axis`` (default -1)."""
    return _LogSoftmax(logits, _axis(axis))


def bias_add(value, bias, data_format=None, name=None):
    """value + bias along the channel dimension: the last for ``N...C`` formats, 1 for ``NC...``."""
    fmt = "NHWC"
    if data_format is not None:
        data_format = str(data_format)
        if data_format.startswith("NC"):
            fmt = "NCHW"
        elif not (data_format.startswith("N") and data_format.endswith("C")):
            raise ValueError("`data_format` must be of the form `N...C` or `NC...`. "
                             f"Received: data_format={data_format}")
    value = _tensor(value)
    return _BiasAdd(value, _tensor(bias, value.dtype), fmt)


def l2_loss(t, name=None):
    """sum(t ** 2) / 2."""
    return _L2Loss(t)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon))."""
    x = _tensor(x)
    axis = dim if axis is None else axis
    square_sum = reduce_sum(x * x, axis, keepdims=True)
    return x * rsqrt(maximum(square_sum, convert_to_tensor(epsilon, dtype=x.dtype)))


def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) of x over ``axes``; float16 is computed in float32, as TF."""
    x = _tensor(x)
    y = cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
    mean = reduce_mean(y, axes, keepdims=True)
    variance = reduce_mean(squared_difference(y, mean), axes, keepdims=True)
    if not keepdims:
        mean, variance = array_ops.squeeze(mean, axes), array_ops.squeeze(variance, axes)
    return cast(mean, x.dtype), cast(variance, x.dtype)


# ---- activations composed of other ops ------------------------------------------------------------------



def leaky_relu(features, alpha=0.2, name=None):
    """x if x > 0 else alpha * x; integers are computed in float32, as TF."""
    x = _tensor(features)
    if x.dtype.is_integer:
        x = cast(x, dtypes.float32)
    if isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
        return _C.op("LeakyRelu")(x, float(alpha))  # one op, as TensorFlow's graph has it
    return array_ops.where(x > 0, x, x * convert_to_tensor(alpha, dtype=x.dtype))


def selu(features, name=None):
    """scale * (x if x > 0 else alpha * (e^x - 1)) with the self-normalising constants."""
    return _C.op("Selu")(_tensor(features))


def gelu(features, approximate=False, name=None):
    """x * Phi(x) (Phi the standard normal CDF), or its tanh approximation."""
    x = _tensor(features)
    if not x.dtype.is_floating:
        raise ValueError(f"`features.dtype` must be a floating point tensor. Received: features.dtype={x.dtype.name}")
    # TensorFlow's graphs, op for op and constant for constant, so that the results agree bit for bit: its
    # 0.044715 and 1/sqrt(2) are float32 constants cast to x's dtype (float64 gets float32's 1/sqrt(2)), its
    # sqrt(2/pi) a constant of x's dtype; the exact form is erfc(-x / sqrt(2)), not 1 + erf(x / sqrt(2)).
    # The conv fusion pass matches these spellings (Note [Expression activations] in passes/fuse_conv.cc).
    half_x = 0.5 * x
    if approximate:
        coeff = cast(convert_to_tensor(0.044715, dtype=dtypes.float32), x.dtype)
        cube = pow(x, convert_to_tensor(3.0, dtype=x.dtype))
        inner = convert_to_tensor(math.sqrt(2 / math.pi), dtype=x.dtype) * (x + coeff * cube)
        return half_x * (1.0 + tanh(inner))
    inverse_sqrt2 = cast(convert_to_tensor(math.sqrt(0.5), dtype=dtypes.float32), x.dtype)
    return half_x * erfc(-x * inverse_sqrt2)


def silu(features, beta=1.0):
    """x * sigmoid(beta * x)."""
    x = _tensor(features)
    if beta == 1.0:
        return x * sigmoid(x)
    return x * sigmoid(x * convert_to_tensor(beta, dtype=x.dtype))


swish = silu


def softsign(features, name=None):
    """x / (1 + |x|)."""
    return _C.op("Softsign")(_tensor(features))


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -softplus(-_tensor(x))


# ---- losses ----------------------------------------------------------------------------------------------

def _check_same_shape(labels, logits):
    if labels.shape != logits.shape:
        raise ValueError("`logits` and `labels` must have the same shape, "
                         f"received ({logits.shape} vs {labels.shape}).")


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """max(x, 0) - x * z + log(1 + exp(-|x|)) for logits x and labels z of the same shape."""
    if labels is None or logits is None:
        raise ValueError("Both `labels` and `logits` must be provided for sigmoid_cross_entropy_with_logits"
                         f"Received: labels={labels} and logits={logits}")
    logits = _tensor(logits)
    labels = _tensor(labels, logits.dtype)
    _check_same_shape(labels, logits)
    return _SigmoidXent(labels, logits)


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """sigmoid_cross_entropy_with_logits with the positive term weighted by ``pos_weight``:
    (1 - z) * x + (1 + (q - 1) * z) * (log(1 + exp(-|x|)) + max(-x, 0))."""
    logits = _tensor(logits)
    labels = _tensor(labels, logits.dtype)
    _check_same_shape(labels, logits)
    log_weight = 1 + (_tensor(pos_weight, logits.dtype) - 1) * labels
    return (1 - labels) * logits + log_weight * (log1p(exp(-abs(logits))) + relu(-logits))


def _move_axis_to_end(x, axis):
    perm = [i for i in range(x.ndim) if i != axis] + [axis]
    return array_ops.transpose(x, perm)


def _broadcasts_to(shape, target):
    try:
        return np.broadcast_shapes(tuple(shape), target) == target
    except ValueError:
        return False


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits)) along ``axis``. Labels are cast to the logits' dtype and
    broadcast against them; 16-bit logits are computed in float32, as TF."""
    logits = _tensor(logits)
    labels = _tensor(labels)
    precise = cast(logits, dtypes.float32) if logits.dtype in (dtypes.float16, dtypes.bfloat16) else logits
    labels = cast(labels, precise.dtype)
    axis = -1 if axis is None else array_ops._to_int(axis, "softmax_cross_entropy_with_logits", "axis")
    if precise.ndim and axis not in (-1, precise.ndim - 1):
        if not -precise.ndim <= axis < precise.ndim:
            raise ValueError(f"softmax_cross_entropy_with_logits: axis {axis} is out of range for logits of "
                             f"rank {precise.ndim}")
        axis %= precise.ndim
        precise, labels = _move_axis_to_end(precise, axis), _move_axis_to_end(labels, axis)
    shape = tuple(precise.shape.as_list())
    if labels.shape != precise.shape and _broadcasts_to(labels.shape.as_list(), shape):
        labels = array_ops.broadcast_to(labels, shape)
    loss = _SoftmaxXent(precise, labels)[0]
    return cast(loss, logits.dtype)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """-log_softmax(logits)[label] per row; ``labels`` (int32/int64) has the logits' shape without the
    last (class) dimension, and every label must be in [0, classes)."""
    labels = _tensor(labels)
    logits = _tensor(logits)
    if logits.ndim == 0:
        raise ValueError(f"`logits` cannot be a scalar. Received logits={logits}`")
    if labels.ndim != logits.ndim - 1:
        raise ValueError("`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: "
                         f"labels.shape={labels.shape} of rank {labels.ndim} and logits.shape={logits.shape} "
                         f"of rank {logits.ndim}")
    if labels.shape != logits.shape[:-1]:
        raise ValueError("`labels.shape` must equal `logits.shape` except for the last dimension. Received: "
                         f"labels.shape={labels.shape} and logits.shape={logits.shape}")
    precise = cast(logits, dtypes.float32) if logits.dtype == dtypes.float16 else logits
    return cast(_SparseSoftmaxXent(precise, labels)[0], logits.dtype)


def dropout(x, rate=None, noise_shape=None, seed=None, name=None, keep_prob=None, keep_probability=None):
    """Zeroes each element with probability ``rate`` and scales the rest by 1 / (1 - rate).

    TF 1.x spelled the probability to keep as ``keep_prob`` (the seeds write ``keep_probability``); either
    may be given instead of ``rate``."""
    from ember.ops import array_ops, random_ops

    keep = keep_prob if keep_prob is not None else keep_probability
    if rate is None:
        if keep is None:
            raise ValueError("dropout needs `rate` (or the TF 1.x `keep_prob`)")
        rate = 1.0 - float(keep)
    rate = float(rate)
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"rate must be a scalar tensor or a float in the range [0, 1), got {rate}")
    x = x if isinstance(x, Tensor) else convert_to_tensor(x)
    if rate == 0.0:
        return x
    if noise_shape is None and not x.shape.is_fully_defined():
        raise ValueError(f"dropout: the shape of x must be fully known (random ops take static shapes), got "
                         f"{x.shape}; pass noise_shape")
    shape = array_ops._int_list(noise_shape, "dropout", "noise_shape") if noise_shape is not None else x.shape.as_list()
    keep_mask = random_ops.uniform(shape, dtype=x.dtype, seed=seed) >= rate
    scale = convert_to_tensor(1.0 / (1.0 - rate), dtype=x.dtype)
    return array_ops.where(keep_mask, x * scale, array_ops.zeros_like(x))
