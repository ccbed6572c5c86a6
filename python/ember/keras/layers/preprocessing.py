"""Keras 2's numeric, categorical and image preprocessing layers (tf_keras): Rescaling, Normalization (with
adapt), Resizing, CenterCrop, UnitNormalization, CategoryEncoding, Hashing, Discretization (given boundaries,
or learned by adapt)."""

import numpy as np

from ember.framework.tensor_shape import TensorShape
from ember.keras.engine.base_layer import Layer

__all__ = ["Rescaling", "Normalization", "Resizing", "CenterCrop", "UnitNormalization", "CategoryEncoding",
           "Hashing", "Discretization"]


def _tf():
    import ember

    return ember


def smart_resize(x, size, interpolation="bilinear"):
    """tf_keras' ``smart_resize``: the largest centred window of ``size``'s aspect ratio, resized to ``size``
    (float32 from ``tf.image.resize``), for [height, width, channels] or batched images."""
    tf = _tf()
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: {size}.")
    images = tf.convert_to_tensor(x)
    rank = images.shape.rank
    if rank is not None and (rank < 3 or rank > 4):
        raise ValueError("Expected an image array with shape `(height, width, channels)`, or `(batch_size, height, "
                         f"width, channels)`, but got input with incorrect rank, of shape {images.shape}.")
    shape = tf.shape(images)
    height, width = shape[-3], shape[-2]
    target_height, target_width = size
    # In float32 and truncated, as tf_keras, so the window is the same pixel for pixel.
    crop_height = tf.minimum(height, tf.cast(tf.cast(width * target_height, tf.float32) / target_width, tf.int32))
    crop_width = tf.minimum(width, tf.cast(tf.cast(height * target_width, tf.float32) / target_height, tf.int32))
    top = tf.cast(tf.cast(height - crop_height, tf.float32) / 2, tf.int32)
    left = tf.cast(tf.cast(width - crop_width, tf.float32) / 2, tf.int32)
    if rank == 4:
        window = tf.slice(images, tf.stack([0, top, left, 0]), tf.stack([-1, crop_height, crop_width, -1]))
    else:
        window = tf.slice(images, tf.stack([top, left, 0]), tf.stack([crop_height, crop_width, -1]))
    out = tf.image.resize(window, size, method=interpolation)
    return out.numpy() if isinstance(x, np.ndarray) else out


