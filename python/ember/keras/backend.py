"""``ember.keras.backend``: Keras 2's backend functions (``K.mean``, ``K.dot``, ``K.conv2d``, ``K.rnn``,
``K.function`` ...), as ``tf_keras.backend`` defines them, over ember's ops. Older Keras code writes its
losses, metrics and layers with them."""

import contextlib
import threading

import numpy as np

import ember as tf
from ember import dtypes
from ember.keras.engine import base_layer

_FLOATX = ["float32"]
_EPSILON = [1e-7]
_IMAGE_DATA_FORMAT = ["channels_last"]


# Seeds for random layers made without one: utils.set_random_seed(seed) sets `generator` to random.Random(seed),
# as tf_keras' backend does, so such layers draw as tf_keras' do after the same call.
_SEED_GENERATOR = threading.local()

def clear_session():
    """Resets layer-name numbering ("dense", "dense_1", ... starts again)."""
    base_layer.reset_names()


def floatx():
    return _FLOATX[0]


def set_floatx(value):
    _FLOATX[0] = dtypes.as_dtype(value).name


def epsilon():
    return _EPSILON[0]


def set_epsilon(value):
    _EPSILON[0] = float(value)


def image_data_format():
    return _IMAGE_DATA_FORMAT[0]


def set_image_data_format(value):
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: {value}")
    _IMAGE_DATA_FORMAT[0] = value


def learning_phase():
    value = base_layer._learning_phase[0]
    return 0 if value is None else int(value)


def set_learning_phase(value):
    if value not in (0, 1):
        raise ValueError(f"Expected learning phase to be 0 or 1. Received: {value}")
    base_layer._learning_phase[0] = bool(value)


def get_uid(prefix=""):
    base_layer._name_counts[prefix] += 1
    return base_layer._name_counts[prefix]


def get_value(x):
    """A variable's or tensor's value as NumPy (a float32 scalar stays a NumPy scalar, as Keras')."""
    return x.numpy() if hasattr(x, "numpy") else x


def set_value(x, value):
    import numpy as np

    x.assign(np.asarray(value, dtype=x.dtype.as_numpy_dtype))


def batch_get_value(tensors):
    return [get_value(x) for x in tensors]


def batch_set_value(tuples):
    for x, value in tuples:
        set_value(x, value)


def int_shape(x):
    """The static shape as a tuple (None for an unknown rank); NumPy arrays give theirs, as in Keras."""
    shape = x.shape
    if isinstance(shape, tuple):
        return shape
    return tuple(shape.as_list()) if shape.rank is not None else None


def ndim(x):
    shape = x.shape
    return len(shape) if isinstance(shape, tuple) else shape.rank


def dtype(x):
    return x.dtype.name


def is_keras_tensor(x):
    from ember.keras.engine.keras_tensor import KerasTensor

    return isinstance(x, KerasTensor)


# ---- element-wise math and reductions


def _floatx_if_bool(x):
    x = tf.convert_to_tensor(x)
    return tf.cast(x, floatx()) if x.dtype == tf.bool else x


def _as_bool(x):
    x = tf.convert_to_tensor(x)
    return x if x.dtype == tf.bool else tf.cast(x, tf.bool)


def abs(x):  # noqa: A001 - Keras' names shadow Python's here, as in tf_keras.backend
    return tf.abs(x)


def exp(x):
    return tf.exp(x)


def log(x):
    return tf.math.log(x)


def sin(x):
    return tf.sin(x)


def cos(x):
    return tf.cos(x)


def round(x):  # noqa: A001
    return tf.round(x)


def sign(x):
    return tf.sign(x)


def square(x):
    return tf.square(x)


def sqrt(x):
    """The square root of x clipped at 0 below (Keras' guard against tiny negative rounding)."""
    x = tf.convert_to_tensor(x)
    return tf.sqrt(tf.clip_by_value(x, tf.zeros([], x.dtype), tf.constant(np.inf, x.dtype)))


def pow(x, a):  # noqa: A001
    return tf.pow(x, a)


def sigmoid(x):
    return tf.sigmoid(x)


def tanh(x):
    return tf.tanh(x)


def softplus(x):
    return tf.math.softplus(x)


def softsign(x):
    return tf.math.softsign(x)


def hard_sigmoid(x):
    x = tf.convert_to_tensor(x)
    return tf.clip_by_value(x * tf.constant(0.2, x.dtype) + tf.constant(0.5, x.dtype), tf.zeros([], x.dtype),
                            tf.ones([], x.dtype))


def softmax(x, axis=-1):
    return tf.nn.softmax(x, axis=axis)


