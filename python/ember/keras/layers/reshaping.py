"""Keras 2's reshaping layers (tf_keras): Permute, RepeatVector, Cropping1D/2D/3D, ZeroPadding1D/2D/3D,
UpSampling1D/2D/3D."""

from ember.framework.tensor_shape import TensorShape
from ember.keras.engine.base_layer import Layer
from ember.keras.engine.input_spec import InputSpec

__all__ = ["Permute", "RepeatVector", "Cropping1D", "Cropping2D", "Cropping3D", "ZeroPadding1D", "ZeroPadding2D",
           "ZeroPadding3D", "UpSampling1D", "UpSampling2D", "UpSampling3D"]


def _tf():
    import ember

    return ember


def _pairs(value, rank, what):
    """Keras' padding/cropping argument: an int (every side), a tuple of ints (symmetric per dim) or a tuple
    of pairs, for ``rank`` spatial dims."""
    if isinstance(value, int):
        return ((value, value),) * rank
    value = tuple(value)
    if rank == 1 and len(value) == 2 and all(isinstance(v, int) for v in value):
        return (value,)  # the 1-D layers take one (left, right) pair
    if len(value) != rank:
        raise ValueError(f"`{what}` should have {rank} elements. Received: {value}.")
    out = []
    for v in value:
        if isinstance(v, int):
            out.append((v, v))
        else:
            v = tuple(v)
            if len(v) != 2:
                raise ValueError(f"`{what}` should be an int, a tuple of {rank} ints or a tuple of {rank} tuples "
                                 f"of 2 ints. Received: {value}.")
            out.append(v)
    if any(a < 0 or b < 0 for a, b in out):
        raise ValueError(f"`{what}` cannot contain negative values. Received: {value}.")
    return tuple(out)


def _data_format(data_format):
    if data_format is None:
        from ember.keras import backend

        data_format = backend.image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of 'channels_first', 'channels_last'. Received: "
                         f"{data_format}")
    return data_format


def _spatial_axes(rank, data_format):
    return list(range(1, rank + 1)) if data_format == "channels_last" else list(range(2, rank + 2))


class Permute(Layer):
    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set of indices in `dims` "
                             f"must be consecutive and start from 1. Received: dims={dims}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs):
        return _tf().transpose(inputs, perm=(0,) + self.dims)

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        return TensorShape([shape[0]] + [shape[d] for d in self.dims])

    def get_config(self):
        return {**super().get_config(), "dims": self.dims}


class RepeatVector(Layer):
    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(n, int):
            raise TypeError(f"Expected an integer value for `n`, got {type(n)}.")
        self.n = n
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        tf = _tf()
        return tf.tile(tf.expand_dims(inputs, 1), [1, self.n, 1])

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        return TensorShape([shape[0], self.n, shape[1]])

    def get_config(self):
        return {**super().get_config(), "n": self.n}


class _Spatial(Layer):
    """A layer over `rank` spatial dims of a channels_last/channels_first input."""

    rank = 1

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format) if self.rank > 1 else "channels_last"
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _axes(self):
        return _spatial_axes(self.rank, self.data_format)

    def _resized(self, input_shape, params, resize):
        """The output shape: each known spatial dim d becomes resize(d, its param)."""
        shape = TensorShape(input_shape).as_list()
        for axis, param in zip(self._axes(), params):
            if shape[axis] is not None:
                shape[axis] = resize(shape[axis], param)
        return TensorShape(shape)

    def _spatial_config(self, key, per_dim):
        """tf_keras' config: a 1-D layer gives its one value and no data_format."""
        config = {**super().get_config(), key: per_dim if self.rank > 1 else per_dim[0]}
        if self.rank > 1:
            config["data_format"] = self.data_format
        return config


class _Cropping(_Spatial):
    _default_cropping = {1: (1, 1), 2: ((0, 0), (0, 0)), 3: ((1, 1), (1, 1), (1, 1))}  # tf_keras' defaults

    def __init__(self, cropping=None, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        if cropping is None:
            cropping = self._default_cropping[self.rank]
        self.cropping = _pairs(cropping, self.rank, "cropping")

    def call(self, inputs):
        slices = [slice(None)] * (self.rank + 2)
        for axis, (a, b) in zip(self._axes(), self.cropping):
            slices[axis] = slice(a, -b if b else None)
        return inputs[tuple(slices)]

    def compute_output_shape(self, input_shape):
        return self._resized(input_shape, self.cropping, lambda d, pair: d - sum(pair))

    def get_config(self):
        return self._spatial_config("cropping", self.cropping)


class Cropping1D(_Cropping):
    rank = 1


class Cropping2D(_Cropping):
    rank = 2


class Cropping3D(_Cropping):
    rank = 3


class _ZeroPadding(_Spatial):
    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.padding = _pairs(padding, self.rank, "padding")

    def call(self, inputs):
        paddings = [[0, 0]] * (self.rank + 2)
        for axis, pair in zip(self._axes(), self.padding):
            paddings[axis] = list(pair)
        return _tf().pad(inputs, paddings)

    def compute_output_shape(self, input_shape):
        return self._resized(input_shape, self.padding, lambda d, pair: d + sum(pair))

    def get_config(self):
        return self._spatial_config("padding", self.padding)


class ZeroPadding1D(_ZeroPadding):
    rank = 1


class ZeroPadding2D(_ZeroPadding):
    rank = 2


class ZeroPadding3D(_ZeroPadding):
    rank = 3


class _UpSampling(_Spatial):
    def __init__(self, size=2, data_format=None, interpolation="nearest", **kwargs):
        super().__init__(data_format, **kwargs)
        self.size = (size,) * self.rank if isinstance(size, int) else tuple(size)
        if len(self.size) != self.rank:
            raise ValueError(f"`size` should have {self.rank} elements. Received: {size}")
        self.interpolation = interpolation
        if self.rank == 2 and interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"`interpolation` argument should be one of: 'nearest', 'bilinear'. Received: "
                             f"{interpolation}")

    def call(self, inputs):
        tf = _tf()
        if self.rank == 2 and self.interpolation == "bilinear":
            x = inputs if self.data_format == "channels_last" else tf.transpose(inputs, [0, 2, 3, 1])
            shape = tf.shape(x)
            x = tf.image.resize(x, tf.stack([shape[1] * self.size[0], shape[2] * self.size[1]]), method="bilinear")
            x = tf.cast(x, inputs.dtype)
            return x if self.data_format == "channels_last" else tf.transpose(x, [0, 3, 1, 2])
        x = inputs
        for axis, factor in zip(self._axes(), self.size):
            x = tf.repeat(x, factor, axis=axis)
        return x

    def compute_output_shape(self, input_shape):
        return self._resized(input_shape, self.size, lambda d, factor: d * factor)

    def get_config(self):
        config = self._spatial_config("size", self.size)
        if self.rank == 2:
            config["interpolation"] = self.interpolation
        return config


class UpSampling1D(_UpSampling):
    rank = 1


class UpSampling2D(_UpSampling):
    rank = 2


class UpSampling3D(_UpSampling):
    rank = 3