class Rescaling(Layer):
    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.offset = offset

    def call(self, inputs):
        tf = _tf()
        dtype = self.compute_dtype if hasattr(self, "compute_dtype") else tf.float32
        inputs = tf.cast(inputs, dtype)
        return inputs * tf.cast(self.scale, dtype) + tf.cast(self.offset, dtype)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class Normalization(Layer):
    """(x - mean) / sqrt(variance) per feature along ``axis``; mean and variance given or learned by
    ``adapt(data)`` (the population variance, as tf_keras)."""

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis) if axis is not None else ()
        if (mean is None) != (variance is None):
            raise ValueError(f"When setting values directly, both `mean` and `variance` must be set. Got mean: "
                             f"{mean} and variance: {variance}")
        self.input_mean = mean
        self.input_variance = variance
        self.invert = invert

    def _reduce_shape(self, shape):
        rank = len(shape)
        keep = {a % rank for a in self.axis}
        return [shape[i] if i in keep else 1 for i in range(rank)]

    def build(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        self._broadcast_shape = self._reduce_shape(shape)
        for a in self.axis:
            if shape[a % len(shape)] is None:
                raise ValueError(f"All `axis` values to be kept must have known shape. Got axis: {self.axis}, input "
                                 f"shape: {shape}, with unknown axis at index: {a % len(shape)}")
        mean_shape = [shape[a % len(shape)] for a in sorted(a % len(shape) for a in self.axis)]
        if self.input_mean is not None:  # given values are constants, not weights (as tf_keras)
            self.adapt_mean = np.broadcast_to(np.asarray(self.input_mean, np.float32), mean_shape).copy()
            self.adapt_variance = np.broadcast_to(np.asarray(self.input_variance, np.float32), mean_shape).copy()
        else:
            self.adapt_mean = self.add_weight(name="mean", shape=mean_shape, initializer="zeros", trainable=False)
            self.adapt_variance = self.add_weight(name="variance", shape=mean_shape, initializer="ones",
                                                  trainable=False)
            self.count = self.add_weight(name="count", shape=[], dtype="int64", initializer="zeros",
                                         trainable=False)
        self.built = True

    def adapt(self, data, batch_size=None, steps=None):
        tf = _tf()
        if self.input_mean is not None:
            raise ValueError("Normalization: a layer given mean and variance cannot adapt")
        if isinstance(data, tf.data.Dataset):
            arrays = [np.asarray(x) for x in data.as_numpy_iterator()]
            array = np.concatenate([a.reshape((-1,) + a.shape[1:]) if a.ndim else a[None] for a in arrays])
        else:
            array = np.asarray(data.numpy() if hasattr(data, "numpy") else data, dtype=np.float64)
        array = array.astype(np.float64)
        if not self.built:
            self.build(array.shape)
        rank = array.ndim
        keep = sorted(a % rank for a in self.axis)
        reduce_axes = tuple(i for i in range(rank) if i not in keep)
        self.adapt_mean.assign(array.mean(axis=reduce_axes).astype(np.float32))
        self.adapt_variance.assign(array.var(axis=reduce_axes).astype(np.float32))
        self.count.assign(int(np.prod([array.shape[i] for i in reduce_axes])))

    # tf_keras exposes the statistics reshaped to broadcast against the input ([[mean]] for [batch, 1]).
    @property
    def mean(self):
        return _tf().reshape(self.adapt_mean, self._broadcast_shape)

    @property
    def variance(self):
        return _tf().reshape(self.adapt_variance, self._broadcast_shape)

    def call(self, inputs):
        tf = _tf()
        inputs = tf.cast(inputs, tf.float32)
        mean, variance = self.mean, self.variance
        if self.invert:
            return mean + inputs * tf.maximum(tf.sqrt(variance), 1e-7)
        return (inputs - mean) / tf.maximum(tf.sqrt(variance), 1e-7)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = {**super().get_config(), "axis": self.axis, "invert": self.invert}
        config["mean"] = None if self.input_mean is None else np.asarray(self.input_mean).tolist()
        config["variance"] = None if self.input_variance is None else np.asarray(self.input_variance).tolist()
        return config


class Resizing(Layer):
    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = height, width
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = crop_to_aspect_ratio

    def call(self, inputs):
        tf = _tf()
        if self.crop_to_aspect_ratio:
            out = smart_resize(inputs, [self.height, self.width], self.interpolation)
        else:
            out = tf.image.resize(inputs, [self.height, self.width], method=self.interpolation)
        return tf.cast(out, self.compute_dtype) if hasattr(self, "compute_dtype") else out

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        return TensorShape(shape[:-3] + [self.height, self.width, shape[-1]])

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation, "crop_to_aspect_ratio": self.crop_to_aspect_ratio}


