"""Variable initializers with TensorFlow's names: callables ``init(shape, dtype)``."""

import math

from ember import dtypes
from ember.ops import array_ops, random_ops


class Initializer:
    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        raise NotImplementedError


class Zeros(Initializer):
    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return array_ops.zeros(shape, dtype)


class Ones(Initializer):
    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return array_ops.ones(shape, dtype)


class Constant(Initializer):
    def __init__(self, value=0):
        self.value = value

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return array_ops.fill(shape, array_ops.convert_to_tensor(self.value, dtype=dtype))


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return random_ops.normal(shape, self.mean, self.stddev, dtype, self.seed)


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return random_ops.uniform(shape, self.minval, self.maxval, dtype, self.seed)


class GlorotUniform(Initializer):
    """Uniform in ±sqrt(6 / (fan_in + fan_out)), TensorFlow's default for get_variable and Dense."""

    def __init__(self, seed=None):
        self.seed = seed

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        shape = list(shape)
        if len(shape) < 1:
            fan_in = fan_out = 1
        elif len(shape) == 1:
            fan_in = fan_out = shape[0]
        else:
            receptive = math.prod(shape[:-2]) if len(shape) > 2 else 1
            fan_in, fan_out = shape[-2] * receptive, shape[-1] * receptive
        limit = math.sqrt(6.0 / max(1.0, fan_in + fan_out))
        return random_ops.uniform(shape, -limit, limit, dtype, self.seed)


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
random_uniform_initializer = RandomUniform
glorot_uniform_initializer = GlorotUniform
