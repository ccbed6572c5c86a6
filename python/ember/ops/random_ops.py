"""``ember.random``: TensorFlow 2's random ops and seed semantics (``set_seed`` + op ``seed``)."""

import math
import numbers
import operator

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops

_RandomUniform = _C.op("RandomUniform")
_RandomStandardNormal = _C.op("RandomStandardNormal")
_TruncatedNormal = _C.op("TruncatedNormal")
_RandomUniformInt = _C.op("RandomUniformInt")
_StatelessRandomUniform = _C.op("StatelessRandomUniform")
_StatelessRandomNormal = _C.op("StatelessRandomNormal")
_StatelessTruncatedNormal = _C.op("StatelessTruncatedNormal")
_StatelessRandomUniformInt = _C.op("StatelessRandomUniformInt")
_StatelessRandomUniformFullInt = _C.op("StatelessRandomUniformFullInt")


_MAXINT32 = 2**31 - 1  # TF truncates seeds modulo this (kernels/seed.h)


def _seed_int(seed, what):
    """A seed as a Python int. TF takes ints, NumPy integers, floats and concrete scalar tensors; a graph
    tensor has no value while tracing (TF's TypeError too: use the stateless ops for tensor seeds)."""
    if isinstance(seed, Tensor):
        if seed._is_symbolic:
            raise TypeError(f"{what}: seed must be a Python int or a concrete scalar tensor, got a symbolic tensor "
                            "inside ember.function; use the tf.random.stateless_* ops to seed from a tensor")
        if seed.ndim != 0:
            raise TypeError(f"{what}: seed must be a scalar, got a tensor of shape {seed.shape}")
        if not (seed.dtype.is_integer or seed.dtype.is_floating):
            raise TypeError(f"{what}: seed must be an int, got a {seed.dtype.name} tensor")
        seed = seed.numpy().item()
    try:
        return operator.index(seed)
    except TypeError:
        pass
    if isinstance(seed, numbers.Real) and math.isfinite(float(seed)):
        return int(seed)
    raise TypeError(f"{what}: seed must be an int, got {seed!r}")


def _get_seed(seed, what):
    """The (seed, seed2) attributes of a stateful random op. Reducing the op seed modulo 2^31 - 1 first is
    exact: that is all TF keeps of it, so Python ints of any size work."""
    return _C.random_get_seed(None if seed is None else _seed_int(seed, what) % _MAXINT32)


def set_seed(seed):
    """Sets the global seed: afterwards the sequence of random ops (and their op seeds) is reproducible."""
    if seed is None:
        _C.random_unset_seed()
        return
    value = _seed_int(seed, "set_seed")
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"set_seed: the global seed must fit in int64, got {value}")
    _C.random_set_seed(value)


def _shape(shape, op):
    return array_ops._shape_operand(shape, op, "shape", TypeError, vector=True)


def _scale(x, scale, shift):
    if scale is not None and not (isinstance(scale, (int, float)) and scale == 1):
        x = x * convert_to_tensor(scale, dtype=x.dtype)
    if shift is not None and not (isinstance(shift, (int, float)) and shift == 0):
        x = x + convert_to_tensor(shift, dtype=x.dtype)
    return x


_FLOAT_TYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
_INT_TYPES = (dtypes.int32, dtypes.int64)


def _check_dtype(dtype, allowed):
    dtype = dtypes.as_dtype(dtype)
    if dtype not in allowed:
        names = ", ".join("tf." + d.name for d in allowed)
        raise ValueError(f"Argument `dtype` got invalid value {dtype!r}. Accepted dtypes are ({names}).")
    return dtype


def _check_float_dtype(dtype):
    """Normal distributions: TF fails converting the default mean 0.0 to an integer dtype."""
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"Cannot convert 0.0 to EagerTensor of dtype {dtype.name}: normal distributions need a "
                        "floating-point dtype")
    return dtype


