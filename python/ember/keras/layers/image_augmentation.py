"""Keras 2's random image augmentation layers (tf_keras): RandomFlip, RandomRotation, RandomZoom,
RandomTranslation, RandomContrast, RandomBrightness, RandomCrop, RandomHeight, RandomWidth.

Each augments only in a training call (``training`` defaults to True in ``call``, as tf_keras', so a bare
``layer(x)`` augments and ``model.predict`` does not) and otherwise returns its input, converted to the
layer's compute dtype. Images are ``[height, width, channels]`` or ``[batch, height, width, channels]``.
Rotation, zoom and translation warp through the ImageProjectiveTransformV3 op (docs/convolutions.md) with
tf_keras' matrices.

Note [Augmentation draws]: tf_keras makes these layers' random numbers with a ``tf.random.Generator`` seeded
from the layer's ``seed`` (a random one without), created on the first call, and draws from it in a fixed
order (``uniform`` for factors and offsets, ``make_seeds()[:, 0]`` for the stateless flip and contrast ops).
ember's Generator and stateless image ops follow TensorFlow's Philox streams, so the same draws in the same
order make a seeded layer's outputs equal tf_keras', call after call (tests/python/test_keras_layers_image_
augmentation.py). The generator is kept in ``_ember_random``, out of the layer's weights and checkpoints, as
tf_keras keeps it out of its own.
"""

import random

import numpy as np

from ember.framework.tensor_shape import TensorShape
from ember.keras.engine.base_layer import Layer
from ember.keras.layers.preprocessing import smart_resize

__all__ = ["RandomFlip", "RandomRotation", "RandomZoom", "RandomTranslation", "RandomContrast", "RandomBrightness",
           "RandomCrop", "RandomHeight", "RandomWidth"]

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")
_INTERPOLATIONS = ("nearest", "bilinear")
_RESIZE_METHODS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic")


def _tf():
    import ember

    return ember


def _check_fill_mode_and_interpolation(fill_mode, interpolation):
    if fill_mode not in _FILL_MODES:
        raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Only `reflect`, `wrap`, `constant` and "
                                  "`nearest` are supported.")
    if interpolation not in _INTERPOLATIONS:
        raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Only `nearest` and `bilinear` are "
                                  "supported.")


def _bounds(factor):
    """(lower, upper) of a factor given as a number f (-f, f) or a pair."""
    if isinstance(factor, (tuple, list)):
        return factor[0], factor[1]
    return -factor, factor


def _unseeded_seed():
    """tf_keras' seed for a layer made without one: from keras.utils.set_random_seed's stream, else random."""
    from ember.keras import backend

    generator = getattr(backend._SEED_GENERATOR, "generator", None)
    return generator.randint(1, int(1e9)) if generator is not None else random.randint(1, int(1e9))


class _RandomStream:
    """The layer's tf.random.Generator, made on first use outside any trace (Note [Augmentation draws])."""

    def __init__(self, seed):
        self._seed = seed
        self._generator = None

    def _get(self):
        if self._generator is None:
            tf = _tf()
            with tf.init_scope():
                seed = self._seed if self._seed is not None else _unseeded_seed()
                self._generator = tf.random.Generator.from_seed(seed, alg=tf.random.Algorithm.AUTO_SELECT)
        return self._generator

    def uniform(self, shape, minval, maxval, dtype=None):
        return self._get().uniform(shape, minval=minval, maxval=maxval, dtype=dtype or _tf().float32)

    def stateless_seed(self):
        return self._get().make_seeds()[:, 0]


class _Augmentation(Layer):
    """What the layers share: the seed and its stream, the conversion of inputs, identity at inference."""

    def __init__(self, seed=None, **kwargs):
        kwargs.pop("force_generator", None)
        kwargs.pop("rng_type", None)
        super().__init__(**kwargs)
        self.seed = seed
        self._ember_random = _RandomStream(seed)

    def _convert(self, inputs, dtype=None):
        tf = _tf()
        if isinstance(inputs, dict):
            raise ValueError("This layer can only process a tensor representing an image or a batch of images. "
                             f"Received: type(inputs)={type(inputs)}.If you need to pass a dict containing images, "
                             "labels, and bounding boxes, you should instead use the preprocessing and augmentation "
                             "layers from `keras_cv.layers`. See docs at https://keras.io/api/keras_cv/layers/")
        inputs = tf.convert_to_tensor(inputs)
        if dtype is not None and inputs.dtype != tf.as_dtype(dtype):
            inputs = tf.cast(inputs, dtype)
        return inputs

    def call(self, inputs, training=True):
        inputs = self._convert(inputs, self.compute_dtype)
        if training:
            return self._augment(inputs)
        return inputs

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        # tf_keras' layers say which kind of random generator they use: always a tf.random.Generator here.
        return {**super().get_config(), "seed": self.seed, "rng_type": "stateful"}


