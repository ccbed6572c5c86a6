"""Element-wise math with TensorFlow's names: ``ember.add``, ``ember.math.*``."""

import operator

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops

_Cast = _C.op("Cast")
_RealDiv = _C.op("RealDiv")
_AddN = _C.op("AddN")


# ---- wrappers generated from the op registry -----------------------------------------------------------
# An op whose registry row names an ``api_name`` (the element-wise ops of src/ember/kernels/elementwise_ops.h)
# gets a wrapper that only calls it, with the row's doc as its docstring. Everything below that is written by
# hand does more than call one op (TensorFlow's Python API converts, checks or composes there).


def _make_wrapper(info):
    op = _C.op(info["name"])
    if info["inputs"] == ["x"]:
        def fn(x, name=None):
            return op(x)
    elif info["inputs"] == ["x", "y"]:
        def fn(x, y, name=None):
            return op(x, y)
    else:
        raise AssertionError(f"{info['name']}: no generated wrapper for inputs {info['inputs']}")
    fn.__name__ = fn.__qualname__ = info["api_name"]
    fn.__doc__ = info["doc"]
    fn.__module__ = __name__
    return fn


def _generate_wrappers(namespace):
    names = []
    for op_name in _C.op_names():
        info = _C.op_info(op_name)
        if info["api_name"]:
            namespace[info["api_name"]] = _make_wrapper(info)
            names.append(info["api_name"])
    return names


_GENERATED = _generate_wrappers(globals())

# TensorFlow's second names for the same ops.
floor_div = floordiv  # noqa: F821 - generated above
mod = floormod  # noqa: F821 - generated above

# ---- complex numbers (docs/complex.md) -------------------------------------------------------------------
_Complex = _C.op("Complex")
_Real = _C.op("Real")
_Imag = _C.op("Imag")
_Conj = _C.op("Conj")
_ComplexAbs = _C.op("ComplexAbs")
_Angle = _C.op("Angle")
_generated_abs = abs  # noqa: F821 - generated above


def abs(x, name=None):  # noqa: A001 - TensorFlow's name
    x = _as_tensor(x)
    return _ComplexAbs(x) if x.dtype.is_complex else _generated_abs(x)


# The row's doc, as the generated wrapper's (test_public_names.py); complex x runs ComplexAbs (docs/complex.md).
abs.__doc__ = _generated_abs.__doc__

_generated_sign = sign  # noqa: F821 - generated above
_DivNoNan = _C.op("DivNoNan")


def sign(x, name=None):
    x = _as_tensor(x)
    if not x.dtype.is_complex:
        return _generated_sign(x)
    # TensorFlow's composition, so that the gradient is z / |z|'s (its Sign op's gradient is zero).
    return _DivNoNan(x, _Cast(_ComplexAbs(x), x.dtype))


sign.__doc__ = _generated_sign.__doc__


def complex(real, imag, name=None):  # noqa: A001 - TensorFlow's name
    """real + imag * 1j, broadcasting: float32 parts give complex64, float64 parts complex128."""
    real = _as_tensor(real)
    imag = imag if isinstance(imag, Tensor) else convert_to_tensor(imag, dtype_hint=real.dtype)
    if real.dtype != imag.dtype or real.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"The `real` and `imag` components have incorrect types: {real.dtype.name} "
                        f"{imag.dtype.name}. They must be consistent, and one of [tf.float32, tf.float64]")
    return _Complex(real, imag)


def real(input, name=None):  # noqa: A002 - TensorFlow's name
    """The real part of a complex tensor; a real numeric tensor is returned as it is."""
    input = _as_tensor(input)
    if input.dtype.is_complex:
        return _Real(input)
    if input.dtype.is_numeric:
        return input
    raise TypeError(f"input must be a numeric tensor, but got tensor with dtype {input.dtype}")  # TF's (bool, string)


def imag(input, name=None):  # noqa: A002 - TensorFlow's name
    """The imaginary part of a complex tensor; zeros for a real tensor."""
    input = _as_tensor(input)
    return _Imag(input) if input.dtype.is_complex else array_ops.zeros_like(input)


def conj(x, name=None):
    """The complex conjugate; a real numeric tensor is returned as it is."""
    x = _as_tensor(x)
    if x.dtype.is_complex:
        return _Conj(x)
    if x.dtype.is_numeric:
        return x
    raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype!r}")