def _int_bound(value, what):
    """An integer minval/maxval: an int, a NumPy integer or an integer scalar tensor (not a float)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype int: {what} of an integer "
                        "distribution must be an integer") from None


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform values in [minval, maxval) (maxval defaults to 1 for floats and is required for ints)."""
    dtype = _check_dtype(dtype, _FLOAT_TYPES + _INT_TYPES)
    if dtype.is_integer and maxval is None:
        raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
    seed1, seed2 = _get_seed(seed, "random.uniform")
    if dtype.is_integer:
        return _RandomUniformInt(_shape(shape, "RandomUniformInt"), _int_bound(minval, "minval"), _int_bound(maxval, "maxval"), dtype,
                                 seed1, seed2)
    x = _RandomUniform(_shape(shape, "RandomUniform"), dtype, seed1, seed2)
    maxval = 1 if maxval is None else maxval
    if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)) and (minval, maxval) == (0, 1):
        return x
    return x * (convert_to_tensor(maxval, dtype=dtype) - convert_to_tensor(minval, dtype=dtype)) + \
        convert_to_tensor(minval, dtype=dtype)


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal values: mean + stddev * a standard normal draw."""
    dtype = _check_float_dtype(dtype)
    seed1, seed2 = _get_seed(seed, "random.normal")
    return _scale(_RandomStandardNormal(_shape(shape, "RandomStandardNormal"), dtype, seed1, seed2), stddev, mean)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal values redrawn until within two standard deviations of the mean."""
    dtype = _check_float_dtype(dtype)
    seed1, seed2 = _get_seed(seed, "random.truncated_normal")
    return _scale(_TruncatedNormal(_shape(shape, "TruncatedNormal"), dtype, seed1, seed2), stddev, mean)


def _seed_tensor(seed, op_name):
    seed = seed if isinstance(seed, Tensor) else convert_to_tensor(seed)
    if seed.shape != (2,):
        raise errors.InvalidArgumentError(
            None, None, f"{op_name}: seed must have shape [2], not {seed.shape.as_list()}")
    return seed


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None, alg="auto_select"):
    """Deterministic in (shape, seed): the same seed pair always gives the same values."""
    dtype = _check_dtype(dtype, _FLOAT_TYPES + _INT_TYPES)
    if dtype.is_integer:
        if (minval is None) != (maxval is None):
            raise ValueError(f"For integer `dtype` argument {dtype!r}, argument `minval` and `maxval` must be both "
                             f"None or not None. Got `minval`={minval} and `maxval`={maxval}.")
        if minval is None:
            return _StatelessRandomUniformFullInt(_shape(shape, "StatelessRandomUniformFullInt"),
                                                  _seed_tensor(seed, "StatelessRandomUniformFullInt"), dtype)
        return _StatelessRandomUniformInt(_shape(shape, "StatelessRandomUniformInt"),
                                          _seed_tensor(seed, "StatelessRandomUniformInt"),
                                          _int_bound(minval, "minval"), _int_bound(maxval, "maxval"), dtype)
    x = _StatelessRandomUniform(_shape(shape, "StatelessRandomUniform"), _seed_tensor(seed, "StatelessRandomUniform"), dtype)
    maxval = 1 if maxval is None else maxval
    return x * (convert_to_tensor(maxval, dtype=dtype) - convert_to_tensor(minval, dtype=dtype)) + \
        convert_to_tensor(minval, dtype=dtype)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None, alg="auto_select"):
    """Normal values, a pure function of (seed, shape)."""
    x = _StatelessRandomNormal(_shape(shape, "StatelessRandomNormal"), _seed_tensor(seed, "StatelessRandomNormal"), _check_float_dtype(dtype))
    return _scale(x, stddev, mean)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None,
                               alg="auto_select"):
    """Truncated normal values (within two stddevs of the mean), a pure function of (seed, shape)."""
    x = _StatelessTruncatedNormal(_shape(shape, "StatelessTruncatedNormal"),
                                  _seed_tensor(seed, "StatelessTruncatedNormal"),
                                  _check_float_dtype(dtype))
    return _scale(x, stddev, mean)


