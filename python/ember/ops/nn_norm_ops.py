"""``tf.nn``'s normalization: batch_normalization (composed of element-wise ops, as TensorFlow's),
fused_batch_norm (the FusedBatchNormV3 op) and local_response_normalization (LRN)."""

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops.math_ops import cast, rsqrt

__all__ = ["batch_normalization", "fused_batch_norm", "local_response_normalization", "lrn"]

_FusedBatchNormV3 = _C.op("FusedBatchNormV3")
_LRN = _C.op("LRN")


def _tensor(x, dtype=None):
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=dtype)


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + variance_epsilon) + offset, broadcasting; offset and scale may be
    None."""
    x = _tensor(x)
    # As TensorFlow's, the statistics keep their dtype (float32 ones for a 16-bit x) until the last casts.
    variance = _tensor(variance, x.dtype)
    inv = rsqrt(variance + _tensor(variance_epsilon, variance.dtype))
    if scale is not None:
        inv = inv * _tensor(scale, inv.dtype)
    shift = (_tensor(offset, inv.dtype) if offset is not None else 0) - _tensor(mean, inv.dtype) * inv
    return x * cast(inv, x.dtype) + cast(shift, x.dtype)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001, data_format="NHWC",
                     is_training=True, name=None, exponential_avg_factor=1.0):
    """(y, batch or running mean, batch or running variance) of FusedBatchNormV3. Training without mean and
    variance (and exponential_avg_factor 1) takes the batch's statistics only."""
    x = _tensor(x)
    if x.shape.rank is not None and x.shape.rank not in (4, 5):
        raise ValueError(f"fused_batch_norm: x must be 4-D or 5-D, got shape {x.shape}")
    if not is_training or exponential_avg_factor != 1.0:
        if mean is None or variance is None:
            raise ValueError("fused_batch_norm: both 'mean' and 'variance' must be given for inference or a "
                             "running average (exponential_avg_factor != 1)")
    # TensorFlow's U: a 16-bit x has float32 scale, offset and statistics.
    stats_dtype = dtypes.float32 if x.dtype in (dtypes.float16, dtypes.bfloat16) else x.dtype
    empty = convert_to_tensor([], dtype=stats_dtype)
    mean = empty if mean is None else _tensor(mean, stats_dtype)
    variance = empty if variance is None else _tensor(variance, stats_dtype)
    # TensorFlow raises epsilon to cuDNN's minimum; its CPU kernel then uses the same value.
    try:
        epsilon = max(float(epsilon), 1.001e-5)
        exponential_avg_factor = float(exponential_avg_factor)
    except (TypeError, ValueError) as e:
        raise TypeError(f"fused_batch_norm: epsilon and exponential_avg_factor must be floats, got {epsilon!r}, "
                        f"{exponential_avg_factor!r}") from e
    fmt = str(data_format)
    if x.shape.rank == 5 and fmt in ("NHWC", "NCHW"):
        fmt = "NDHWC" if fmt == "NHWC" else "NCDHW"
    y, batch_mean, batch_var, *_ = _FusedBatchNormV3(x, _tensor(scale, stats_dtype), _tensor(offset, stats_dtype), mean,
                                                     variance, epsilon, float(exponential_avg_factor), fmt,
                                                     bool(is_training))
    return y, batch_mean, batch_var


def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5, name=None):
    """input / (bias + alpha * sum over a window of 2 * depth_radius + 1 channels of input^2)^beta."""
    from ember.ops.nn_conv_ops import _int

    x = _tensor(input, dtypes.float32)
    try:
        params = [float(bias), float(alpha), float(beta)]
    except (TypeError, ValueError) as e:
        raise TypeError(f"local_response_normalization: bias, alpha and beta must be floats, got {bias!r}, "
                        f"{alpha!r}, {beta!r}") from e
    return _LRN(x, _int(depth_radius, "depth_radius"), *params)


lrn = local_response_normalization