class CenterCrop(Layer):
    """The central height x width window of each image (an image smaller on either side is resized to it,
    keeping its aspect ratio, as tf_keras)."""

    def __init__(self, height, width, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = height, width

    def call(self, inputs):
        tf = _tf()
        inputs = tf.cast(inputs, self.compute_dtype) if hasattr(self, "compute_dtype") else inputs
        h, w = inputs.shape[-3], inputs.shape[-2]
        if h is None or w is None:  # known when the layer runs: decide then
            shape = tf.shape(inputs)
            h, w = shape[-3], shape[-2]
            too_small = tf.logical_or(h < self.height, w < self.width)
            return tf.cond(too_small, lambda: self._upsize(inputs),
                           lambda: self._crop(inputs, (h - self.height) // 2, (w - self.width) // 2))
        if h < self.height or w < self.width:
            return self._upsize(inputs)
        return self._crop(inputs, (h - self.height) // 2, (w - self.width) // 2)

    def _upsize(self, inputs):
        """An image smaller than the crop on either side: resized keeping its aspect ratio (smart_resize), as
        tf_keras'."""
        tf = _tf()
        out = smart_resize(inputs, [self.height, self.width])
        return tf.cast(out, self.compute_dtype) if hasattr(self, "compute_dtype") else out

    def _crop(self, inputs, top, left):
        return inputs[..., top:top + self.height, left:left + self.width, :]

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        return TensorShape(shape[:-3] + [self.height, self.width, shape[-1]])

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}


class UnitNormalization(Layer):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, int) else list(axis)
        self.supports_masking = True

    def call(self, inputs):
        tf = _tf()
        return tf.math.l2_normalize(tf.cast(inputs, self.compute_dtype) if hasattr(self, "compute_dtype")
                                    else inputs, axis=self.axis)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class CategoryEncoding(Layer):
    """Integer category ids -> one_hot / multi_hot / count vectors of ``num_tokens``."""

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if num_tokens is None or num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        if output_mode not in ("one_hot", "multi_hot", "count"):
            raise ValueError(f"Unknown arg for output_mode: {output_mode}. Expected one of: 'one_hot', 'multi_hot', "
                             "'count'.")
        if sparse:
            raise NotImplementedError("CategoryEncoding(sparse=True) is not implemented")
        self.num_tokens = num_tokens
        self.output_mode = output_mode
        self.sparse = sparse

    def call(self, inputs, count_weights=None):
        tf = _tf()
        inputs = tf.convert_to_tensor(inputs)
        if not inputs.dtype.is_integer:
            inputs = tf.cast(inputs, tf.int64)
        if not inputs.shape.rank:
            inputs = tf.reshape(inputs, [1])
        tf.debugging.assert_non_negative(inputs, message=f"Input values must be in the range 0 <= values < "
                                                         f"num_tokens with num_tokens={self.num_tokens}")
        tf.debugging.assert_less(inputs, tf.cast(self.num_tokens, inputs.dtype),
                                 message=f"Input values must be in the range 0 <= values < num_tokens with "
                                         f"num_tokens={self.num_tokens}")
        if self.output_mode == "one_hot":
            if inputs.shape.rank > 1 and inputs.shape[-1] == 1:
                inputs = tf.squeeze(inputs, -1)
            return tf.one_hot(inputs, self.num_tokens, dtype=self.compute_dtype)
        if inputs.shape.rank == 1:
            inputs = tf.expand_dims(inputs, -1)
        hot = tf.one_hot(inputs, self.num_tokens, dtype=self.compute_dtype)
        if count_weights is not None:
            if self.output_mode != "count":
                raise ValueError("`count_weights` is not used when `output_mode` is not `'count'`. Received "
                                 f"`count_weights={count_weights}`.")
            hot = hot * tf.cast(tf.expand_dims(count_weights, -1), hot.dtype)
        counts = tf.reduce_sum(hot, axis=-2)
        return counts if self.output_mode == "count" else tf.minimum(counts, 1.0)

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        if not shape:
            return TensorShape([self.num_tokens])
        if self.output_mode == "one_hot" and shape[-1] != 1:
            return TensorShape(shape + [self.num_tokens])
        return TensorShape(shape[:-1] + [self.num_tokens])

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens, "output_mode": self.output_mode,
                "sparse": self.sparse}


class Hashing(Layer):
    """Values (strings, or integers as their decimal strings) -> FarmHash Fingerprint64 % num_bins, the bins
    TensorFlow's tf.strings.to_hash_bucket_fast gives; ``mask_value`` maps to 0 and the rest to 1..num_bins-1."""

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError(f"The `num_bins` for `Hashing` cannot be `None` or non-positive values. Received: "
                             f"num_bins={num_bins}.")
        if salt is not None:
            raise NotImplementedError("Hashing(salt=...) needs SipHash (tf.strings.to_hash_bucket_strong), which "
                                      "ember does not have")
        if output_mode != "int" or sparse:
            raise NotImplementedError("Hashing: only output_mode='int' (not sparse) is implemented")
        self.num_bins = num_bins
        self.mask_value = mask_value
        self.salt = salt
        self.output_mode = output_mode
        self.sparse = sparse

    def call(self, inputs):
        tf = _tf()
        inputs = tf.convert_to_tensor(inputs)
        strings = inputs if inputs.dtype == tf.string else tf.strings.as_string(inputs)
        if self.mask_value is None:
            return tf.strings.to_hash_bucket_fast(strings, self.num_bins)
        hashed = tf.strings.to_hash_bucket_fast(strings, self.num_bins - 1) + 1
        masked = tf.equal(inputs, tf.cast(self.mask_value, inputs.dtype) if inputs.dtype != tf.string else
                          tf.constant(self.mask_value))
        return tf.where(masked, tf.zeros_like(hashed), hashed)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins, "salt": self.salt, "mask_value": self.mask_value,
                "output_mode": self.output_mode, "sparse": self.sparse}