class RandomFlip(_Augmentation):
    """Flips each image left-right and/or up-down with probability 1/2 (``mode``: "horizontal", "vertical" or
    "horizontal_and_vertical")."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError(f"RandomFlip layer {self.name} received an unknown mode argument {mode}")
        self.mode = mode
        self.horizontal = mode != "vertical"
        self.vertical = mode != "horizontal"

    def _augment(self, inputs):
        tf = _tf()
        outputs = inputs
        if self.horizontal:
            outputs = tf.image.stateless_random_flip_left_right(outputs, seed=self._ember_random.stateless_seed())
        if self.vertical:
            outputs = tf.image.stateless_random_flip_up_down(outputs, seed=self._ember_random.stateless_seed())
        return outputs

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}


class _Warp(_Augmentation):
    """A layer that warps its images by one projective transform per image."""

    def __init__(self, fill_mode, interpolation, seed, fill_value, **kwargs):
        super().__init__(seed=seed, **kwargs)
        _check_fill_mode_and_interpolation(fill_mode, interpolation)
        self.fill_mode = fill_mode
        self.fill_value = fill_value
        self.interpolation = interpolation

    def _augment(self, inputs):
        tf = _tf()
        unbatched = inputs.shape.rank == 3
        images = tf.expand_dims(inputs, 0) if unbatched else inputs
        shape = tf.shape(images)
        height, width = tf.cast(shape[1], tf.float32), tf.cast(shape[2], tf.float32)
        transforms = self._transforms(shape[0], height, width)
        outputs = tf.raw_ops.ImageProjectiveTransformV3(
            images=images, transforms=transforms, output_shape=shape[1:3],
            fill_value=tf.constant(self.fill_value, tf.float32), interpolation=self.interpolation.upper(),
            fill_mode=self.fill_mode.upper())
        return tf.squeeze(outputs, 0) if unbatched else outputs

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode, "fill_value": self.fill_value,
                "interpolation": self.interpolation}


def _rows(*columns):
    """[n, 8] transforms from eight [n, 1] columns."""
    return _tf().concat(list(columns), axis=1)


class RandomRotation(_Warp):
    """Rotates each image about its centre by an angle drawn from ``factor`` (fractions of 2 pi: f is
    (-f, f), or a (lower, upper) pair)."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.factor = factor
        self.lower, self.upper = _bounds(factor)
        if self.upper < self.lower:
            raise ValueError(f"`factor` argument cannot have a negative value. Received: factor={factor}")

    def _transforms(self, batch, height, width):
        tf = _tf()
        angles = self._ember_random.uniform([batch], self.lower * 2.0 * np.pi, self.upper * 2.0 * np.pi)
        cos, sin = tf.cos(angles)[:, None], tf.sin(angles)[:, None]
        # The rotation's fixed point is the image centre: these offsets put it there.
        x_offset = ((width - 1) - (cos * (width - 1) - sin * (height - 1))) / 2.0
        y_offset = ((height - 1) - (sin * (width - 1) + cos * (height - 1))) / 2.0
        zeros = tf.zeros_like(cos)
        return _rows(cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_Warp):
    """Zooms each image about its centre: the sampled window's height is (1 + h) times the image's, h drawn
    from ``height_factor`` (negative: zoom in), its width likewise from ``width_factor`` (None: the same draw,
    keeping the aspect ratio)."""

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor = height_factor
        self.height_lower, self.height_upper = _bounds(height_factor)
        if abs(self.height_lower) > 1.0 or abs(self.height_upper) > 1.0:
            raise ValueError(f"`height_factor` argument must have values between [-1, 1]. Received: "
                             f"height_factor={height_factor}")
        self.width_factor = width_factor
        if width_factor is not None:
            self.width_lower, self.width_upper = _bounds(width_factor)
            if self.width_lower < -1.0 or self.width_upper < -1.0:
                raise ValueError(f"`width_factor` argument must have values larger than -1. Received: "
                                 f"width_factor={width_factor}")

    def _transforms(self, batch, height, width):
        tf = _tf()
        zoom_y = self._ember_random.uniform([batch, 1], 1.0 + self.height_lower, 1.0 + self.height_upper)
        zoom_x = zoom_y if self.width_factor is None else self._ember_random.uniform(
            [batch, 1], 1.0 + self.width_lower, 1.0 + self.width_upper)
        zeros = tf.zeros_like(zoom_y)
        return _rows(zoom_x, zeros, (width - 1.0) / 2.0 * (1.0 - zoom_x), zeros, zoom_y,
                     (height - 1.0) / 2.0 * (1.0 - zoom_y), zeros, zeros)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor, "width_factor": self.width_factor}


