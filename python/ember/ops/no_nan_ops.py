"""``tf.math.divide_no_nan``, ``multiply_no_nan``, ``xdivy``, ``xlogy`` and ``xlog1py``: products and
quotients that are 0 where one operand is 0, whatever the other is (inf or nan included), with TensorFlow's
values and TensorFlow's gradients (those of DivNoNan, MulNoNan, Xdivy, Xlogy and Xlog1py).

They are composed from where-masked ops: the masked operand is replaced by a harmless value before the
division or logarithm, so no inf or nan is computed in a branch the mask then drops (its gradient would
poison the sum). The gradients are TensorFlow's formulas, given through ``custom_gradient``, each summed
back to its operand's shape over the broadcast axes.
"""

from ember import _C, dtypes, errors
from ember.backprop import custom_gradient
from ember.framework.tensor import convert_to_tensor
from ember.ops import array_ops, math_ops

__all__ = ["divide_no_nan", "multiply_no_nan", "xdivy", "xlogy", "xlog1py"]

_BroadcastGradientArgs = _C.op("BroadcastGradientArgs")


# As TensorFlow's truediv, which divide_no_nan follows for integers: the float type an integer divides in.
_TRUEDIV = {dtypes.int8: dtypes.float32, dtypes.uint8: dtypes.float32, dtypes.int16: dtypes.float32,
            dtypes.int32: dtypes.float64, dtypes.int64: dtypes.float64}


def _operands(x, y, name, op):
    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype=x.dtype)
    if name == "divide_no_nan" and x.dtype in _TRUEDIV:
        x, y = math_ops.cast(x, _TRUEDIV[x.dtype]), math_ops.cast(y, _TRUEDIV[x.dtype])
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise errors.InvalidArgumentError(None, None, f"{op}: x and y must be floating-point or complex tensors, "
                                          f"got {x.dtype.name}")
    return x, y


def _summed_to_operands(x, y, gx, gy):
    """The gradients of a broadcasting op's operands: each summed over the axes its operand was repeated
    along, in its operand's shape."""
    sx, sy = array_ops.shape(x), array_ops.shape(y)
    rx, ry = _BroadcastGradientArgs(sx, sy)
    return (array_ops.reshape(math_ops.reduce_sum(gx, rx), sx),
            array_ops.reshape(math_ops.reduce_sum(gy, ry), sy))


def _where_zero(mask, value):
    return array_ops.where(mask, array_ops.zeros_like(value), value)


def _div_no_nan(x, y):
    zero = math_ops.equal(y, 0)
    return _where_zero(zero, x / array_ops.where(zero, array_ops.ones_like(y), y))


def _mul_no_nan(x, y):
    return _where_zero(math_ops.equal(y, 0), x * y)


def _xdivy(x, y):
    zero = math_ops.equal(x, 0)
    return _where_zero(zero, x / array_ops.where(zero, array_ops.ones_like(y), y))


def _xlog(x, y, log):
    zero = math_ops.equal(x, 0)
    return _where_zero(zero, x * log(array_ops.where(zero, array_ops.ones_like(y), y)))


def divide_no_nan(x, y, name=None):
    """x / y, and 0 where y is 0 (DivNoNan). divide_no_nan([3., 1.], [0., 2.]) == [0., 0.5]"""
    x, y = _operands(x, y, "divide_no_nan", "DivNoNan")

    @custom_gradient
    def op(x, y):
        def grad(g):
            return _summed_to_operands(x, y, _div_no_nan(g, y), g * _div_no_nan(_div_no_nan(-x, y), y))

        return _div_no_nan(x, y), grad

    return op(x, y)


def multiply_no_nan(x, y, name=None):
    """x * y, and 0 where y is 0 even if x is inf or nan (MulNoNan).
    multiply_no_nan([inf, 2.], [0., 3.]) == [0., 6.]"""
    x, y = _operands(x, y, "multiply_no_nan", "MulNoNan")

    @custom_gradient
    def op(x, y):
        def grad(g):
            return _summed_to_operands(x, y, _mul_no_nan(g, y), _mul_no_nan(x, g))

        return _mul_no_nan(x, y), grad

    return op(x, y)


def xdivy(x, y, name=None):
    """x / y, and 0 where x is 0 (Xdivy). xdivy([0., 1.], [0., 2.]) == [0., 0.5]"""
    x, y = _operands(x, y, "xdivy", "Xdivy")

    @custom_gradient
    def op(x, y):
        def grad(g):
            zero = math_ops.equal(x, 0)
            gx = _where_zero(zero, g / array_ops.where(zero, array_ops.ones_like(y), y))
            return _summed_to_operands(x, y, gx, g * _xdivy(-x, y * y))

        return _xdivy(x, y), grad

    return op(x, y)


def _x_log(x, y, log, shift, name, op):
    """x * log(y) (Xlogy) or x * log1p(y) (Xlog1py, shift 1: d/dy = x / (1 + y)), 0 where x is 0."""
    x, y = _operands(x, y, name, op)

    @custom_gradient
    def run(x, y):
        def grad(g):
            gx = _where_zero(math_ops.equal(x, 0), g * log(y))
            return _summed_to_operands(x, y, gx, g * _xdivy(x, y + shift if shift else y))

        return _xlog(x, y, log), grad

    return run(x, y)


def xlogy(x, y, name=None):
    """x * log(y), and 0 where x is 0 (Xlogy). xlogy([0., 2.], [0., 1.]) == [0., 0.]"""
    return _x_log(x, y, math_ops.log, 0, "xlogy", "Xlogy")


def xlog1py(x, y, name=None):
    """x * log1p(y), and 0 where x is 0 (Xlog1py). xlog1py([0., 2.], [-1., 0.]) == [0., 0.]"""
    return _x_log(x, y, math_ops.log1p, 1, "xlog1py", "Xlog1py")