def elu(x, alpha=1.0):
    result = tf.nn.elu(x)
    return result if alpha == 1 else tf.where(x > 0, result, alpha * result)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """max(x, 0) with Keras' options: a leak ``alpha`` below ``threshold`` (alpha * (x - threshold)), a
    ceiling ``max_value``, and values up to ``threshold`` set to 0."""
    x = tf.convert_to_tensor(x)
    if alpha != 0.0 and max_value is None and threshold == 0:
        return tf.nn.leaky_relu(x, alpha=alpha)
    below = tf.nn.relu(threshold - x) if alpha != 0.0 else None
    if threshold != 0:
        out = x * tf.cast(tf.greater(x, threshold), x.dtype)
    elif max_value == 6:
        out, max_value = tf.nn.relu6(x), None
    else:
        out = tf.nn.relu(x)
    if max_value is not None:
        out = tf.clip_by_value(out, tf.zeros([], x.dtype), tf.constant(max_value, x.dtype))
    if below is not None:
        out = out - tf.constant(alpha, x.dtype) * below
    return out


def clip(x, min_value, max_value):
    if isinstance(min_value, (int, float)) and isinstance(max_value, (int, float)) and max_value < min_value:
        max_value = min_value
    x = tf.convert_to_tensor(x)
    low = -np.inf if min_value is None else min_value
    high = np.inf if max_value is None else max_value
    return tf.clip_by_value(x, tf.cast(low, x.dtype), tf.cast(high, x.dtype))


def equal(x, y):
    return tf.equal(x, y)


def not_equal(x, y):
    return tf.not_equal(x, y)


def greater(x, y):
    return tf.greater(x, y)


def greater_equal(x, y):
    return tf.greater_equal(x, y)


def less(x, y):
    return tf.less(x, y)


def less_equal(x, y):
    return tf.less_equal(x, y)


def maximum(x, y):
    return tf.maximum(x, y)


def minimum(x, y):
    return tf.minimum(x, y)


def sum(x, axis=None, keepdims=False):  # noqa: A001
    return tf.reduce_sum(x, axis, keepdims)


