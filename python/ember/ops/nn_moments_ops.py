"""``tf.nn`` statistics and small losses composed of existing ops: sufficient_statistics, normalize_moments,
weighted_moments, crelu, log_poisson_loss. Each follows TensorFlow 2.21's order of operations (so float32
results agree to rounding) as checked by tests/python/test_api_gaps_nn.py."""

import math

import numpy as np

from ember import dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.ops.no_nan_ops import divide_no_nan

__all__ = ["crelu", "log_poisson_loss", "normalize_moments", "sufficient_statistics", "weighted_moments"]


def _t(x, dtype=None):
    if isinstance(x, Tensor):
        return x
    return convert_to_tensor(x, dtype=dtype)


def _axes_list(axes, rank):
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"axes must be a list of ints; got {axes!r}")
        if rank is not None and not -rank <= a < rank:
            raise ValueError(f"axis {a} is out of range for a tensor of rank {rank}")
    return [int(a) % rank if rank else int(a) for a in axes]


def sufficient_statistics(x, axes, shift=None, keepdims=False, name=None):
    """(count, sum of x - shift, sum of (x - shift) ** 2, shift) over axes: the sums moments are made of."""
    x = _t(x)
    axes = _axes_list(axes, x.shape.rank)
    dims = [x.shape[a] for a in axes]
    if all(d is not None for d in dims):
        counts = convert_to_tensor(float(math.prod(dims)), dtype=x.dtype)
    else:
        shape = array_ops.shape(x)
        counts = math_ops.cast(math_ops.reduce_prod(array_ops.gather(shape, axes)), x.dtype)
    if shift is not None:
        shift = _t(shift, x.dtype)
        m = x - shift
    else:
        m = x
    mean_ss = math_ops.reduce_sum(m, axes, keepdims=keepdims)
    var_ss = math_ops.reduce_sum(math_ops.square(m), axes, keepdims=keepdims)
    return counts, mean_ss, var_ss, shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """(mean, variance) from sufficient statistics: mean_ss / counts (+ shift) and
    variance_ss / counts - (mean_ss / counts) ** 2."""
    mean_ss = _t(mean_ss)
    counts, variance_ss = _t(counts, mean_ss.dtype), _t(variance_ss, mean_ss.dtype)
    divisor = math_ops.reciprocal(counts)
    shifted_mean = mean_ss * divisor
    mean = shifted_mean + _t(shift, mean_ss.dtype) if shift is not None else shifted_mean
    variance = variance_ss * divisor - math_ops.square(shifted_mean)
    return mean, variance


def weighted_moments(x, axes, frequency_weights, keepdims=False, name=None):
    """(mean, variance) of x over axes with each element counted frequency_weights times (broadcast to x);
    0 where the weights sum to 0. float16 is computed in float32, as TF."""
    x = _t(x)
    w = _t(frequency_weights, None)
    needs_cast = x.dtype == dtypes.float16
    if needs_cast:
        x = math_ops.cast(x, dtypes.float32)
    if w.dtype != x.dtype:
        w = math_ops.cast(w, x.dtype)
    axes = _axes_list(axes, x.shape.rank)
    weighted_sum = math_ops.reduce_sum(w * x, axes, keepdims=True)
    weight_sum = math_ops.reduce_sum(w + array_ops.zeros_like(x), axes, keepdims=True)
    mean = divide_no_nan(weighted_sum, weight_sum)
    distsq = math_ops.reduce_sum(w * math_ops.squared_difference(x, mean), axes, keepdims=True)
    variance = divide_no_nan(distsq, weight_sum)
    if not keepdims:
        mean, variance = array_ops.squeeze(mean, axes), array_ops.squeeze(variance, axes)
    if needs_cast:
        mean, variance = math_ops.cast(mean, dtypes.float16), math_ops.cast(variance, dtypes.float16)
    return mean, variance


def crelu(features, name=None, axis=-1):
    """concat([relu(x), relu(-x)], axis): both signs of the input as separate, non-negative channels."""
    from ember.ops.nn_ops import relu

    x = _t(features)
    return array_ops.concat([relu(x), relu(-x)], axis)


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(log_input) - log_input * targets: the Poisson negative log-likelihood up to a constant; with
    compute_full_loss, plus Stirling's approximation of log(targets!) where targets > 1."""
    log_input = _t(log_input)
    targets = _t(targets, log_input.dtype)
    if log_input.dtype != targets.dtype:
        raise ValueError(f"log_poisson_loss: log_input and targets must have one dtype; got "
                         f"{log_input.dtype.name} and {targets.dtype.name}")
    if not log_input.shape.is_compatible_with(targets.shape):
        raise ValueError(f"log_input and targets must have the same shape ({log_input.shape} vs {targets.shape})")
    result = math_ops.exp(log_input) - log_input * targets
    if compute_full_loss:
        point_five = convert_to_tensor(0.5, dtype=targets.dtype)
        two_pi = convert_to_tensor(2 * math.pi, dtype=targets.dtype)
        stirling = targets * math_ops.log(targets) - targets + point_five * math_ops.log(two_pi * targets)
        zeros = array_ops.zeros_like(targets)
        ones = array_ops.ones_like(targets)
        cond = math_ops.logical_and(targets >= zeros, targets <= ones)
        result = result + array_ops.where(cond, zeros, stirling)
    return result