def angle(input, name=None):  # noqa: A002 - TensorFlow's name
    """The argument atan2(imag, real) of each element: pi for negative reals, 0 for the others."""
    input = _as_tensor(input)
    if input.dtype.is_complex:
        return _Angle(input)
    return atan2(array_ops.zeros_like(input), input)  # noqa: F821 - generated above


# The generated wrappers of the integer bit ops: TensorFlow has them in tf.bitwise (ember/bitwise.py), not in
# tf.math.
BITWISE_API = ("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift")

# What ``from ember.ops.math_ops import *`` (ember.math) exports: tf.math's names, the generated ones and
# those written below. The matrix helpers at the end live in ember.linalg.
__all__ = sorted([name for name in _GENERATED if name not in BITWISE_API] + [
    "add_n", "angle", "argmax", "argmin", "cast", "complex", "conj", "imag", "real", "count_nonzero", "cumprod", "cumsum", "divide", "floor_div",
    "logical_xor", "matmul", "mod", "reduce_all", "reduce_any", "reduce_euclidean_norm", "reduce_logsumexp",
    "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_std", "reduce_sum", "reduce_variance",
    "scalar_mul", "truediv",
])


def logical_xor(x, y, name=None):
    """Boolean exclusive or."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)))


def cast(x, dtype, name=None):
    """Converts ``x`` to ``dtype`` (floats to ints truncate toward zero)."""
    dtype = dtypes.as_dtype(dtype)
    if not isinstance(x, Tensor):
        x = convert_to_tensor(x)
    if x.dtype == dtype:
        return x
    return _Cast(x, dtype)


def truediv(x, y, name=None):
    """x / y; integers are divided in floating point (int8/16 -> float32, int32/64 -> float64)."""
    x = x if isinstance(x, Tensor) else convert_to_tensor(x, dtype_hint=getattr(y, "dtype", None))
    y = y if isinstance(y, Tensor) else convert_to_tensor(y, dtype_hint=x.dtype)
    if x.dtype.is_integer and x.dtype == y.dtype:
        target = dtypes.float32 if x.dtype.size <= 2 else dtypes.float64
        x, y = _Cast(x, target), _Cast(y, target)
    return _RealDiv(x, y)


def divide(x, y, name=None):
    """x / y (Python's true division), like ``tf.math.divide``."""
    return truediv(x, y)


def add_n(inputs, name=None):
    """Sum of a list of tensors of one shape and dtype."""
    if not inputs:
        raise ValueError("inputs must be a non-empty list of tensors")
    return _AddN(list(inputs))


def scalar_mul(scalar, x, name=None):
    """scalar * x, for a scalar ``scalar`` (TensorFlow's ``tf.math.scalar_mul``)."""
    return multiply(scalar, x)


# ---- reductions ----------------------------------------------------------------------------------------

def _axis_int(axis):
    """One axis as a Python int: an int, a NumPy integer or an integer scalar tensor (TF refuses floats)."""
    try:
        return operator.index(axis)
    except TypeError:
        raise TypeError(f"axis must be an int, a list of ints or an integer tensor, got {axis!r}") from None


def _scalar_axis(axis):
    """An axis operand: an int, or an int scalar tensor (a graph value too: the op reads it at run time)."""
    if isinstance(axis, Tensor) and axis.dtype in (dtypes.int32, dtypes.int64) and axis.shape.rank in (0, None):
        return axis
    return _axis_int(axis)


def _axes(x, axis):
    """TF's axis argument (None = all axes, an int, a list or a tensor) as a list of ints."""
    if axis is None:
        if x.shape.rank is None:  # every axis of a rank known only at run time: range(rank(x))
            return array_ops.range(array_ops.rank(x))
        return list(range(x.ndim))
    if isinstance(axis, Tensor):
        if not axis.dtype.is_integer:
            raise TypeError(f"axis must be an integer tensor, got dtype {axis.dtype.name}")
        return axis  # the reductions take axis as an int tensor, computed in the graph if need be
    elif isinstance(axis, np.ndarray):
        axis = axis.tolist()
    if isinstance(axis, (list, tuple)):
        return [_axis_int(a) for a in axis]
    return [_axis_int(axis)]


def _as_tensor(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _reduction(op_name, doc):
    op = _C.op(op_name)

    def fn(input_tensor, axis=None, keepdims=False, name=None):
        x = _as_tensor(input_tensor)
        return op(x, _axes(x, axis), bool(keepdims))

    fn.__doc__ = doc
    return fn


reduce_sum = _reduction("Sum", "Sum over ``axis`` (None: all axes).")
reduce_mean = _reduction("Mean", "Mean over ``axis`` (integer inputs use integer division, as TF).")
reduce_max = _reduction("Max", "Maximum over ``axis``.")
reduce_min = _reduction("Min", "Minimum over ``axis``.")
reduce_prod = _reduction("Prod", "Product over ``axis``.")
reduce_any = _reduction("Any", "Logical or over ``axis``.")
reduce_all = _reduction("All", "Logical and over ``axis``.")
reduce_logsumexp = _reduction("ReduceLogSumExp", "log(sum(exp(x))) over ``axis``, computed stably.")


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Population variance, mean(|x - mean(x)|^2), over ``axis``; floats and complex numbers (whose variance
    is real: float32 for complex64), as TF."""
    x = _as_tensor(input_tensor)
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise TypeError(f"Input must be either real or complex. Received integer type {x.dtype.name}.")
    deviations = x - reduce_mean(x, axis, keepdims=True)
    if x.dtype.is_complex:
        return reduce_mean(_Real(deviations * _Conj(deviations)), axis, keepdims)
    return reduce_mean(square(deviations), axis, keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Population standard deviation, sqrt(reduce_variance), over ``axis``."""
    return sqrt(reduce_variance(input_tensor, axis, keepdims))


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(x^2)) over ``axis``, squared and summed in the input's dtype like TF's kernel (integers
    wrap, float16 squares can overflow); the square root of an integer sum is truncated."""
    x = _as_tensor(input_tensor)
    squares = reduce_sum(x * x, axis, keepdims)
    if x.dtype.is_integer:
        return cast(sqrt(cast(squares, dtypes.float64)), x.dtype)
    return sqrt(squares)


def count_nonzero(input, axis=None, keepdims=None, dtype=dtypes.int64, name=None):  # noqa: A002 - TF's name
    """Number of non-zero (True) elements over ``axis``, as ``dtype`` (default int64)."""
    x = _as_tensor(input)
    nonzero = not_equal(x, convert_to_tensor(False if x.dtype.is_bool else 0, dtype=x.dtype))
    return cast(reduce_sum(cast(nonzero, dtypes.int64), axis, bool(keepdims)), dtype)


_Cumsum = _C.op("Cumsum")
_Cumprod = _C.op("Cumprod")


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along ``axis``: cumsum([a, b, c]) == [a, a + b, a + b + c]. ``exclusive`` leaves each
    element out of its own sum ([0, a, a + b]); ``reverse`` scans from the end ([a + b + c, b + c, c])."""
    return _Cumsum(_as_tensor(x), _scalar_axis(axis), bool(exclusive), bool(reverse))


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along ``axis``: cumprod([a, b, c]) == [a, a * b, a * b * c]; ``exclusive`` and
    ``reverse`` as in ``cumsum``."""
    return _Cumprod(_as_tensor(x), _scalar_axis(axis), bool(exclusive), bool(reverse))


_ArgMax = _C.op("ArgMax")
_ArgMin = _C.op("ArgMin")


def argmax(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002 - TF's name
    """Index of the largest value along ``axis`` (default 0); ties give the first index."""
    return _ArgMax(input, 0 if axis is None else _scalar_axis(axis), dtypes.as_dtype(output_type))


def argmin(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002 - TF's name
    """Index of the smallest value along ``axis`` (default 0); ties give the first index."""
    return _ArgMin(input, 0 if axis is None else _scalar_axis(axis), dtypes.as_dtype(output_type))


# ---- matrix multiply ------------------------------------------------------------------------------------

_MatMul = _C.op("MatMul")
_INT8_TYPES = (dtypes.int8, dtypes.uint8)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, output_type=None, grad_a=False, grad_b=False, name=None):
    """a @ b over the last two dims, with batch dims broadcast (real dtypes: adjoint == transpose).

    ``output_type=int32`` multiplies int8/uint8 matrices into int32, as TF's BatchMatMulV3."""
    if transpose_a and adjoint_a:
        raise ValueError("Only one of `transpose_a` and `adjoint_a` can be True. "
                         f"Received `transpose_a`={transpose_a}, `adjoint_a`={adjoint_a}.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of `transpose_b` and `adjoint_b` can be True. "
                         f"Received `transpose_b`={transpose_b}, `adjoint_b`={adjoint_b}.")
    a = _as_tensor(a)
    b = b if isinstance(b, Tensor) else convert_to_tensor(b, dtype_hint=a.dtype)
    if output_type is not None:
        output_type = dtypes.as_dtype(output_type)
        if output_type != a.dtype or output_type != b.dtype:
            if a.dtype not in _INT8_TYPES or b.dtype not in _INT8_TYPES or output_type != dtypes.int32:
                raise errors.NotFoundError(
                    None, None, f"MatMul: no kernel multiplies {a.dtype.name} by {b.dtype.name} into "
                    f"{output_type.name}; output_type may differ from the inputs' dtype only for int8 or uint8 "
                    "inputs with output_type int32")
            a, b = cast(a, dtypes.int32), cast(b, dtypes.int32)
    if adjoint_a and a.dtype.is_complex:
        a = _Conj(a)
    if adjoint_b and b.dtype.is_complex:
        b = _Conj(b)
    return _MatMul(a, b, bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b))


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """Matrix [..., M, N] times vector [..., N] -> [..., M], batch dims broadcast."""
    b = _as_tensor(b)
    product = matmul(a, array_ops.expand_dims(b, -1), transpose_a=transpose_a, adjoint_a=adjoint_a)
    return array_ops.squeeze(product, [-1])


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """Swaps the last two dimensions of a (batch of) matrices."""
    a = _as_tensor(a)
    if a.ndim < 2:
        raise ValueError("Argument `a` should be a (batch) matrix with rank >= 2.  Received `a` = "
                         f"{a} with shape: {a.shape}")
    perm = list(range(a.ndim - 2)) + [a.ndim - 1, a.ndim - 2]
    result = array_ops.transpose(a, perm)
    return conj(result) if conjugate and a.dtype.is_complex else result