def prod(x, axis=None, keepdims=False):
    return tf.reduce_prod(x, axis, keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return tf.reduce_max(x, axis, keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return tf.reduce_min(x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    return tf.reduce_mean(_floatx_if_bool(x), axis, keepdims)


def var(x, axis=None, keepdims=False):
    return tf.math.reduce_variance(_floatx_if_bool(x), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    return tf.math.reduce_std(_floatx_if_bool(x), axis=axis, keepdims=keepdims)


def all(x, axis=None, keepdims=False):  # noqa: A001
    return tf.reduce_all(_as_bool(x), axis, keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001
    return tf.reduce_any(_as_bool(x), axis, keepdims)


def argmax(x, axis=-1):
    return tf.argmax(x, axis)


def argmin(x, axis=-1):
    return tf.argmin(x, axis)


def cumsum(x, axis=0):
    return tf.cumsum(x, axis=axis)


def cumprod(x, axis=0):
    return tf.math.cumprod(x, axis=axis)


def l2_normalize(x, axis=None):
    return tf.math.l2_normalize(x, axis=axis)


def in_top_k(predictions, targets, k):
    return tf.math.in_top_k(targets, predictions, k)


# ---- creating tensors and variables


def _dtype_or_floatx(dtype):
    return dtypes.as_dtype(dtype or floatx())


def variable(value, dtype=None, name=None, constraint=None):
    if isinstance(value, tf.SparseTensor):
        return value
    return tf.Variable(value, dtype=_dtype_or_floatx(dtype), name=name, constraint=constraint)


def constant(value, dtype=None, shape=None, name=None):
    return tf.constant(value, dtype=_dtype_or_floatx(dtype), shape=shape, name=name)


def _variable_if_fully_known(value, dtype, name):
    # Keras makes these variables when the shape is fully known (a symbolic shape gives a tensor)
    if value.shape.rank is not None and None not in value.shape.as_list():
        return variable(value, dtype=dtype, name=name)
    return value


def zeros(shape, dtype=None, name=None):
    return _variable_if_fully_known(tf.zeros(shape, _dtype_or_floatx(dtype)), dtype, name)


def ones(shape, dtype=None, name=None):
    return _variable_if_fully_known(tf.ones(shape, _dtype_or_floatx(dtype)), dtype, name)


def eye(size, dtype=None, name=None):
    return variable(tf.eye(size, dtype=_dtype_or_floatx(dtype)), dtype, name)


def zeros_like(x, dtype=None, name=None):
    return tf.zeros_like(x, dtype=dtype)


def ones_like(x, dtype=None, name=None):
    return tf.ones_like(x, dtype=dtype)


def arange(start, stop=None, step=1, dtype="int32"):
    if stop is None and isinstance(start, (int, float)) and start < 0:
        start = 0
    if stop is None:
        start, stop = 0, start
    return tf.cast(tf.range(start, stop, step), dtype)


def cast(x, dtype):
    return tf.cast(x, dtype)


def cast_to_floatx(x):
    if isinstance(x, (tf.Tensor, tf.Variable)):
        return tf.cast(x, floatx())
    return np.asarray(x, dtype=floatx())


def count_params(x):
    return int(np.prod(x.shape.as_list()))


def _seed(seed):
    return int(np.random.randint(10_000_000)) if seed is None else seed


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return tf.random.normal(shape, mean=mean, stddev=stddev, dtype=_dtype_or_floatx(dtype), seed=_seed(seed))


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return tf.random.uniform(shape, minval=minval, maxval=maxval, dtype=_dtype_or_floatx(dtype), seed=_seed(seed))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return tf.random.truncated_normal(shape, mean=mean, stddev=stddev, dtype=_dtype_or_floatx(dtype),
                                      seed=_seed(seed))


def random_bernoulli(shape, p=0.0, dtype=None, seed=None):
    dtype = _dtype_or_floatx(dtype)
    return tf.where(random_uniform(shape, dtype=dtype, seed=seed) <= p, tf.ones(shape, dtype),
                    tf.zeros(shape, dtype))


random_binomial = random_bernoulli  # Keras' deprecated name for the same draw


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    return variable(random_normal(shape, mean, scale, dtype, seed), dtype, name)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    return variable(random_uniform(shape, low, high, dtype, seed), dtype, name)


def update(x, new_x):
    return x.assign(new_x)


def update_add(x, increment):
    return x.assign_add(increment)


def update_sub(x, decrement):
    return x.assign_sub(decrement)


def moving_average_update(x, value, momentum):
    """x <- x - (x - value) * (1 - momentum): the moving average Keras' BatchNormalization keeps."""
    value = tf.cast(value, x.dtype)
    return x.assign_sub((x - value) * tf.cast(1.0 - momentum, x.dtype))


# ---- shapes


def shape(x):
    return tf.shape(x)


def reshape(x, shape):  # noqa: F811 - Keras' argument name
    return tf.reshape(x, shape)


def flatten(x):
    return tf.reshape(x, [-1])


def batch_flatten(x):
    return tf.reshape(x, tf.stack([tf.shape(x)[0], -1]))


def expand_dims(x, axis=-1):
    return tf.expand_dims(x, axis)


def squeeze(x, axis):
    return tf.squeeze(x, [axis])


def transpose(x):
    return tf.transpose(x)


def permute_dimensions(x, pattern):
    return tf.transpose(x, perm=pattern)


def stack(x, axis=0):
    return tf.stack(x, axis=axis)


def concatenate(tensors, axis=-1):
    if axis < 0:
        rank = ndim(tensors[0])
        axis = axis % rank if rank else 0
    if builtins_all(isinstance(t, tf.SparseTensor) for t in tensors):
        return tf.sparse.concat(axis, tensors)
    if builtins_all(isinstance(t, tf.RaggedTensor) for t in tensors):
        return tf.concat(tensors, axis)
    return tf.concat([to_dense(t) for t in tensors], axis)


def gather(reference, indices):
    return tf.gather(reference, indices)


def one_hot(indices, num_classes):
    return tf.one_hot(indices, depth=num_classes, axis=-1)


def reverse(x, axes):
    return tf.reverse(x, [axes] if isinstance(axes, int) else list(axes))


def tile(x, n):
    return tf.tile(x, [n] if isinstance(n, int) else n)


def repeat(x, n):
    """A [batch, dim] tensor repeated n times along a new axis 1: [batch, n, dim]."""
    if ndim(x) != 2:
        raise ValueError(f"repeat: x must be 2D [batch, dim], got rank {ndim(x)}")
    return tf.tile(tf.expand_dims(x, 1), [1, n, 1])


def repeat_elements(x, rep, axis):
    return tf.repeat(x, rep, axis=axis)


def temporal_padding(x, padding=(1, 1)):
    return tf.pad(x, [[0, 0], list(padding), [0, 0]])


def _spatial_padding(x, padding, data_format, rank):
    data_format = data_format or image_data_format()
    _check_data_format(data_format)
    spatial = [list(p) for p in padding]
    if len(spatial) != rank:
        raise ValueError(f"padding must give {rank} pairs, got {padding!r}")
    pads = [[0, 0], [0, 0]] + spatial if data_format == "channels_first" else [[0, 0]] + spatial + [[0, 0]]
    return tf.pad(x, pads)


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    return _spatial_padding(x, padding, data_format, 2)


def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None):
    return _spatial_padding(x, padding, data_format, 3)


def resize_images(x, height_factor, width_factor, data_format, interpolation="nearest"):
    _check_data_format(data_format)
    if interpolation not in ("nearest", "bilinear", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
                             "mitchellcubic"):
        raise ValueError(f"`interpolation` argument should be one of: nearest, bilinear, ..., got "
                         f"{interpolation!r}")
    if data_format == "channels_first":
        x = tf.transpose(x, [0, 2, 3, 1])
    size = tf.shape(x)[1:3] * tf.constant([height_factor, width_factor])
    x = tf.image.resize(x, size, method=interpolation)
    return tf.transpose(x, [0, 3, 1, 2]) if data_format == "channels_first" else x


def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    _check_data_format(data_format)
    first = 2 if data_format == "channels_first" else 1
    x = repeat_elements(x, depth_factor, axis=first)
    x = repeat_elements(x, height_factor, axis=first + 1)
    return repeat_elements(x, width_factor, axis=first + 2)


# ---- products


def dot(x, y):
    """x @ y, where either may have more than 2 dims: x's last axis against y's second-to-last, the result
    [*x.shape[:-1], *y.shape[:-2], y.shape[-1]] (Theano's dot, which Keras kept)."""
    if isinstance(x, tf.SparseTensor):
        return tf.sparse.sparse_dense_matmul(x, y)
    x_rank, y_rank = ndim(x), ndim(y)
    if x_rank is not None and y_rank is not None and (x_rank > 2 or y_rank > 2):
        x_dims = [d if d is not None else -1 for d in int_shape(x)]
        y_dims = int_shape(y)
        y_perm = list(range(y_rank))
        y_perm = [y_perm.pop(-2)] + y_perm
        x_flat = tf.reshape(x, [-1, x_dims[-1]])
        y_flat = tf.reshape(tf.transpose(y, y_perm), [y_dims[-2], -1])
        return tf.reshape(tf.matmul(x_flat, y_flat), x_dims[:-1] + list(y_dims[:-2]) + [y_dims[-1]])
    return tf.matmul(x, y)


def batch_dot(x, y, axes=None):
    """Per batch entry, x contracted with y over ``axes`` (x's axis axes[0], y's axis axes[1]); the result
    has x's remaining axes, then y's; a batch of scalars comes back as [batch, 1]."""
    x_rank, y_rank = ndim(x), ndim(y)
    if x_rank < 2 or y_rank < 2:
        raise ValueError(f"Cannot do batch_dot on inputs with rank < 2. Received inputs with ranks {x_rank} "
                         f"and {y_rank}.")
    if axes is None:
        axes = [x_rank - 1, y_rank - 1] if y_rank == 2 else [x_rank - 1, y_rank - 2]
    elif isinstance(axes, int):
        axes = [axes, axes]
    axes = [a % r if a < 0 else a for a, r in zip(axes, (x_rank, y_rank))]
    if 0 in axes:
        raise ValueError(f"Cannot perform batch_dot over axis 0: it is the batch axis. Received axes {axes}")
    x_dims, y_dims = int_shape(x), int_shape(y)
    if x_dims[axes[0]] is not None and y_dims[axes[1]] is not None and x_dims[axes[0]] != y_dims[axes[1]]:
        raise ValueError(f"Cannot do batch_dot on inputs with shapes {x_dims} and {y_dims} with axes={axes}: "
                         f"x.shape[{axes[0]}] != y.shape[{axes[1]}] ({x_dims[axes[0]]} != {y_dims[axes[1]]}).")
    x_rest = [d for d in range(1, x_rank) if d != axes[0]]
    y_rest = [d for d in range(1, y_rank) if d != axes[1]]
    x_t = tf.transpose(x, [0] + x_rest + [axes[0]])
    y_t = tf.transpose(y, [0, axes[1]] + y_rest)
    batch = tf.shape(x)[0]
    contracted = tf.shape(x)[axes[0]]
    x_m = tf.reshape(x_t, tf.stack([batch, -1, contracted]))
    y_m = tf.reshape(y_t, tf.stack([batch, contracted, -1]))
    product = tf.matmul(x_m, y_m)
    x_shape, y_shape = tf.shape(x), tf.shape(y)
    out_dims = [batch] + [x_shape[d] for d in x_rest] + [y_shape[d] for d in y_rest]
    if len(out_dims) == 1:
        out_dims.append(1)
    return tf.reshape(product, tf.stack(out_dims))


# ---- neural-network functions


def _check_data_format(data_format):
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Unknown data_format: {data_format}")


def bias_add(x, bias, data_format=None):
    data_format = data_format or image_data_format()
    _check_data_format(data_format)
    bias = tf.convert_to_tensor(bias)
    x_rank, bias_rank = ndim(x), ndim(bias)
    if bias_rank != 1 and bias_rank != x_rank - 1:
        raise ValueError(f"Unexpected bias dimensions {bias_rank}. Expected it to be 1 or {x_rank - 1} "
                         f"dimensions")
    if bias_rank == 1 and data_format == "channels_first" and x_rank > 2:
        return x + tf.reshape(bias, [1, -1] + [1] * (x_rank - 2))
    if bias_rank == 1:
        return tf.nn.bias_add(x, bias)
    dims = int_shape(bias)
    if data_format == "channels_first" and x_rank > 2:
        # Keras reshapes (not transposes) a [..., channels] bias to [1, channels, ...]: the same bytes read in
        # the channels-first order, which is what code written against it expects
        return x + tf.reshape(bias, (1, dims[-1]) + tuple(dims[:-1]))
    return x + tf.reshape(bias, (1,) + tuple(dims))


def dropout(x, level, noise_shape=None, seed=None):
    return tf.nn.dropout(x, rate=level, noise_shape=noise_shape, seed=_seed(seed))


def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):  # noqa: F811 - Keras' names
    return tf.nn.batch_normalization(x, mean, var, beta, gamma, epsilon)


def normalize_batch_in_training(x, gamma, beta, reduction_axes, epsilon=1e-3):
    """x normalized by its own moments over ``reduction_axes``; returns (normalized, mean, variance)."""
    batch_mean, batch_var = tf.nn.moments(x, list(reduction_axes))
    kept = [int_shape(x)[a] if a not in reduction_axes else 1 for a in range(ndim(x))]
    kept = [d if d is not None else -1 for d in kept]
    shaped = [tf.reshape(t, kept) if t is not None else None for t in (batch_mean, batch_var, beta, gamma)]
    normed = tf.nn.batch_normalization(x, shaped[0], shaped[1], shaped[2], shaped[3], epsilon)
    return normed, batch_mean, batch_var


def _padding_name(padding, what):
    if padding not in ("same", "valid", "causal"):
        raise ValueError(f"{what}: unknown padding {padding!r}: expected 'same' or 'valid'")
    return padding.upper()


def _channels_last(x, data_format, rank):
    data_format = data_format or image_data_format()
    _check_data_format(data_format)
    if data_format == "channels_first":
        return tf.transpose(x, [0] + list(range(2, rank + 2)) + [1]), True
    return x, False


def _back_to_channels_first(x, was_first, rank):
    return tf.transpose(x, [0, rank + 1] + list(range(1, rank + 1))) if was_first else x


def _tuple(value, rank):
    return (value,) * rank if isinstance(value, int) else tuple(value)


def _convolution(x, kernel, strides, padding, data_format, dilation_rate, rank, what):
    x, first = _channels_last(x, data_format, rank)
    if padding == "causal":
        if rank != 1:
            raise ValueError(f"{what}: causal padding is only for 1D convolutions")
        left = dilation_rate * (int_shape(kernel)[0] - 1) if isinstance(dilation_rate, int) else \
            dilation_rate[0] * (int_shape(kernel)[0] - 1)
        x = temporal_padding(x, (left, 0))
        padding = "valid"
    out = tf.nn.convolution(x, kernel, strides=_tuple(strides, rank), padding=_padding_name(padding, what),
                            dilations=_tuple(dilation_rate, rank))
    return _back_to_channels_first(out, first, rank)


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    return _convolution(x, kernel, strides, padding, data_format, dilation_rate, 1, "conv1d")


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    return _convolution(x, kernel, strides, padding, data_format, dilation_rate, 2, "conv2d")


def conv3d(x, kernel, strides=(1, 1, 1), padding="valid", data_format=None, dilation_rate=(1, 1, 1)):
    return _convolution(x, kernel, strides, padding, data_format, dilation_rate, 3, "conv3d")


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding="valid", data_format=None,
                     dilation_rate=(1, 1)):
    x, first = _channels_last(x, data_format, 2)
    output_shape = list(output_shape)
    if first:
        output_shape = [output_shape[0], output_shape[2], output_shape[3], output_shape[1]]
    if output_shape[0] is None:
        output_shape = tf.concat([tf.shape(x)[:1], tf.constant(output_shape[1:], tf.int32)], 0)
    out = tf.nn.conv2d_transpose(x, kernel, output_shape, (1,) + _tuple(strides, 2) + (1,),
                                 padding=_padding_name(padding, "conv2d_transpose"),
                                 dilations=(1,) + _tuple(dilation_rate, 2) + (1,))
    return _back_to_channels_first(out, first, 2)


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding="valid", data_format=None,
                     dilation_rate=(1, 1)):
    x, first = _channels_last(x, data_format, 2)
    out = tf.nn.depthwise_conv2d(x, depthwise_kernel, (1,) + _tuple(strides, 2) + (1,),
                                 _padding_name(padding, "depthwise_conv2d"), dilations=_tuple(dilation_rate, 2))
    return _back_to_channels_first(out, first, 2)


def separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding="valid", data_format=None,
                     dilation_rate=(1, 1)):
    x, first = _channels_last(x, data_format, 2)
    out = tf.nn.separable_conv2d(x, depthwise_kernel, pointwise_kernel, (1,) + _tuple(strides, 2) + (1,),
                                 _padding_name(padding, "separable_conv2d"), dilations=_tuple(dilation_rate, 2))
    return _back_to_channels_first(out, first, 2)


