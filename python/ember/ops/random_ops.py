"""``ember.random``: TensorFlow 2's random ops and seed semantics (``set_seed`` + op ``seed``)."""

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor

_RandomUniform = _C.op("RandomUniform")
_RandomStandardNormal = _C.op("RandomStandardNormal")
_TruncatedNormal = _C.op("TruncatedNormal")
_RandomUniformInt = _C.op("RandomUniformInt")
_StatelessRandomUniform = _C.op("StatelessRandomUniform")
_StatelessRandomNormal = _C.op("StatelessRandomNormal")
_StatelessTruncatedNormal = _C.op("StatelessTruncatedNormal")
_StatelessRandomUniformInt = _C.op("StatelessRandomUniformInt")


def set_seed(seed):
    """Sets the global seed: afterwards the sequence of random ops (and their op seeds) is reproducible."""
    if seed is None:
        _C.random_unset_seed()
    else:
        _C.random_set_seed(int(seed))


def _shape(shape):
    if isinstance(shape, Tensor):
        return [int(v) for v in shape.numpy().reshape(-1)]
    if isinstance(shape, int):
        return [shape]
    return [int(d) for d in shape]


def _scale(x, scale, shift):
    if scale is not None and not (isinstance(scale, (int, float)) and scale == 1):
        x = x * convert_to_tensor(scale, dtype=x.dtype)
    if shift is not None and not (isinstance(shift, (int, float)) and shift == 0):
        x = x + convert_to_tensor(shift, dtype=x.dtype)
    return x


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform values in [minval, maxval) (maxval defaults to 1 for floats and is required for ints)."""
    dtype = dtypes.as_dtype(dtype)
    seed1, seed2 = _C.random_get_seed(seed)
    if dtype.is_integer:
        if maxval is None:
            raise ValueError("Must specify maxval for integer dtype %s" % dtype.name)
        return _RandomUniformInt(_shape(shape), int(minval), int(maxval), dtype, seed1, seed2)
    x = _RandomUniform(_shape(shape), dtype, seed1, seed2)
    maxval = 1 if maxval is None else maxval
    if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)) and (minval, maxval) == (0, 1):
        return x
    return x * (convert_to_tensor(maxval, dtype=dtype) - convert_to_tensor(minval, dtype=dtype)) + \
        convert_to_tensor(minval, dtype=dtype)


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    seed1, seed2 = _C.random_get_seed(seed)
    return _scale(_RandomStandardNormal(_shape(shape), dtype, seed1, seed2), stddev, mean)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    seed1, seed2 = _C.random_get_seed(seed)
    return _scale(_TruncatedNormal(_shape(shape), dtype, seed1, seed2), stddev, mean)


def _seed_tensor(seed):
    seed = seed if isinstance(seed, Tensor) else convert_to_tensor(seed)
    if seed.shape != (2,):
        raise ValueError(f"seed must have shape [2], got {seed.shape}")
    return seed


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None, alg="auto_select"):
    """Deterministic in (shape, seed): the same seed pair always gives the same values."""
    dtype = dtypes.as_dtype(dtype)
    if dtype.is_integer:
        if maxval is None:
            raise ValueError("Must specify maxval for integer dtype %s" % dtype.name)
        return _StatelessRandomUniformInt(_seed_tensor(seed), _shape(shape), int(minval), int(maxval), dtype)
    x = _StatelessRandomUniform(_seed_tensor(seed), _shape(shape), dtype)
    maxval = 1 if maxval is None else maxval
    return x * (convert_to_tensor(maxval, dtype=dtype) - convert_to_tensor(minval, dtype=dtype)) + \
        convert_to_tensor(minval, dtype=dtype)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None, alg="auto_select"):
    return _scale(_StatelessRandomNormal(_seed_tensor(seed), _shape(shape), dtypes.as_dtype(dtype)), stddev, mean)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None,
                               alg="auto_select"):
    return _scale(_StatelessTruncatedNormal(_seed_tensor(seed), _shape(shape), dtypes.as_dtype(dtype)), stddev,
                  mean)
