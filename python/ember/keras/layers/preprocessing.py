"""Keras 2's numeric and image preprocessing layers (tf_keras): Rescaling, Normalization (with adapt),
Resizing, CenterCrop, UnitNormalization."""

import numpy as np

from ember.framework.tensor_shape import TensorShape
from ember.keras.engine.base_layer import Layer

__all__ = ["Rescaling", "Normalization", "Resizing", "CenterCrop", "UnitNormalization"]


def _tf():
    import ember

    return ember


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

    def call(self, inputs):
        tf = _tf()
        inputs = tf.cast(inputs, tf.float32)
        mean = tf.reshape(self.adapt_mean, self._broadcast_shape)
        variance = tf.reshape(self.adapt_variance, self._broadcast_shape)
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
        if crop_to_aspect_ratio:
            raise NotImplementedError("Resizing(crop_to_aspect_ratio=True) is not implemented")

    def call(self, inputs):
        tf = _tf()
        out = tf.image.resize(inputs, [self.height, self.width], method=self.interpolation)
        return tf.cast(out, self.compute_dtype) if hasattr(self, "compute_dtype") else out

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        return TensorShape(shape[:-3] + [self.height, self.width, shape[-1]])

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation, "crop_to_aspect_ratio": self.crop_to_aspect_ratio}


class CenterCrop(Layer):
    """The central height x width window of each image (resized up first when the image is smaller, as
    tf_keras)."""

    def __init__(self, height, width, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = height, width

    def call(self, inputs):
        tf = _tf()
        inputs = tf.cast(inputs, self.compute_dtype) if hasattr(self, "compute_dtype") else inputs
        h, w = inputs.shape[-3], inputs.shape[-2]
        if h is None or w is None or h < self.height or w < self.width:
            if h is not None and w is not None:
                return tf.image.resize(inputs, [self.height, self.width])
            raise NotImplementedError("CenterCrop: images of unknown height or width are not supported")
        top, left = (h - self.height) // 2, (w - self.width) // 2
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