def _pool(x, pool_size, strides, padding, data_format, pool_mode, rank, what):
    if pool_mode not in ("max", "avg"):
        raise ValueError(f"Invalid pooling mode: {pool_mode}")
    x, first = _channels_last(x, data_format, rank)
    pool = tf.nn.max_pool if pool_mode == "max" else tf.nn.avg_pool
    out = pool(x, _tuple(pool_size, rank), _tuple(strides, rank), _padding_name(padding, what))
    return _back_to_channels_first(out, first, rank)


def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 2, "pool2d")


def pool3d(x, pool_size, strides=(1, 1, 1), padding="valid", data_format=None, pool_mode="max"):
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 3, "pool3d")


def _local_conv(inputs, kernel, kernel_size, strides, output_shape, data_format, what):
    """Unshared-weight convolution: each output position has its own kernel, [positions, window, filters].
    The windows are gathered into one [positions, batch, window] tensor and multiplied by the kernels at
    once."""
    data_format = data_format or image_data_format()
    _check_data_format(data_format)
    rank = len(kernel_size)
    windows = []
    for position in np.ndindex(*output_shape):
        starts = [p * s for p, s in zip(position, strides)]
        slices = [slice(s, s + k) for s, k in zip(starts, kernel_size)]
        if data_format == "channels_first":
            window = inputs[(slice(None), slice(None), *slices)]
        else:
            window = inputs[(slice(None), *slices, slice(None))]
        windows.append(tf.reshape(window, tf.stack([1, tf.shape(inputs)[0], -1])))
    stacked = tf.concat(windows, 0)
    out = tf.matmul(stacked, kernel)  # [positions, batch, filters]
    filters = int_shape(kernel)[-1]
    out = tf.reshape(out, tf.concat([tf.constant(list(output_shape), tf.int32), tf.shape(inputs)[:1],
                                     tf.constant([filters], tf.int32)], 0))
    if data_format == "channels_first":
        return tf.transpose(out, [rank, rank + 1] + list(range(rank)))
    return tf.transpose(out, [rank] + list(range(rank)) + [rank + 1])