def adjoint(matrix, name=None):
    """Conjugate transpose of the last two dimensions (the transpose for real dtypes)."""
    return matrix_transpose(matrix, conjugate=True)


def tensordot(a, b, axes, name=None):
    """Sums a * b over ``axes``: an int N (the last N axes of a with the first N of b) or a pair of axis
    lists. The result has a's free axes followed by b's."""
    a = _as_tensor(a)
    b = b if isinstance(b, Tensor) else convert_to_tensor(b, dtype_hint=a.dtype)
    if isinstance(axes, Tensor):
        axes = array_ops._concrete(axes, "tensordot", "axes")
        if not axes.dtype.is_integer:
            raise ValueError(f"tensordot: axes must be an int32 or int64 tensor, got {axes.dtype.name}")
        axes = axes.numpy().tolist()
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2:
            raise ValueError(f"`axes` must be an integer or have length 2. Received {axes}.")
        a_axes, b_axes = axes
        a_axes = [a_axes] if not isinstance(a_axes, (list, tuple)) else list(a_axes)
        b_axes = [b_axes] if not isinstance(b_axes, (list, tuple)) else list(b_axes)
        if len(a_axes) != len(b_axes):
            raise ValueError("Different number of contraction axes `a` and `b`, "
                             f"{len(a_axes)} != {len(b_axes)}.")
    else:
        n = _axis_int(axes)
        if n < 0:
            raise ValueError(f"`axes` must be at least 0. Received: {n}.")
        if n > a.ndim or n > b.ndim:
            raise ValueError(f"`axes` must not be larger than the number of dimensions of tensor {a}.  "
                             f"Received {n}, vs tensor dimensions {min(a.ndim, b.ndim)}.")
        a_axes, b_axes = list(range(a.ndim - n, a.ndim)), list(range(n))
    a_axes = [_tensordot_axis(x, a.ndim, "a") for x in a_axes]
    b_axes = [_tensordot_axis(x, b.ndim, "b") for x in b_axes]
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    a_shape, b_shape = a.shape.as_list(), b.shape.as_list()
    for i, j in zip(a_axes, b_axes):
        if a_shape[i] is not None and b_shape[j] is not None and a_shape[i] != b_shape[j]:
            raise errors.InvalidArgumentError(
                None, None, f"tensordot: dimension {i} of a ({a_shape[i]}) and dimension {j} of b "
                f"({b_shape[j]}) are contracted but differ; a is {a_shape}, b is {b_shape}")
    # Dimensions unknown while tracing (None) stay symbolic: ember's Reshape takes its shape as an
    # attribute, so each reshape below may leave at most one of them to -1, and the steps that need no
    # reshape (one contracted axis, one free axis of b) use batched MatMul, ExpandDims and Squeeze instead.
    contracted = [a_shape[i] if a_shape[i] is not None else b_shape[j] for i, j in zip(a_axes, b_axes)]
    k = _static_product(contracted)
    free_a = [a_shape[i] for i in a_free]
    free_b = [b_shape[i] for i in b_free]
    fits = lambda dims: sum(d is None for d in dims) <= 1  # noqa: E731 - a Reshape target with one -1 at most
    k_or_1 = k if b_axes else 1
    batched = len(free_b) > 1 and not fits(free_a + free_b)
    a_ok = len(a_axes) <= 1 or fits(free_a + [k])
    if batched:
        b_ok = len(b_axes) == 1 or fits(free_b[:-1] + [k_or_1] + free_b[-1:])
    else:
        b_ok = (len(b_axes) == 1 and len(b_free) == 1) or fits([k_or_1, _static_product(free_b)])
    if not (a_ok and b_ok):
        return _tensordot_broadcast(a, b, a_axes, b_axes, a_free, b_free)
    a_t = array_ops.transpose(a, a_free + a_axes) if a_free + a_axes != list(range(a.ndim)) else a
    b_t = array_ops.transpose(b, b_axes + b_free) if b_axes + b_free != list(range(b.ndim)) else b
    if not a_axes:
        a2 = array_ops.expand_dims(a_t, -1)  # [free_a..., 1]: an outer product contracts a unit axis
    elif len(a_axes) == 1:
        a2 = a_t
    else:
        a2 = array_ops.reshape(a_t, _reshape_target(free_a + [k], "tensordot", "a", free_a + [contracted]))
    if not free_a:
        a2 = array_ops.expand_dims(a2, 0)  # MatMul needs a matrix
    if batched:
        return _tensordot_batched(a2, b, b_axes, b_free, contracted, k, free_a, free_b)
    if len(b_axes) == 1 and len(b_free) == 1:
        b2 = b_t
    else:
        b2 = array_ops.reshape(b_t, _reshape_target([1 if not b_axes else k, _static_product(free_b)],
                                                    "tensordot", "b", [contracted] + free_b))
    y = matmul(a2, b2)  # [free_a..., prod(free_b)] (or [1, ...] when a has no free axis)
    if not free_a:
        y = array_ops.squeeze(y, [0])
    if not free_b:
        return array_ops.squeeze(y, [-1])
    if len(free_b) == 1:
        return y
    return array_ops.reshape(y, _reshape_target(free_a + free_b, "tensordot", "the result", free_a + free_b))