_DISCRETIZATION_MODES = ("int", "one_hot", "multi_hot", "count")


class Discretization(Layer):
    """The bucket of each value among sorted ``bin_boundaries``: i where boundaries[i-1] <= x < boundaries[i].
    Without boundaries, ``adapt`` learns ``num_bins - 1`` of them from the data's quantiles
    (Note [Discretization's quantiles]). ``output_mode`` "int" gives the bucket indices (int64); "one_hot",
    "multi_hot" and "count" encode them over the buckets as tf_keras does (a rank-1 input is one sample for
    "multi_hot" and "count"), as a SparseTensor with ``sparse=True``."""

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int", sparse=False,
                 **kwargs):
        if output_mode not in _DISCRETIZATION_MODES:
            raise ValueError(f"Unknown value for `output_mode` argument of layer Discretization. Allowed values "
                             f"are: {_DISCRETIZATION_MODES}. Received: {output_mode}")
        if sparse and output_mode == "int":
            raise ValueError(f"`sparse` may only be true if `output_mode` is `'one_hot'`, `'multi_hot'`, or "
                             f"`'count'`. Received: sparse={sparse} and output_mode={output_mode}")
        kwargs.setdefault("dtype", "int64" if output_mode == "int" else "float32")
        super().__init__(**kwargs)
        if num_bins is not None and num_bins < 0:
            raise ValueError(f"`num_bins` must be greater than or equal to 0. You passed `num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError(f"Both `num_bins` and `bin_boundaries` should not be set. You passed "
                             f"`num_bins={num_bins}` and `bin_boundaries={bin_boundaries}`")
        self.input_bin_boundaries = None if bin_boundaries is None else list(bin_boundaries)
        self.bin_boundaries = [] if bin_boundaries is None else list(bin_boundaries)
        if self.bin_boundaries != sorted(self.bin_boundaries):
            raise ValueError(f"`bin_boundaries` must be sorted. Received: {bin_boundaries}")
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.output_mode = output_mode
        self.sparse = sparse

    # Note [Discretization's quantiles]
    # tf_keras' approximate quantiles, which ember follows step for step so that the boundaries are equal: each
    # batch is summarized as every (n * epsilon)-th of its sorted values, each weighing that many values (all
    # of them, weighing 1, when n * epsilon < 1); the summaries are merged by sorting their union, and a merged
    # summary longer than 1 / epsilon is compressed to 1 / epsilon points by interpolating its values at evenly
    # spaced fractions of its cumulative weight. The boundaries are a last compression at 1 / num_bins, less
    # its last point. The arithmetic is float32 where tf_keras' is (summaries, counts) and NumPy's float64
    # interpolation where tf_keras calls NumPy.

    @staticmethod
    def _summarize(values, epsilon):
        values = np.sort(values.reshape(-1))
        increment = int(np.float32(values.size) / np.float32(1.0 / epsilon))
        step = max(increment, 1)
        points = values[increment::step]
        return np.stack([points, np.full(points.shape, np.float32(step), np.float32)])

    @staticmethod
    def _compress(summary, epsilon):
        if summary.shape[1] * epsilon < 1:
            return summary
        percents = epsilon + np.arange(0.0, 1.0, epsilon)
        cum_weights = summary[1].cumsum()
        cum_percents = cum_weights / cum_weights[-1]
        points = np.interp(percents, cum_percents, summary[0])
        cum_weights = np.interp(percents, cum_percents, cum_weights)
        weights = cum_weights - np.concatenate(([0.0], cum_weights[:-1]))
        return np.stack([points, weights]).astype(np.float32)

    def adapt(self, data, batch_size=None, steps=None):
        """Learns ``num_bins - 1`` boundaries from ``data``: an array or tensor (in batches of ``batch_size``, 32
        by default) or a ``tf.data.Dataset`` (each element a batch); at most ``steps`` batches."""
        tf = _tf()
        if self.input_bin_boundaries is not None:
            raise ValueError(f"Cannot adapt a Discretization layer that has been initialized with `bin_boundaries`, "
                             f"use `num_bins` instead. You passed `bin_boundaries={self.input_bin_boundaries}`.")
        if self.num_bins is None:
            raise ValueError("Discretization.adapt needs `num_bins` (the number of bins to learn); got None")
        if isinstance(data, tf.data.Dataset):
            if batch_size is not None:
                raise ValueError("`batch_size` must not be given when the data is a tf.data.Dataset (its elements "
                                 f"are the batches); got batch_size={batch_size}")
            batches = (np.asarray(x) for x in data.as_numpy_iterator())
        else:
            array = np.asarray(data.numpy() if hasattr(data, "numpy") else data)
            size = 32 if batch_size is None else int(batch_size)
            batches = (array[i:i + size] for i in range(0, max(len(array), 1), size)) if array.ndim else iter([array])
        summary = np.zeros((2, 0), np.float32)
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            batch_summary = self._summarize(np.asarray(batch, np.float32), self.epsilon)
            merged = np.concatenate([batch_summary, summary], axis=1)
            summary = self._compress(merged[:, np.argsort(merged[0], kind="stable")], self.epsilon)
        if summary.shape[1] == 0:
            raise ValueError("Discretization.adapt: the data has no values")
        self.bin_boundaries = [float(v) for v in self._compress(summary, 1.0 / self.num_bins)[0, :-1]]

    def call(self, inputs):
        tf = _tf()
        inputs = tf.convert_to_tensor(inputs)
        if inputs.dtype not in (tf.int32, tf.int64, tf.float32, tf.float64):
            inputs = tf.cast(inputs, tf.float64)  # tf_keras' Bucketize would refuse these dtypes
        # tf_keras' op: the boundaries become float32, and values compare with them as Bucketize says.
        index = tf.cast(tf.raw_ops.Bucketize(input=inputs, boundaries=self.bin_boundaries), tf.int64)
        if self.output_mode == "int":
            return index
        from ember.keras.layers.text_lookup import _encode

        encoded = _encode(index, self.output_mode, len(self.bin_boundaries) + 1, tf.as_dtype(self.dtype))
        return tf.sparse.from_dense(encoded) if self.sparse else encoded

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        # The given boundaries, not learned ones: tf_keras' config of an adapted layer holds None too.
        return {**super().get_config(), "bin_boundaries": self.input_bin_boundaries, "num_bins": self.num_bins,
                "epsilon": self.epsilon, "output_mode": self.output_mode, "sparse": self.sparse}