def local_conv1d(inputs, kernel, kernel_size, strides, data_format=None):
    length = int_shape(inputs)[2] if (data_format or image_data_format()) == "channels_first" else \
        int_shape(inputs)[1]
    steps = (length - kernel_size[0]) // strides[0] + 1
    return _local_conv(inputs, kernel, kernel_size, strides, (steps,), data_format, "local_conv1d")


def local_conv2d(inputs, kernel, kernel_size, strides, output_shape, data_format=None):
    return _local_conv(inputs, kernel, kernel_size, strides, tuple(output_shape), data_format, "local_conv2d")


# ---- losses, as Keras' backend names them: (target, output), no label smoothing


def binary_crossentropy(target, output, from_logits=False):
    from ember.keras import losses

    output, from_logits = losses._activation_logits(output, from_logits, "sigmoid", "binary_crossentropy")
    target, output = tf.convert_to_tensor(target), tf.convert_to_tensor(output)
    return losses._binary_crossentropy_entries(tf.cast(target, output.dtype), output, from_logits)


def binary_focal_crossentropy(target, output, apply_class_balancing=False, alpha=0.25, gamma=2.0,
                              from_logits=False):
    target, output = tf.convert_to_tensor(target), tf.convert_to_tensor(output)
    target = tf.cast(target, output.dtype)
    probabilities = tf.sigmoid(output) if from_logits else output
    p_t = target * probabilities + (1 - target) * (1 - probabilities)
    focal = tf.pow(1.0 - p_t, tf.cast(gamma, output.dtype)) * binary_crossentropy(target, output, from_logits)
    if apply_class_balancing:
        focal = (target * alpha + (1 - target) * (1 - alpha)) * focal
    return focal


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    from ember.keras import losses

    return losses.categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def categorical_focal_crossentropy(target, output, alpha=0.25, gamma=2.0, from_logits=False, axis=-1):
    from ember.keras import losses

    return losses.categorical_focal_crossentropy(target, output, alpha=alpha, gamma=gamma,
                                                 from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1, ignore_class=None):
    from ember.keras import losses

    return losses.sparse_categorical_crossentropy(target, output, from_logits=from_logits, axis=axis,
                                                  ignore_class=ignore_class)