def _tensordot_broadcast(a, b, a_axes, b_axes, a_free, b_free):
    """tensordot with no reshape at all, for contractions whose collapsed axes mix several dimensions unknown
    while tracing: a broadcast product [free_a..., contracted..., free_b...] summed over the contracted axes.
    It holds that whole product in memory, so it is only the last resort (a dynamic Reshape would avoid it)."""
    a_t = array_ops.transpose(a, a_free + a_axes)
    for _ in b_free:
        a_t = array_ops.expand_dims(a_t, -1)
    product = a_t * array_ops.transpose(b, b_axes + b_free)
    if not a_axes:
        return product
    return reduce_sum(product, axis=list(range(len(a_free), len(a_free) + len(a_axes))))


def _tensordot_batched(a2, b, b_axes, b_free, contracted, k, free_a, free_b):
    """tensordot when collapsing the free axes back would need a reshape with several unknown dimensions:
    b's free axes but the last become batch axes of MatMul, a's rows are single-row matrices broadcast
    against them, so no reshape touches an unknown dimension (slower: one row per product)."""
    n = len(free_b)
    b_t = array_ops.transpose(b, b_free[:-1] + b_axes + b_free[-1:])  # [g1 .. g(n-1), c..., gn]
    if len(b_axes) != 1:
        b_t = array_ops.reshape(b_t, _reshape_target(free_b[:-1] + [1 if not b_axes else k] + free_b[-1:],
                                                     "tensordot", "b", free_b[:-1] + [contracted] + free_b[-1:]))
    a3 = a2  # [free_a..., K] (or [1, K])
    for _ in range(n):
        a3 = array_ops.expand_dims(a3, -2)  # [free_a..., 1 x (n-1), 1, K]
    y = array_ops.squeeze(matmul(a3, b_t), [-2])  # [free_a..., g1 .. g(n-1), gn]
    return y if free_a else array_ops.squeeze(y, [0])


