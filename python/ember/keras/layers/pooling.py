"""Keras 2's pooling layers: Max/AveragePooling 1-3D on ember's MaxPool/AvgPool ops (1-D runs the 2-D op
over a height of 1), and the global poolings as reductions over the spatial axes. No weights."""

import ember as tf
from ember.keras.engine.base_layer import Layer
from ember.keras.layers import _layer_utils as U

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D", "AveragePooling2D",
           "AveragePooling3D", "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
           "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
           "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D",
           "GlobalMaxPool3D"]

_LAYOUTS = {1: "[batch, steps, features]", 2: "[batch, rows, cols, channels]",
            3: "[batch, depth, rows, cols, channels]"}
_FORMATS = {(1, True): "NWC", (1, False): "NCW", (2, True): "NHWC", (2, False): "NCHW",
            (3, True): "NDHWC", (3, False): "NCDHW"}


class _Pooling(Layer):
    """A max or average window of ``pool_size`` moved by ``strides`` (default: the window) over
    ``rank`` spatial axes."""

    _kind = None  # "max" or "avg"

    def __init__(self, rank, pool_size, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rank = rank
        self.pool_size = U.normalize_tuple(pool_size, rank, "pool_size")
        self.strides = U.normalize_tuple(pool_size if strides is None else strides, rank, "strides")
        self.padding = U.normalize_padding(padding)
        self.data_format = U.normalize_data_format(data_format)

    def _check_input(self, x):
        last = self.data_format == "channels_last"
        U.check_rank(self, x, self.rank + 2, _LAYOUTS[self.rank] if last else "channels first")

    def call(self, inputs):
        x = U.as_tensor(inputs, self.dtype)
        self._check_input(x)
        last = self.data_format == "channels_last"
        fmt = _FORMATS[(self.rank, last)]
        if self.rank == 3:
            spread = [1, *self.pool_size, 1] if last else [1, 1, *self.pool_size]
            strides = [1, *self.strides, 1] if last else [1, 1, *self.strides]
        else:
            spread, strides = list(self.pool_size), list(self.strides)
        fn = {("max", 1): tf.nn.max_pool1d, ("max", 2): tf.nn.max_pool2d, ("max", 3): tf.nn.max_pool3d,
              ("avg", 1): tf.nn.avg_pool1d, ("avg", 2): tf.nn.avg_pool2d, ("avg", 3): tf.nn.avg_pool3d}
        return U.in_float32(lambda v: fn[(self._kind, self.rank)](v, spread, strides, self.padding.upper(),
                                                                   data_format=fmt), x)

    def compute_output_shape(self, input_shape):
        shape = tf.TensorShape(input_shape).as_list()
        last = self.data_format == "channels_last"
        spatial = shape[1:-1] if last else shape[2:]
        out = [U.conv_output_length(n, k, self.padding, s) for n, k, s in zip(spatial, self.pool_size, self.strides)]
        return tf.TensorShape([shape[0], *out, shape[-1]] if last else [shape[0], shape[1], *out])

    def get_config(self):
        config = super().get_config()
        config.update({"pool_size": self.pool_size, "padding": self.padding, "strides": self.strides,
                       "data_format": self.data_format})
        return config


def _pooling(kind, rank, default_pool, default_format):
    class Pooling(_Pooling):
        _kind = kind

        def __init__(self, pool_size=default_pool, strides=None, padding="valid", data_format=default_format,
                     **kwargs):
            super().__init__(rank, pool_size, strides, padding, data_format, **kwargs)

    return Pooling


class MaxPooling1D(_pooling("max", 1, 2, "channels_last")):
    """Max over windows of ``pool_size`` steps."""


class MaxPooling2D(_pooling("max", 2, (2, 2), None)):
    """Max over ``pool_size`` windows of rows and cols."""


class MaxPooling3D(_pooling("max", 3, (2, 2, 2), None)):
    """Max over ``pool_size`` windows of depth, rows and cols."""


class AveragePooling1D(_pooling("avg", 1, 2, "channels_last")):
    """Mean over windows of ``pool_size`` steps (SAME padding: of the elements inside the input)."""


class AveragePooling2D(_pooling("avg", 2, (2, 2), None)):
    """Mean over ``pool_size`` windows of rows and cols."""


class AveragePooling3D(_pooling("avg", 3, (2, 2, 2), None)):
    """Mean over ``pool_size`` windows of depth, rows and cols."""


class _GlobalPooling(Layer):
    """Max or mean over every spatial axis; ``keepdims`` keeps them as size 1."""

    _kind = None
    _rank = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = U.normalize_data_format(data_format)
        self.keepdims = keepdims
        self.supports_masking = self._kind == "avg" and self._rank == 1

    def _axes(self):
        return list(range(1, self._rank + 1)) if self.data_format == "channels_last" else \
            list(range(2, self._rank + 2))

    def call(self, inputs, mask=None):
        x = U.as_tensor(inputs, self.dtype)
        last = self.data_format == "channels_last"
        U.check_rank(self, x, self._rank + 2, _LAYOUTS[self._rank] if last else "channels first")
        axes = self._axes()
        if self._kind == "max":
            return tf.reduce_max(x, axis=axes, keepdims=self.keepdims)
        if mask is not None:
            # Keras: the mean over the unmasked steps only.
            steps_axis = 1 if last else 2
            weights = tf.cast(mask, x.dtype)
            weights = tf.expand_dims(weights, 2 if last else 1)
            total = tf.reduce_sum(x * weights, axis=steps_axis, keepdims=self.keepdims)
            return total / tf.reduce_sum(weights, axis=steps_axis, keepdims=self.keepdims)
        return tf.reduce_mean(x, axis=axes, keepdims=self.keepdims)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        shape = tf.TensorShape(input_shape).as_list()
        channels = shape[-1] if self.data_format == "channels_last" else shape[1]
        if not self.keepdims:
            return tf.TensorShape([shape[0], channels])
        if self.data_format == "channels_last":
            return tf.TensorShape([shape[0]] + [1] * self._rank + [channels])
        return tf.TensorShape([shape[0], channels] + [1] * self._rank)

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "keepdims": self.keepdims})
        return config


def _global(kind, rank):
    return type(f"_Global{kind}{rank}", (_GlobalPooling,), {"_kind": kind, "_rank": rank})


class GlobalAveragePooling1D(_global("avg", 1)):
    """Mean over the steps of [batch, steps, features] (over the unmasked ones when a mask is given)."""

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(data_format=data_format, **kwargs)


class GlobalAveragePooling2D(_global("avg", 2)):
    """Mean over rows and cols."""


class GlobalAveragePooling3D(_global("avg", 3)):
    """Mean over depth, rows and cols."""


class GlobalMaxPooling1D(_global("max", 1)):
    """Max over the steps of [batch, steps, features]."""

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(data_format=data_format, **kwargs)


class GlobalMaxPooling2D(_global("max", 2)):
    """Max over rows and cols."""


class GlobalMaxPooling3D(_global("max", 3)):
    """Max over depth, rows and cols."""


MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (GlobalAveragePooling1D, GlobalAveragePooling2D,
                                                     GlobalAveragePooling3D)
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D