# ---- control flow, gradients, training phase


def _value(x):
    return x() if callable(x) else x


def switch(condition, then_expression, else_expression):
    """then_expression where condition holds, else else_expression: a scalar condition picks one
    (tf.cond, so only that branch runs); a tensor condition picks element-wise, lining up with the
    expressions' leading axes."""
    condition = _as_bool(condition)
    if not condition.shape.rank:
        return tf.cond(condition, lambda: _value(then_expression), lambda: _value(else_expression))
    then_value, else_value = tf.convert_to_tensor(_value(then_expression)), \
        tf.convert_to_tensor(_value(else_expression))
    missing = ndim(then_value) - ndim(condition)
    if missing < 0:
        raise ValueError(f"Rank of `condition` should be less than or equal to rank of `then_expression` and "
                         f"`else_expression`. ndim(condition)={ndim(condition)}, "
                         f"ndim(then_expression)={ndim(then_value)}")
    if missing:
        condition = tf.reshape(condition, tf.concat([tf.shape(condition), tf.ones([missing], tf.int32)], 0))
        condition = tf.logical_and(condition, tf.ones_like(then_value, tf.bool))
    return tf.where(condition, then_value, else_value)


def in_train_phase(x, alt, training=None):
    if training is None:
        training = learning_phase()
    if training is True or (isinstance(training, int) and training == 1):
        return _value(x)
    if training is False or (isinstance(training, int) and training == 0):
        return _value(alt)
    return switch(training, x, alt)


def in_test_phase(x, alt, training=None):
    return in_train_phase(alt, x, training=training)


@contextlib.contextmanager
def learning_phase_scope(value):
    if value not in (0, 1):
        raise ValueError(f"Expected learning phase to be 0 or 1. Received: {value}")
    saved = base_layer._learning_phase[0]
    base_layer._learning_phase[0] = bool(value)
    try:
        yield
    finally:
        base_layer._learning_phase[0] = saved


