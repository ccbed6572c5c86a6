"""``ember.keras.initializers``: Keras 2's weight initializers (tf_keras), callables
``init(shape, dtype=None)`` with ``get_config``, and ``get`` / ``serialize`` / ``deserialize``.

A seeded initializer gives the same values at each call (Keras 2 does the same); an unseeded one draws
from ember's global random stream, so ``ember.random.set_seed`` makes a model's initial weights repeat.
"""

import math

import numpy as np

from ember import dtypes as _dtypes
from ember.framework.tensor import convert_to_tensor
from ember.ops import array_ops, math_ops, random_ops
from ember.keras.utils.object_table import ObjectTable


def _float_dtype(dtype):
    dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype}.")
    return dtype


class Initializer:
    """The base: subclasses define ``__call__(shape, dtype=None, **kwargs)`` and ``get_config``."""

    def __call__(self, shape, dtype=None, **kwargs):
        raise NotImplementedError(f"Initializer subclasses must implement the `__call__()` method "
                                  f"({type(self).__name__} does not).")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("dtype", None)
        return cls(**config)


class Zeros(Initializer):
    def __call__(self, shape, dtype=None, **kwargs):
        return array_ops.zeros(shape, _dtypes.as_dtype(dtype or _dtypes.float32))


class Ones(Initializer):
    def __call__(self, shape, dtype=None, **kwargs):
        return array_ops.ones(shape, _dtypes.as_dtype(dtype or _dtypes.float32))


class Constant(Initializer):
    def __init__(self, value=0):
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
        value = np.asarray(self.value, dtype=dtype.as_numpy_dtype)
        return convert_to_tensor(np.broadcast_to(value, tuple(shape)).copy())

    def get_config(self):
        return {"value": self.value}


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        return random_ops.normal(shape, self.mean, self.stddev, _float_dtype(dtype), self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, **kwargs):
        dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
        return random_ops.uniform(shape, self.minval, self.maxval, dtype, self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        return random_ops.truncated_normal(shape, self.mean, self.stddev, _float_dtype(dtype), self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


def _fans(shape):
    """(fan_in, fan_out) as Keras computes them: a kernel's receptive field multiplies both."""
    shape = list(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if scale <= 0.0:
            raise ValueError(f"`scale` must be positive float. Received: scale={scale}.")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError(f"Invalid `mode` argument: {mode}. Please use one of the valid modes: "
                             "{'fan_in', 'fan_out', 'fan_avg'}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in {"uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError(f"Invalid `distribution` argument: {distribution}. Allowed distributions: "
                             "{'uniform', 'truncated_normal', 'untruncated_normal'}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, **kwargs):
        dtype = _float_dtype(dtype)
        fan_in, fan_out = _fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        if self.distribution == "truncated_normal":
            # 0.879...: the standard deviation of a standard normal truncated to [-2, 2].
            stddev = math.sqrt(scale) / 0.87962566103423978
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.normal(shape, 0.0, math.sqrt(scale), dtype, self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.uniform(shape, -limit, limit, dtype, self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed}


def _variance_scaling_class(name, scale, mode, distribution):
    def __init__(self, seed=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed)

    def get_config(self):
        return {"seed": self.seed}

    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config,
                                           "__doc__": f"VarianceScaling({scale}, '{mode}', '{distribution}')."})


GlorotUniform = _variance_scaling_class("GlorotUniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _variance_scaling_class("GlorotNormal", 1.0, "fan_avg", "truncated_normal")
HeUniform = _variance_scaling_class("HeUniform", 2.0, "fan_in", "uniform")
HeNormal = _variance_scaling_class("HeNormal", 2.0, "fan_in", "truncated_normal")
LecunUniform = _variance_scaling_class("LecunUniform", 1.0, "fan_in", "uniform")
LecunNormal = _variance_scaling_class("LecunNormal", 1.0, "fan_in", "truncated_normal")


class Orthogonal(Initializer):
    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None, **kwargs):
        dtype = _float_dtype(dtype)
        shape = list(shape)
        if len(shape) < 2:
            raise ValueError(f"The tensor to initialize must be at least two-dimensional. Received: shape={shape} "
                             "of rank {len(shape)}.")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        flat = random_ops.normal([max(rows, cols), min(rows, cols)], 0.0, 1.0, dtype, self.seed).numpy()
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.diag(r))  # makes the decomposition unique, as Keras does
        if rows < cols:
            q = q.T
        return convert_to_tensor((self.gain * q).reshape(shape).astype(dtype.as_numpy_dtype))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None, **kwargs):
        dtype = _float_dtype(dtype)
        if len(shape) != 2:
            raise ValueError(f"Identity matrix initializer can only be used for 2D matrices. Received: "
                             f"shape={tuple(shape)} of rank {len(shape)}.")
        return convert_to_tensor((self.gain * np.eye(*shape)).astype(dtype.as_numpy_dtype))

    def get_config(self):
        return {"gain": self.gain}


_CLASSES = {c.__name__: c for c in (Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal,
                                    VarianceScaling, GlorotUniform, GlorotNormal, HeUniform, HeNormal,
                                    LecunUniform, LecunNormal, Orthogonal, Identity)}
_NAMES = {"zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
          "random_uniform": RandomUniform, "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
          "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal, "he_uniform": HeUniform,
          "he_normal": HeNormal, "lecun_uniform": LecunUniform, "lecun_normal": LecunNormal,
          "orthogonal": Orthogonal, "identity": Identity, "uniform": RandomUniform, "normal": RandomNormal}
globals().update(_NAMES)  # Keras' lower-case names are the classes themselves

_TABLE = ObjectTable("initializer", "keras.initializers", _CLASSES, _NAMES,
                     "Could not interpret initializer identifier")
serialize, deserialize, get = _TABLE.serialize, _TABLE.deserialize, _TABLE.get

del math_ops
