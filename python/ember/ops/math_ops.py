"""Element-wise math with TensorFlow's names: ``ember.add``, ``ember.math.*``."""

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor

_Cast = _C.op("Cast")
_RealDiv = _C.op("RealDiv")
_AddN = _C.op("AddN")


def _unary(op_name, doc):
    op = _C.op(op_name)

    def fn(x, name=None):
        return op(x)

    fn.__doc__ = doc
    return fn


def _binary(op_name, doc):
    op = _C.op(op_name)

    def fn(x, y, name=None):
        return op(x, y)

    fn.__doc__ = doc
    return fn


negative = _unary("Neg", "-x, element-wise.")
abs = _unary("Abs", "|x|, element-wise.")  # noqa: A001 - TensorFlow's name
sign = _unary("Sign", "-1, 0 or 1 by the sign of x.")
exp = _unary("Exp", "e^x.")
log = _unary("Log", "Natural logarithm.")
log1p = _unary("Log1p", "log(1 + x).")
expm1 = _unary("Expm1", "e^x - 1.")
sqrt = _unary("Sqrt", "Square root.")
rsqrt = _unary("Rsqrt", "1 / sqrt(x).")
square = _unary("Square", "x * x.")
reciprocal = _unary("Reciprocal", "1 / x.")
sin = _unary("Sin", "Sine.")
cos = _unary("Cos", "Cosine.")
tanh = _unary("Tanh", "Hyperbolic tangent.")
sigmoid = _unary("Sigmoid", "1 / (1 + e^-x).")
floor = _unary("Floor", "Round toward -inf.")
ceil = _unary("Ceil", "Round toward +inf.")
round = _unary("Round", "Round half to even.")  # noqa: A001 - TensorFlow's name
logical_not = _unary("LogicalNot", "Boolean not.")
is_nan = _unary("IsNan", "Whether x is NaN.")
is_finite = _unary("IsFinite", "Whether x is finite.")
relu = _unary("Relu", "max(x, 0).")
relu6 = _unary("Relu6", "min(max(x, 0), 6).")
elu = _unary("Elu", "x if x > 0 else e^x - 1.")
softplus = _unary("Softplus", "log(1 + e^x).")
erf = _unary("Erf", "Gauss error function.")

add = _binary("Add", "x + y with broadcasting.")
subtract = _binary("Sub", "x - y with broadcasting.")
multiply = _binary("Mul", "x * y with broadcasting.")
floordiv = _binary("FloorDiv", "floor(x / y).")
floor_div = floordiv
floormod = _binary("FloorMod", "x - floor(x / y) * y.")
mod = floormod
pow = _binary("Pow", "x ** y.")  # noqa: A001 - TensorFlow's name
maximum = _binary("Maximum", "Element-wise maximum.")
minimum = _binary("Minimum", "Element-wise minimum.")
squared_difference = _binary("SquaredDifference", "(x - y)^2.")
equal = _binary("Equal", "x == y, element-wise.")
not_equal = _binary("NotEqual", "x != y, element-wise.")
less = _binary("Less", "x < y, element-wise.")
less_equal = _binary("LessEqual", "x <= y, element-wise.")
greater = _binary("Greater", "x > y, element-wise.")
greater_equal = _binary("GreaterEqual", "x >= y, element-wise.")
logical_and = _binary("LogicalAnd", "Boolean and.")
logical_or = _binary("LogicalOr", "Boolean or.")


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


def realdiv(x, y, name=None):
    return _RealDiv(x, y)


def add_n(inputs, name=None):
    """Sum of a list of tensors of one shape and dtype."""
    if not inputs:
        raise ValueError("inputs must be a non-empty list of tensors")
    return _AddN(list(inputs))


def scalar_mul(scalar, x, name=None):
    return multiply(scalar, x)


# ---- reductions ----------------------------------------------------------------------------------------

def _axes(x, axis):
    """TF's axis argument (None = all axes, an int, a list or a tensor) as a list of ints."""
    if axis is None:
        return list(range(x.ndim))
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    return [int(axis)]


def _reduction(op_name, doc):
    op = _C.op(op_name)

    def fn(input_tensor, axis=None, keepdims=False, name=None):
        x = input_tensor if isinstance(input_tensor, Tensor) else convert_to_tensor(input_tensor)
        return op(x, _axes(x, axis), keepdims)

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

_ArgMax = _C.op("ArgMax")
_ArgMin = _C.op("ArgMin")


def argmax(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002 - TF's name
    """Index of the largest value along ``axis`` (default 0); ties give the first index."""
    return _ArgMax(input, 0 if axis is None else int(axis), output_type)


def argmin(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002 - TF's name
    """Index of the smallest value along ``axis`` (default 0); ties give the first index."""
    return _ArgMin(input, 0 if axis is None else int(axis), output_type)


# ---- matrix multiply ------------------------------------------------------------------------------------

_MatMul = _C.op("MatMul")


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, output_type=None, name=None):
    """a @ b over the last two dims, with batch dims broadcast (real dtypes: adjoint == transpose)."""
    return _MatMul(a, b, bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b))
