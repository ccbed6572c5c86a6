"""``einsum``, ``clip_by_norm``, ``clip_by_global_norm``, ``linalg.global_norm``, ``math.polyval``,
``math.cumulative_logsumexp`` and the special functions (``math.igamma``, ``math.betainc``, ``math.lbeta``,
``math.erfcinv``, ``math.special.*``, ...) with TensorFlow's names and semantics.

``einsum`` runs TensorFlow's Einsum op (src/ember/ops/einsum.cc), which takes one or two operands; like
tf.einsum, more operands contract pairwise, each step an Einsum keeping the labels the output or a later
operand still needs (TensorFlow orders the pairs with opt_einsum; ember goes left to right).
"""

import numpy as np

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops.array_ops import _tensor

_Sqrt = _C.op("Sqrt")
_Sum = _C.op("Sum")
_Maximum = _C.op("Maximum")
_Minimum = _C.op("Minimum")
_SelectV2 = _C.op("SelectV2")
_Greater = _C.op("Greater")
_Cast = _C.op("Cast")
_L2Loss = _C.op("L2Loss")
_AddN = _C.op("AddN")
_CumulativeLogsumexp = _C.op("CumulativeLogsumexp")
_Einsum = _C.op("Einsum")


# ---- einsum -----------------------------------------------------------------------------------------


def _explicit(equation, count):
    """The input terms and the output of `equation`, spaces removed; an implicit output is TensorFlow's
    (and NumPy's): the ellipsis, then the labels used once, sorted."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        inputs, output = equation.split("->", 1)
    else:
        inputs = equation
        letters = [c for c in inputs if c.isalpha()]
        output = ("..." if "..." in inputs else "") + "".join(sorted(c for c in set(letters)
                                                                     if letters.count(c) == 1))
    terms = inputs.split(",")
    if len(terms) != count:
        raise ValueError(f"einsum: the equation {equation!r} names {len(terms)} operands, got {count}")
    return terms, output


def einsum(equation, *inputs, **kwargs):
    """The tensor contraction an Einstein-summation equation names ("ij,jk->ik", "...ij,...jk", "ii->i",
    "bhqd,bhkd->bhqk"): TensorFlow's Einsum op, pairwise for more than two operands."""
    kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected keyword arguments {sorted(kwargs)}")
    if not inputs:
        raise ValueError("einsum: at least one operand is needed")
    operands = [_tensor(x) for x in inputs]
    dtype = operands[0].dtype
    for x in operands[1:]:
        if x.dtype != dtype:
            raise TypeError(f"einsum: operands must have one dtype, got {dtype.name} and {x.dtype.name}")
    terms, output = _explicit(equation, len(operands))
    if len(operands) <= 2:
        return _Einsum(operands, ",".join(terms) + "->" + output)
    x, term = operands[0], terms[0]
    for k in range(1, len(operands)):
        if k == len(operands) - 1:
            kept = output
        else:
            needed = set(output).union(*terms[k + 1:])
            letters = "".join(dict.fromkeys(c for c in term + terms[k] if c.isalpha() and c in needed))
            kept = ("..." if "..." in term + terms[k] else "") + letters
        x = _Einsum([x, operands[k]], f"{term},{terms[k]}->{kept}")
        term = kept
    return x


# ---- norms and clipping --------------------------------------------------------------------------


def _slices_values(t):
    """An IndexedSlices' values (what TensorFlow's clipping and norms measure: duplicate rows count
    separately), or None for anything else."""
    return t.values if getattr(t, "_ember_indexed_slices", False) else None


def _with_values(t, values):
    from ember.framework.indexed_slices import IndexedSlices

    return IndexedSlices(values, t.indices, t.dense_shape)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t scaled down so that its L2 norm (over ``axes``, default all) is at most clip_norm. An IndexedSlices
    gives one with its values clipped, as TensorFlow's."""
    values = _slices_values(t)
    if values is not None:
        return _with_values(t, clip_by_norm(values, clip_norm, axes))
    t = _tensor(t)
    clip_norm = clip_norm if isinstance(clip_norm, Tensor) else convert_to_tensor(clip_norm, dtype=t.dtype)
    axes = list(range(t.shape.rank)) if axes is None else ([axes] if isinstance(axes, int) else list(axes))
    l2sum = _Sum(t * t, axes, True)
    positive = _Greater(l2sum, convert_to_tensor(0, dtype=t.dtype))
    # sqrt only where the sum is positive, so the gradient at a zero tensor is finite (as TensorFlow).
    l2norm = _SelectV2(positive, _Sqrt(_SelectV2(positive, l2sum, _C.op("OnesLike")(l2sum))), l2sum)
    return t * clip_norm / _Maximum(l2norm, clip_norm)


