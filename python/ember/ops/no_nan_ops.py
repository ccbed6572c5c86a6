"""``tf.math.divide_no_nan`` and ``multiply_no_nan``: the Python side of the DivNoNan and MulNoNan ops
(rows of src/ember/kernels/elementwise_ops.h, with TensorFlow's values and gradients), which converts the
operands as TensorFlow's does: y takes x's dtype, and divide_no_nan divides integers in floating point as
truediv does. ``xdivy``, ``xlogy`` and ``xlog1py`` only call their ops: their wrappers are generated
(ember.ops.math_ops)."""

from ember import _C, dtypes
from ember.framework.tensor import convert_to_tensor
from ember.ops import math_ops

__all__ = ["divide_no_nan", "multiply_no_nan"]

_DivNoNan = _C.op("DivNoNan")
_MulNoNan = _C.op("MulNoNan")

# As TensorFlow's truediv, which divide_no_nan follows for integers: the float type an integer divides in.
_TRUEDIV = {dtypes.int8: dtypes.float32, dtypes.uint8: dtypes.float32, dtypes.int16: dtypes.float32,
            dtypes.int32: dtypes.float64, dtypes.int64: dtypes.float64}


def _operands(x, y):
    x = convert_to_tensor(x)
    return x, convert_to_tensor(y, dtype=x.dtype)


def divide_no_nan(x, y, name=None):
    """x / y, and 0 where y is 0 (DivNoNan). divide_no_nan([3., 1.], [0., 2.]) == [0., 0.5]"""
    x, y = _operands(x, y)
    if x.dtype in _TRUEDIV:
        x, y = math_ops.cast(x, _TRUEDIV[x.dtype]), math_ops.cast(y, _TRUEDIV[x.dtype])
    return _DivNoNan(x, y)


def multiply_no_nan(x, y, name=None):
    """x * y, and 0 where y is 0 even if x is inf or nan (MulNoNan).
    multiply_no_nan([inf, 2.], [0., 3.]) == [0., 6.]"""
    return _MulNoNan(*_operands(x, y))