def map_fn(fn, elems, name=None, dtype=None):
    return tf.map_fn(fn, elems, dtype=dtype)


def foldl(fn, elems, initializer=None, name=None):
    return tf.foldl(fn, elems, initializer=initializer)


def foldr(fn, elems, initializer=None, name=None):
    return tf.foldr(fn, elems, initializer=initializer)


def gradients(loss, variables):
    return tf.gradients(loss, variables)


def stop_gradient(variables):
    if isinstance(variables, (list, tuple)):
        return [tf.stop_gradient(v) for v in variables]
    return tf.stop_gradient(variables)


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None, unroll=False,
        input_length=None, time_major=False, zero_output_for_mask=False, return_all_outputs=True):
    """Runs ``step_function(input_t, states + constants) -> (output_t, new_states)`` over the time axis.
    Returns (last output, outputs [batch, time, ...] (or only the last when not return_all_outputs), final
    states). With ``mask`` [batch, time], a masked step keeps the previous states and repeats the previous
    output (or gives zeros with ``zero_output_for_mask``)."""
    inputs_list = tf.nest.flatten(inputs)
    if not time_major:
        inputs_list = [tf.transpose(t, [1, 0] + list(range(2, ndim(t)))) for t in inputs_list]
    constants = list(constants or [])
    if mask is not None:
        mask = _as_bool(mask)
        if ndim(mask) == 2:
            mask = tf.expand_dims(mask, -1)
        if not time_major:
            mask = tf.transpose(mask, [1, 0, 2])
    steps = int_shape(inputs_list[0])[0]
    if steps is None:  # the number of steps is known only when the graph runs: a While over the steps
        return _rnn_while(step_function, inputs, inputs_list, list(initial_states), constants, mask, go_backwards,
                          time_major, zero_output_for_mask, return_all_outputs)
    order = list(range(steps))[::-1] if go_backwards else list(range(steps))
    states = list(initial_states)
    outputs = []
    previous_output = None
    for t in order:
        step_inputs = tf.nest.pack_sequence_as(inputs, [x[t] for x in inputs_list])
        output, states, previous_output = _rnn_step(step_function, step_inputs, states, constants,
                                                    None if mask is None else mask[t], previous_output,
                                                    zero_output_for_mask)
        outputs.append(output)
    last_output = outputs[-1]
    if return_all_outputs:
        stacked = tf.stack(outputs)
        if not time_major:
            stacked = tf.transpose(stacked, [1, 0] + list(range(2, ndim(stacked))))
    else:
        stacked = tf.expand_dims(last_output, 0 if time_major else 1)
    return last_output, stacked, states


def _rnn_step(step_function, step_inputs, states, constants, keep, previous_output, zero_output_for_mask):
    """One step: (the output, the new states, the output a masked next step repeats). At a masked step
    the states are kept and the output is the previous one (zeros with ``zero_output_for_mask``)."""
    output, new_states = step_function(step_inputs, list(states) + constants)
    new_states = list(new_states) if isinstance(new_states, (list, tuple)) else [new_states]
    if keep is None:
        return output, new_states, output
    if previous_output is None:
        previous_output = tf.zeros_like(output)
    fallback = tf.zeros_like(output) if zero_output_for_mask else previous_output
    emitted = tf.where(_broadcast_mask(keep, output), output, fallback)
    new_states = [tf.where(_broadcast_mask(keep, s), s, old) for s, old in zip(new_states, states)]
    return emitted, new_states, emitted


def _rnn_while(step_function, inputs, inputs_list, states, constants, mask, go_backwards, time_major,
               zero_output_for_mask, return_all_outputs):
    count = tf.shape(inputs_list[0])[0]
    arrays = [tf.TensorArray(x.dtype, size=count).unstack(x) for x in inputs_list]
    masks = None if mask is None else tf.TensorArray(tf.bool, size=count).unstack(mask)

    def index_of(t):
        return count - 1 - t if go_backwards else t

    def inputs_at(index):
        return tf.nest.pack_sequence_as(inputs, [a.read(index) for a in arrays])

    # The output's shape and dtype come from one step at the first index, as Keras' backend does
    first_output, _ = step_function(inputs_at(index_of(0)), list(states) + constants)
    outputs = tf.TensorArray(first_output.dtype, size=count)

    def body(t, previous, outputs, *states):
        index = index_of(t)
        emitted, new_states, carried = _rnn_step(step_function, inputs_at(index), list(states), constants,
                                                 None if masks is None else masks.read(index), previous,
                                                 zero_output_for_mask)
        return (t + 1, carried, outputs.write(t, emitted), *new_states)

    result = tf.while_loop(lambda t, *_: t < count, body,
                           (tf.constant(0), tf.zeros_like(first_output), outputs, *states))
    final_states = list(result[3:])
    stacked = result[2].stack()
    last_output = stacked[-1]
    if return_all_outputs:
        if not time_major:
            stacked = tf.transpose(stacked, [1, 0] + list(range(2, ndim(stacked))))
    else:
        stacked = tf.expand_dims(last_output, 0 if time_major else 1)
    return last_output, stacked, final_states