_Multinomial = _C.op("Multinomial")
_StatelessMultinomial = _C.op("StatelessMultinomial")
_RandomShuffle = _C.op("RandomShuffle")


def _categorical_operands(logits, num_samples, dtype, op):
    logits = logits if isinstance(logits, Tensor) else convert_to_tensor(logits)
    if not logits.dtype.is_floating:
        raise TypeError(f"{op}: logits must be a floating-point tensor, got dtype {logits.dtype.name}")
    out = dtypes.int64 if dtype is None else _check_dtype(dtype, _INT_TYPES)
    if isinstance(num_samples, Tensor):
        n = num_samples if num_samples.dtype in _INT_TYPES else convert_to_tensor(num_samples, dtype=dtypes.int32)
    else:
        n = convert_to_tensor(_int_bound(num_samples, "num_samples"), dtype=dtypes.int32)
    return logits, n, out


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """Class indices drawn from each row of ``logits`` [batch, classes]: [batch, num_samples]."""
    logits, n, out = _categorical_operands(logits, num_samples, dtype, "Multinomial")
    seed1, seed2 = _get_seed(seed, "random.categorical")
    return _Multinomial(logits, n, seed1, seed2, out)


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """TF 1's name for ``categorical``."""
    return categorical(logits, num_samples, dtype=output_dtype, seed=seed, name=name)


def stateless_categorical(logits, num_samples, seed, dtype=dtypes.int64, name=None):
    """``categorical`` as a pure function of seed [s0, s1]."""
    logits, n, out = _categorical_operands(logits, num_samples, dtype, "StatelessMultinomial")
    return _StatelessMultinomial(logits, n, _seed_tensor(seed, "StatelessMultinomial"), out)


def shuffle(value, seed=None, name=None):
    """``value`` with its first dimension randomly permuted."""
    value = value if isinstance(value, Tensor) else convert_to_tensor(value)
    seed1, seed2 = _get_seed(seed, "random.shuffle")
    return _RandomShuffle(value, seed1, seed2)


_RandomGamma = _C.op("RandomGamma")
_StatelessRandomGammaV2 = _C.op("StatelessRandomGammaV2")
_RandomPoissonV2 = _C.op("RandomPoissonV2")
_StatelessRandomPoisson = _C.op("StatelessRandomPoisson")


def _gamma_operands(alpha, beta, dtype):
    from ember.ops import array_ops as _a  # noqa: PLC0415 - broadcast_to lives there too
    dtype = _check_dtype(dtype, _FLOAT_TYPES)
    alpha = convert_to_tensor(alpha, dtype=dtype)
    beta = convert_to_tensor(1 if beta is None else beta, dtype=dtype)
    if beta.shape.rank != 0 and beta.shape != alpha.shape:
        alpha = alpha + _a.zeros_like(beta)  # alpha broadcast against beta, as TF
    return alpha, beta


def _gamma_finish(draws, beta):
    import numpy as np  # noqa: PLC0415
    from ember.ops import math_ops  # noqa: PLC0415
    tiny = convert_to_tensor(np.finfo(draws.dtype.as_numpy_dtype).tiny, dtype=draws.dtype)
    return math_ops.maximum(tiny, draws / beta)


def gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed=None, name=None):
    """Gamma(alpha, beta) draws of shape ``shape + alpha.shape`` (beta is a rate; results >= the tiny float)."""
    alpha, beta = _gamma_operands(alpha, beta, dtype)
    seed1, seed2 = _get_seed(seed, "random.gamma")
    return _gamma_finish(_RandomGamma(_shape(shape, "RandomGamma"), alpha, seed1, seed2), beta)


def stateless_gamma(shape, seed, alpha, beta=None, dtype=dtypes.float32, name=None):
    """Gamma draws of shape ``shape`` (ending with alpha's broadcast shape), a pure function of the seed."""
    alpha, beta = _gamma_operands(alpha, beta, dtype)
    draws = _StatelessRandomGammaV2(_shape(shape, "StatelessRandomGammaV2"),
                                    _seed_tensor(seed, "StatelessRandomGammaV2"), alpha)
    return _gamma_finish(draws, beta)