def _tensordot_axis(axis, ndim, which):
    """A contraction axis in [0, ndim); out of range is an error (it used to wrap around silently)."""
    axis = _axis_int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"tensordot: axis {axis} of {which} is out of range for a tensor of rank {ndim} "
                         f"(expected an axis in [{-ndim}, {ndim}))")
    return axis % ndim


def _static_product(dims):
    """The product of static dimensions; None when one is unknown while tracing."""
    if any(d is None for d in dims):
        return None
    n = 1
    for d in dims:
        n *= d
    return n


def _reshape_target(dims, op, what, source_dims):
    """A Reshape target from static dims: the one unknown dimension (None) becomes -1. Two or more unknown
    dimensions would need a shape computed at run time, which ember's Reshape (its shape is an attribute)
    cannot take until the core supports dynamic shape operands."""
    unknown = sum(d is None for d in dims)
    if unknown > 1:
        raise errors.UnimplementedError(
            None, None, f"{op}: reshaping {what} (dimensions {source_dims}) to {dims} needs {unknown} dimensions "
            "that are unknown while tracing; ember's Reshape takes a static shape with at most one -1, so this "
            "needs run-time shapes (not supported yet). Give all but one of these dimensions in the input "
            "signature.")
    return [-1 if d is None else d for d in dims]


