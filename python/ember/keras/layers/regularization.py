"""Keras 2's regularization layers (tf_keras): ActivityRegularization, GaussianNoise, GaussianDropout,
AlphaDropout, SpatialDropout1D/2D/3D. The noise layers are the identity at inference."""

from ember.framework.tensor_shape import TensorShape
from ember.keras import regularizers
from ember.keras.engine.base_layer import Layer
from ember.keras.engine.input_spec import InputSpec
from ember.keras.layers.core import Dropout

__all__ = ["ActivityRegularization", "GaussianNoise", "GaussianDropout", "AlphaDropout", "SpatialDropout1D",
           "SpatialDropout2D", "SpatialDropout3D"]


def _tf():
    import ember

    return ember


class ActivityRegularization(Layer):
    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.supports_masking = True
        self.l1 = l1
        self.l2 = l2

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = {**super().get_config(), "l1": self.l1, "l2": self.l2}
        config.pop("activity_regularizer", None)
        return config


class _Noise(Layer):
    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.seed = seed

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)


class GaussianNoise(_Noise):
    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        self.stddev = stddev

    def call(self, inputs, training=None):
        if not training:
            return inputs
        tf = _tf()
        return inputs + tf.random.normal(tf.shape(inputs), stddev=self.stddev, dtype=inputs.dtype, seed=self.seed)

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(_Noise):
    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        self.rate = rate

    def call(self, inputs, training=None):
        if not training or not 0 < self.rate < 1:
            return inputs
        tf = _tf()
        stddev = (self.rate / (1.0 - self.rate)) ** 0.5
        return inputs * tf.random.normal(tf.shape(inputs), mean=1.0, stddev=stddev, dtype=inputs.dtype,
                                         seed=self.seed)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class AlphaDropout(_Noise):
    """Dropout that keeps the SELU self-normalizing mean and variance (Klambauer et al.)."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape

    def call(self, inputs, training=None):
        if not training or not 0 < self.rate < 1:
            return inputs
        tf = _tf()
        alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
        alpha_p = -alpha * scale
        shape = tf.shape(inputs) if self.noise_shape is None else self.noise_shape
        keep = tf.cast(tf.random.uniform(shape, seed=self.seed) >= self.rate, inputs.dtype)
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        return a * (inputs * keep + alpha_p * (1 - keep)) + b

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one draw per (example, channel)."""

    rank = 1

    def __init__(self, rate, data_format=None, **kwargs):
        super().__init__(rate, **kwargs)
        if self.rank > 1:
            from ember.keras.layers.reshaping import _data_format

            self.data_format = _data_format(data_format)
        else:
            self.data_format = "channels_last"
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _noise_shape(self, inputs):
        tf = _tf()
        shape = tf.shape(inputs)
        ones = [1] * self.rank
        dims = [shape[0]] + ones + [shape[-1]] if self.data_format == "channels_last" else \
            [shape[0], shape[1]] + ones
        return tf.stack([tf.cast(d, tf.int32) for d in dims])



class SpatialDropout1D(_SpatialDropout):
    rank = 1


class SpatialDropout2D(_SpatialDropout):
    rank = 2


class SpatialDropout3D(_SpatialDropout):
    rank = 3