def global_norm(t_list, name=None):
    """sqrt(sum of the squares of every element of every tensor in t_list); None entries are skipped."""
    if isinstance(t_list, Tensor) or not hasattr(t_list, "__iter__"):
        raise TypeError("global_norm: t_list should be a sequence of tensors")
    values = [_tensor(_slices_values(t) if _slices_values(t) is not None else t) for t in t_list if t is not None]
    if not values:
        return convert_to_tensor(0.0)
    halves = [_L2Loss(v) for v in values]
    total = halves[0] if len(halves) == 1 else _AddN(halves)
    return _Sqrt(total * convert_to_tensor(2, dtype=total.dtype))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(the tensors scaled by clip_norm / max(global_norm, clip_norm), the global norm): all of them by the
    same factor; an infinite or NaN norm makes every value NaN, as TensorFlow."""
    if isinstance(t_list, Tensor) or not hasattr(t_list, "__iter__"):
        raise TypeError("clip_by_global_norm: t_list should be a sequence of tensors")
    t_list = list(t_list)
    use_norm = global_norm(t_list) if use_norm is None else _tensor(use_norm)
    one = convert_to_tensor(1, dtype=use_norm.dtype)
    clip_norm = _Cast(_tensor(clip_norm, use_norm.dtype), use_norm.dtype) \
        if _tensor(clip_norm, use_norm.dtype).dtype != use_norm.dtype else _tensor(clip_norm, use_norm.dtype)
    scale = clip_norm * _Minimum(one / use_norm, one / clip_norm)
    scale = scale + (use_norm - use_norm)  # NaN when the norm is not finite
    def scaled(t):
        if t is None:
            return None
        values = _slices_values(t)
        if values is not None:
            return _with_values(t, scaled(values))
        t = _tensor(t)
        return t * (scale if t.dtype == scale.dtype else _Cast(scale, t.dtype))

    return [scaled(t) for t in t_list], use_norm


# ---- polyval, cumulative_logsumexp --------------------------------------------------------------


def polyval(coeffs, x, name=None):
    """coeffs[0] * x^(n-1) + ... + coeffs[n-1], by Horner's rule; no coefficients gives zeros."""
    if isinstance(coeffs, Tensor) or not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"polyval: coeffs must be a list of tensors, got {type(coeffs).__name__}")
    x = _tensor(x)
    if not coeffs:
        return _C.op("ZerosLike")(x)
    p = _tensor(coeffs[0], x.dtype)
    for c in coeffs[1:]:
        p = _tensor(c, x.dtype) + p * x
    return p


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """log(cumsum(exp(x))) along axis, computed stably; ``exclusive`` and ``reverse`` as in cumsum."""
    x = _tensor(x)
    axis = np.asarray(axis.numpy() if isinstance(axis, Tensor) else axis)
    if axis.ndim != 0 or axis.dtype.kind not in "iu":
        raise TypeError(f"CumulativeLogsumexp: axis must be an integer scalar, got {axis!r}")
    axis = int(axis)
    return _CumulativeLogsumexp(x, axis, bool(exclusive), bool(reverse))


# ---- special functions (docs/ops_indexing_sorting_math.md) ----------------------------------------
# The ops are src/ember/ops/special_functions.cc; those whose inputs are x alone (tf.math.bessel_i0, ndtri,
# ...) have generated wrappers in math_ops. The ones below name their inputs as TensorFlow does, or
# compose ops as TensorFlow's Python does.
_Igamma = _C.op("Igamma")
_Igammac = _C.op("Igammac")
_Betainc = _C.op("Betainc")
_Zeta = _C.op("Zeta")
_Ndtri = _C.op("Ndtri")
_Lgamma = _C.op("Lgamma")
_Erf = _C.op("Erf")
_Erfc = _C.op("Erfc")
_Log = _C.op("Log")
_Log1p = _C.op("Log1p")
_Abs = _C.op("Abs")
_Less = _C.op("Less")