_VECTOR_NORMS = ("euclidean", 1, 2, float("inf"))
_MATRIX_NORMS = ("euclidean", "fro", 1, 2, float("inf"))


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002 - TF's name
    """Vector norms (``ord`` 'euclidean', 1, 2, inf or any p > 0) over ``axis`` (None: all elements as
    one vector), or matrix norms ('fro', 'euclidean', 1, inf) over a pair of axes."""
    x = _as_tensor(tensor)
    is_matrix_norm = isinstance(axis, (list, tuple)) and len(axis) == 2
    if is_matrix_norm:
        axis = tuple(axis)
        if not all(isinstance(a, int) for a in axis) or axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in _MATRIX_NORMS:
            raise ValueError(f"'ord' must be a supported matrix norm in {list(_MATRIX_NORMS)}, got {ord}")
        if ord == 2:
            raise errors.UnimplementedError(None, None, "norm: the matrix 2-norm needs an SVD, which ember "
                                            "does not have; use ord='fro', 1 or np.inf")
    else:
        if not (axis is None or isinstance(axis, int)):
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in _VECTOR_NORMS and not (isinstance(ord, (int, float)) and not isinstance(ord, bool)
                                             and ord > 0):
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
        axis = None if axis is None else (axis,)
    if ord in ("euclidean", "fro", 2):
        result = sqrt(reduce_sum(x * x, axis, keepdims=True))
    elif ord == 1:
        result = reduce_sum(abs(x), None if axis is None else axis[0], keepdims=True)
        if is_matrix_norm:
            result = reduce_max(result, axis[1], keepdims=True)
    elif ord == float("inf"):
        result = abs(x)
        if is_matrix_norm:
            result = reduce_sum(result, axis[1], keepdims=True)
        result = reduce_max(result, None if axis is None else axis[0], keepdims=True)
    else:
        p = convert_to_tensor(ord, dtype=x.dtype)
        result = pow(reduce_sum(pow(abs(x), p), axis, keepdims=True), 1 / p)
    if keepdims:
        return result
    return array_ops.squeeze(result, None if axis is None else list(axis))