def _broadcast_mask(mask, like):
    """A [batch, 1] mask broadcast to the shape of ``like`` ([batch, ...])."""
    extra = ndim(like) - ndim(mask)
    if extra > 0:
        mask = tf.reshape(mask, tf.concat([tf.shape(mask), tf.ones([extra], tf.int32)], 0))
    return tf.logical_and(mask, tf.ones_like(like, tf.bool))


# ---- Keras graph-building helpers


def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None, ragged=False):  # noqa: F811
    """A symbolic Keras input (a KerasTensor), as tf_keras gives in TF 2."""
    from ember.keras.engine.input_layer import Input

    if shape is None:
        if ndim is None:
            raise ValueError("placeholder: give `shape` or `ndim`")
        shape = (None,) * ndim
    return Input(batch_shape=tuple(shape), dtype=dtype or floatx(), sparse=sparse or None, name=name,
                 ragged=ragged or None)


def function(inputs, outputs, updates=None, name=None, **kwargs):
    """A callable taking a list of input values and returning NumPy values of ``outputs``: the Keras way of
    reading a model's intermediate activations (``K.function([model.input], [layer.output])``)."""
    from ember.keras.engine.training import Model

    model = Model(inputs=inputs, outputs=outputs)
    one_output_in_a_list = isinstance(outputs, list) and len(outputs) == 1

    def call(model_inputs):
        result = model(model_inputs)
        if one_output_in_a_list and not isinstance(result, (list, tuple)):
            result = [result]
        return tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, result)

    return call


def print_tensor(x, message="", summarize=3):
    tf.print(message, x, summarize=summarize)
    return x


def name_scope(name):
    return tf.name_scope(name)


def eval(x):  # noqa: A001
    return get_value(tf.convert_to_tensor(x) if not hasattr(x, "numpy") else x)


def is_sparse(tensor):
    return isinstance(tensor, tf.SparseTensor)


def to_dense(tensor):
    return tf.sparse.to_dense(tensor) if is_sparse(tensor) else tensor


def manual_variable_initialization(value):
    """Accepted: ember's variables are initialized when created, so there is nothing to defer."""
    del value


def reset_uids():
    base_layer.reset_names()


def backend():
    return "tensorflow"


def builtins_all(iterable):
    import builtins

    return builtins.all(iterable)


# ---- CTC (tf_keras.backend's ctc_* functions, on tf.nn's CTC ops)


def ctc_label_dense_to_sparse(labels, label_lengths):
    """Dense labels [batch, max_label] to a SparseTensor holding the first ``label_lengths[b]`` of each row,
    with the dense shape of ``labels``."""
    labels = tf.convert_to_tensor(labels)
    label_shape = tf.shape(labels)
    mask = tf.sequence_mask(label_lengths, label_shape[1])
    indices = tf.cast(tf.where(mask), tf.int64)
    return tf.SparseTensor(indices, tf.gather_nd(labels, indices), tf.cast(label_shape, tf.int64))


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """CTC loss [batch, 1] of softmax outputs ``y_pred`` [batch, time, classes] (the blank is the last class)
    for labels ``y_true`` [batch, max_label]; the lengths are [batch, 1]."""
    label_length = tf.cast(tf.squeeze(label_length, axis=-1), tf.int32)
    input_length = tf.cast(tf.squeeze(input_length, axis=-1), tf.int32)
    sparse = ctc_label_dense_to_sparse(y_true, label_length)
    sparse_labels = tf.SparseTensor(sparse.indices, tf.cast(sparse.values, tf.int32), sparse.dense_shape)
    y_pred = tf.math.log(tf.transpose(y_pred, perm=[1, 0, 2]) + epsilon())
    return tf.expand_dims(
        tf.compat.v1.nn.ctc_loss(inputs=y_pred, labels=sparse_labels, sequence_length=input_length), 1)


def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    """Decodes softmax outputs [batch, time, classes]: ([dense [batch, time] paths padded with -1], log
    probabilities), greedily or by beam search."""
    input_shape = tf.shape(y_pred)
    num_samples, num_steps = input_shape[0], input_shape[1]
    y_pred = tf.math.log(tf.transpose(y_pred, perm=[1, 0, 2]) + epsilon())
    input_length = tf.cast(input_length, tf.int32)
    if greedy:
        decoded, log_prob = tf.nn.ctc_greedy_decoder(inputs=y_pred, sequence_length=input_length)
    else:
        decoded, log_prob = tf.compat.v1.nn.ctc_beam_search_decoder(
            inputs=y_pred, sequence_length=input_length, beam_width=beam_width, top_paths=top_paths)
    dense_shape = tf.cast(tf.stack([num_samples, num_steps]), tf.int64)
    decoded_dense = [tf.sparse.to_dense(tf.SparseTensor(st.indices, st.values, dense_shape), default_value=-1)
                     for st in decoded]
    return decoded_dense, log_prob