def poisson(shape, lam, dtype=dtypes.float32, seed=None, name=None):
    """Poisson(lam) draws of shape ``shape + lam.shape``."""
    dtype = _check_dtype(dtype, _FLOAT_TYPES + _INT_TYPES)
    lam = lam if isinstance(lam, Tensor) else convert_to_tensor(lam, dtype=dtypes.float32)
    seed1, seed2 = _get_seed(seed, "random.poisson")
    return _RandomPoissonV2(_shape(shape, "RandomPoissonV2"), lam, seed1, seed2, dtype)


def stateless_poisson(shape, seed, lam, dtype=dtypes.int32, name=None):
    """Poisson(lam) draws of shape ``shape`` (ending with lam's shape), a pure function of the seed."""
    dtype = _check_dtype(dtype, _FLOAT_TYPES + _INT_TYPES)
    lam = lam if isinstance(lam, Tensor) else convert_to_tensor(lam, dtype=dtypes.float32)
    return _StatelessRandomPoisson(_shape(shape, "StatelessRandomPoisson"),
                                   _seed_tensor(seed, "StatelessRandomPoisson"), lam, dtype)


_StatelessRandomBinomial = _C.op("StatelessRandomBinomial")


def _binomial_operands(shape, counts, probs, op):
    """counts and probs as one dtype, broadcast to one shape (which ``shape`` must end with)."""
    import numpy as np  # noqa: PLC0415
    from ember.ops import array_ops as _a  # noqa: PLC0415
    probs = probs if isinstance(probs, Tensor) else convert_to_tensor(
        probs, dtype=counts.dtype if isinstance(counts, Tensor) else dtypes.float32)
    counts = counts if isinstance(counts, Tensor) else convert_to_tensor(counts, dtype=probs.dtype)
    if counts.dtype != probs.dtype:
        raise TypeError(f"{op}: counts ({counts.dtype.name}) and probs ({probs.dtype.name}) must have one dtype")
    try:
        target = np.broadcast_shapes(tuple(counts.shape.as_list()), tuple(probs.shape.as_list()))
    except ValueError:
        raise errors.InvalidArgumentError(None, None, f"{op}: counts {counts.shape} and probs {probs.shape} "
                                          "are not broadcastable") from None
    target = list(target)
    if counts.shape.as_list() != target:
        counts = _a.broadcast_to(counts, target)
    if probs.shape.as_list() != target:
        probs = _a.broadcast_to(probs, target)
    return _shape(shape, op), counts, probs


def stateless_binomial(shape, seed, counts, probs, output_dtype=dtypes.int32, name=None):
    """Binomial(counts, probs) draws of shape ``shape``, a pure function of seed [s0, s1]."""
    output_dtype = _check_dtype(output_dtype, _FLOAT_TYPES + _INT_TYPES)
    shape, counts, probs = _binomial_operands(shape, counts, probs, "StatelessRandomBinomial")
    return _StatelessRandomBinomial(shape, _seed_tensor(seed, "StatelessRandomBinomial"), counts, probs,
                                    output_dtype)


def split(seed, num=2, alg="auto_select"):
    """num new stateless seeds [num, 2] derived from seed, TensorFlow's way: full-range integers of the seed's
    dtype drawn statelessly from it."""
    seed = convert_to_tensor(seed) if not isinstance(seed, Tensor) else seed
    return stateless_uniform([num, 2], seed=seed, minval=None, maxval=None, dtype=seed.dtype, alg=alg)


def fold_in(seed, data, alg="auto_select"):
    """A new stateless seed from seed and an integer data: [a full-range draw from seed, data]."""
    data = convert_to_tensor(data) if not isinstance(data, Tensor) else data
    seed1 = stateless_uniform([], seed=seed, minval=None, maxval=None, dtype=data.dtype, alg=alg)
    return array_ops.stack([seed1, data])