class RandomTranslation(_Warp):
    """Shifts each image by fractions of its height and width drawn from ``height_factor`` and
    ``width_factor`` (f is (-f, f), or a (lower, upper) pair, within [-1, 1])."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_lower, self.height_upper = _bounds(height_factor)
        self.width_lower, self.width_upper = _bounds(width_factor)
        if self.height_upper < self.height_lower:
            raise ValueError(f"`height_factor` cannot have upper bound less than lower bound, got {height_factor}")
        if abs(self.height_lower) > 1.0 or abs(self.height_upper) > 1.0:
            raise ValueError(f"`height_factor` argument must have values between [-1, 1]. Received: "
                             f"height_factor={height_factor}")
        if self.width_upper < self.width_lower:
            raise ValueError(f"`width_factor` cannot have upper bound less than lower bound, got {width_factor}")
        if abs(self.width_lower) > 1.0 or abs(self.width_upper) > 1.0:
            raise ValueError(f"`width_factor` must have values between [-1, 1], got {width_factor}")

    def _transforms(self, batch, height, width):
        tf = _tf()
        dy = self._ember_random.uniform([batch, 1], self.height_lower, self.height_upper) * height
        dx = self._ember_random.uniform([batch, 1], self.width_lower, self.width_upper) * width
        ones, zeros = tf.ones_like(dx), tf.zeros_like(dx)
        return _rows(ones, zeros, -dx, zeros, ones, -dy, zeros, zeros)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor, "width_factor": self.width_factor}


class RandomContrast(_Augmentation):
    """Scales each image's (per channel) deviation from its mean by a factor drawn from [1 - lower, 1 + upper]
    (``factor`` f is (f, f)); the result is clipped to [0, 255]."""

    def __init__(self, factor, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = factor
        self.lower, self.upper = (factor[0], factor[1]) if isinstance(factor, (tuple, list)) else (factor, factor)
        if self.lower < 0.0 or self.upper < 0.0 or self.lower > 1.0:
            raise ValueError(f"`factor` argument cannot have negative values or values greater than 1.Received: "
                             f"factor={factor}")

    def _augment(self, inputs):
        tf = _tf()
        outputs = tf.image.stateless_random_contrast(inputs, 1.0 - self.lower, 1.0 + self.upper,
                                                     seed=self._ember_random.stateless_seed())
        return tf.clip_by_value(outputs, 0, 255)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


_FACTOR_ERROR = "The `factor` argument should be a number (or a list of two numbers) in the range [-1.0, 1.0]. "
_VALUE_RANGE_ERROR = "The `value_range` argument should be a list of two numbers. "


class RandomBrightness(_Augmentation):
    """Adds to each image a delta drawn from ``factor`` (a fraction of ``value_range``'s width: f is (-f, f)),
    then clips to ``value_range``."""

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        if isinstance(factor, (tuple, list)):
            if len(factor) != 2:
                raise ValueError(_FACTOR_ERROR + f"Got {factor}")
            for f in factor:
                self._check_factor(f)
            self._factor = sorted(factor)
        elif isinstance(factor, (int, float)):
            self._check_factor(factor)
            self._factor = [-abs(factor), abs(factor)]
        else:
            raise ValueError(_FACTOR_ERROR + f"Got {factor}")
        if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
            raise ValueError(_VALUE_RANGE_ERROR + f"Got {value_range}")
        self._value_range = sorted(value_range)

    @staticmethod
    def _check_factor(number):
        if number > 1.0 or number < -1.0:
            raise ValueError(_FACTOR_ERROR + f"Got {number}")

    def _augment(self, images):
        tf = _tf()
        rank = images.shape.rank
        if rank not in (3, 4):
            raise ValueError(f"Expected the input image to be rank 3 or 4. Got inputs.shape = {images.shape}")
        shape = (1, 1, 1) if rank == 3 else [tf.shape(images)[0], 1, 1, 1]
        delta = self._ember_random.uniform(shape, self._factor[0], self._factor[1])
        delta = tf.cast(delta * (self._value_range[1] - self._value_range[0]), images.dtype)
        return tf.clip_by_value(images + delta, self._value_range[0], self._value_range[1])

    def get_config(self):
        return {**super().get_config(), "factor": self._factor, "value_range": self._value_range}


class RandomCrop(_Augmentation):
    """In training, a height x width window at a random place (the same for the whole batch); otherwise,
    or when the image is smaller, the largest centred window of the target's aspect ratio resized to it."""

    def __init__(self, height, width, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.height, self.width = height, width

    def call(self, inputs, training=True):
        tf = _tf()
        inputs = self._convert(inputs, self.compute_dtype)
        shape = tf.shape(inputs)
        rank = inputs.shape.rank
        h_diff, w_diff = shape[rank - 3] - self.height, shape[rank - 2] - self.width

        def crop():
            draws = self._ember_random.uniform([2], 0, shape.dtype.max, shape.dtype)
            return tf.image.crop_to_bounding_box(inputs, draws[0] % (h_diff + 1), draws[1] % (w_diff + 1),
                                                 self.height, self.width)

        def resize():
            return tf.cast(smart_resize(inputs, [self.height, self.width]), self.compute_dtype)

        return tf.cond(tf.reduce_all([tf.cast(training, tf.bool), h_diff >= 0, w_diff >= 0]), crop, resize)

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        return TensorShape(shape[:-3] + [self.height, self.width, shape[-1]])

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}


class _RandomSize(_Augmentation):
    """RandomHeight and RandomWidth: one factor per call resizes the whole batch along one axis."""

    _axis = None  # -3 (height) or -2 (width)

    def __init__(self, factor, interpolation="bilinear", seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = factor
        self._lower, self._upper = _bounds(factor)
        if self._upper < self._lower:
            raise ValueError(f"`factor` argument cannot have an upper bound {self._less} than the lower bound. "
                             f"Received: factor={factor}")
        if self._lower < -1.0 or self._upper < -1.0:
            raise ValueError(f"`factor` argument must have values larger than -1. Received: factor={factor}")
        if interpolation not in _RESIZE_METHODS:
            raise NotImplementedError(f"Value not recognized for `interpolation`: {interpolation}. Supported "
                                      f"values are: dict_keys({list(_RESIZE_METHODS)})")
        self.interpolation = interpolation

    def call(self, inputs, training=True):
        tf = _tf()
        inputs = self._convert(inputs)
        if not training:
            return inputs
        shape = tf.shape(inputs)
        rank = inputs.shape.rank
        axis = rank + self._axis
        scale = self._ember_random.uniform([], 1.0 + self._lower, 1.0 + self._upper)
        resized = tf.cast(scale * tf.cast(shape[axis], tf.float32), tf.int32)
        size = tf.stack([resized, shape[rank - 2]] if self._axis == -3 else [shape[rank - 3], resized])
        return tf.cast(tf.image.resize(inputs, size, method=self.interpolation), self.compute_dtype)

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        shape[len(shape) + self._axis] = None
        return TensorShape(shape)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "interpolation": self.interpolation}


class RandomHeight(_RandomSize):
    """Resizes the batch to a height scaled by 1 + f, f drawn from ``factor`` (f is (-f, f))."""

    _axis = -3
    _less = "lesser"


class RandomWidth(_RandomSize):
    """Resizes the batch to a width scaled by 1 + f, f drawn from ``factor`` (f is (-f, f))."""

    _axis = -2
    _less = "less"