def igamma(a, x, name=None):
    """The regularised lower incomplete gamma function P(a, x), with broadcasting."""
    return _Igamma(a, x)


def igammac(a, x, name=None):
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x), with broadcasting."""
    return _Igammac(a, x)


def betainc(a, b, x, name=None):
    """The regularised incomplete beta function I_x(a, b); a, b and x share a shape or are scalars."""
    return _Betainc(a, b, x)


def zeta(x, q, name=None):
    """The Hurwitz zeta function, the sum over k >= 0 of (k + q)^-x, with broadcasting."""
    return _Zeta(x, q)


def erfcinv(x, name=None):
    """The inverse of erfc on [0, 2]: -ndtri(x / 2) / sqrt(2), as TensorFlow composes it."""
    x = _tensor(x)
    return -_Ndtri(x * _tensor(0.5, x.dtype)) * _tensor(np.sqrt(0.5), x.dtype)


def lbeta(x, name=None):
    """log |B(x)| along the last axis: sum(lgamma(x)) - lgamma(sum(x)); -inf for an empty last axis."""
    x = _tensor(x)
    return _Sum(_Lgamma(x), -1, False) - _Lgamma(_Sum(x, -1, False))


def ndtr(x, name=None):
    """The standard normal CDF, TensorFlow's distributions.special_math.ndtr (not a public tf name):
    0.5 (1 + erf(x / sqrt 2)) near 0, erfc of |x| / sqrt 2 in the tails so that small values keep their
    digits."""
    x = _tensor(x)
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"ndtr: x must be float32 or float64, got {x.dtype.name}")
    w = x * _tensor(0.5 * np.sqrt(2.0), x.dtype)
    z = _Abs(w)
    tail = _Erfc(z)
    y = _SelectV2(_Less(z, _tensor(0.5 * np.sqrt(2.0), x.dtype)), 1.0 + _Erf(w),
                  _SelectV2(_Greater(w, _tensor(0.0, x.dtype)), 2.0 - tail, tail))
    return 0.5 * y


# log_ndtr's switch points, TensorFlow's: above the upper one log(ndtr(x)) = log1p(-ndtr(-x)) ~ -ndtr(-x);
# below the lower one ndtr underflows and the asymptotic series of log(ndtr) takes over.
_LOG_NDTR_BOUNDS = {dtypes.float32: (-10.0, 5.0), dtypes.float64: (-20.0, 8.0)}


def log_ndtr(x, series_order=3, name=None):
    """log of the standard normal CDF, TensorFlow's distributions.special_math.log_ndtr (not a public tf
    name), accurate in both tails: -ndtr(-x) above 5 (float32) or 8 (float64), log(ndtr(x)) in between,
    and below -10 or -20 the asymptotic series -x^2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_{n=1}^{order}
    (-1)^n (2n-1)!! / x^(2n))."""
    if not isinstance(series_order, int) or isinstance(series_order, bool):
        raise TypeError(f"log_ndtr: series_order must be a Python int, got {type(series_order).__name__}")
    if not 0 <= series_order <= 30:
        raise ValueError(f"log_ndtr: series_order must be in [0, 30], got {series_order}")
    x = _tensor(x)
    if x.dtype not in _LOG_NDTR_BOUNDS:
        raise TypeError(f"log_ndtr: x must be float32 or float64, got {x.dtype.name}")
    lower, upper = (_tensor(v, x.dtype) for v in _LOG_NDTR_BOUNDS[x.dtype])
    middle = _Log(ndtr(_Maximum(x, lower)))
    high = -ndtr(-x)
    # The series is evaluated at min(x, lower) so that its logs stay finite where it is not taken.
    t = _Minimum(x, lower)
    t_squared = t * t
    correction = _tensor(0.0, x.dtype)
    power, double_factorial = _tensor(1.0, x.dtype), 1.0
    for n in range(1, series_order + 1):
        double_factorial *= 2 * n - 1
        power = power * t_squared
        correction = correction + ((-1) ** n * double_factorial) / power
    low = (-0.5 * t_squared - _Log(-t) - _tensor(0.5 * np.log(2 * np.pi), x.dtype) + _Log1p(correction))
    return _SelectV2(_Greater(x, upper), high, _SelectV2(_Greater(x, lower), middle, low))
