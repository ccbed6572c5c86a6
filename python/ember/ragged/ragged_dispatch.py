"""TensorFlow's dispatch for RaggedTensors: ``tf.add(rt, 1)``, ``tf.math.sin(rt)``, ``tf.reduce_sum(rt, 1)``,
``tf.concat([rt1, rt2], 0)`` run the op on the flat values (or the ragged version of the op).

The public functions of ``ember`` and ``ember.math`` named below are replaced by a wrapper that looks at the
type of its tensor arguments first (a class test per argument, no conversion) and calls the original
function for anything that is not a RaggedTensor. The wrapper looks before calling, rather than after a
failure: NumPy would read a RaggedTensor of equal-length rows as a dense array, and the op would return a
dense result.
"""

import functools

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ragged import ragged_ops
from ember.ragged.ragged_tensor import RaggedTensor

_op = _C.op

UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "digamma", "erf", "erfc",
         "exp", "expm1", "floor", "imag", "is_finite", "is_inf", "is_nan", "lgamma", "log", "log1p", "log_sigmoid",
         "logical_not", "negative", "reciprocal", "real", "rint", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh",
         "softplus", "softsign", "sqrt", "square", "tan", "tanh", "identity", "ones_like", "zeros_like"]
BINARY = ["add", "subtract", "multiply", "divide", "truediv", "realdiv", "floordiv", "floor_div", "floormod", "mod",
          "pow", "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
          "logical_and", "logical_or", "logical_xor", "squared_difference", "atan2", "divide_no_nan",
          "multiply_no_nan", "xdivy", "xlogy"]
REDUCE = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min", "reduce_prod": "prod",
          "reduce_all": "all", "reduce_any": "any"}


def _broadcast_dense(rt, y):
    """A dense operand ``y`` as a tensor that broadcasts against rt.flat_values element by element: one of
    rank at most the uniform inner rank as it is, a fuller one gathered per flat value from its outer row (its
    ragged dimensions must have size 1, as TensorFlow requires)."""
    inner_rank = rt.shape.rank - rt.ragged_rank - 1
    if y.shape.rank is None or y.shape.rank <= inner_rank:
        return y
    rank = rt.shape.rank
    dims = [1] * (rank - y.shape.rank) + y.shape.as_list()
    for d in dims[1:rt.ragged_rank + 1]:
        if d != 1:
            raise ValueError(f"A dense tensor of shape {y.shape} does not broadcast against a RaggedTensor of "
                             f"shape {rt.shape}: its ragged dimensions must have size 1")
    y = _op("Reshape")(y, [-1 if dims[0] is None else dims[0]] + [-1 if d is None else d
                                                                   for d in dims[rt.ragged_rank + 1:]])
    if dims[0] == 1:
        return y[0]
    # The outer row of each flat value: each level's value_rowids composed.
    ids = None
    level = rt
    chain = []
    while isinstance(level, RaggedTensor):
        chain.append(level.value_rowids())
        level = level.values
    ids = chain[-1]
    for up in reversed(chain[:-1]):
        ids = _op("GatherV2")(up, ids, 0, 0)
    return _op("GatherV2")(y, ids, 0, 0)


def binary(fn, x, y):
    """fn(x, y) with x and/or y ragged."""
    if isinstance(x, RaggedTensor) and isinstance(y, RaggedTensor):
        ragged_ops._check_same_partition(x, y, getattr(fn, "__name__", "op"))
        return x.with_flat_values(fn(x.flat_values, y.flat_values))
    if isinstance(x, RaggedTensor):
        y = y if isinstance(y, Tensor) else convert_to_tensor(y, dtype_hint=x.dtype)
        return x.with_flat_values(fn(x.flat_values, _broadcast_dense(x, y)))
    x = x if isinstance(x, Tensor) else convert_to_tensor(x, dtype_hint=y.dtype)
    return y.with_flat_values(fn(_broadcast_dense(y, x), y.flat_values))


def _is_ragged(x):
    return x.__class__ is RaggedTensor


def _unary_wrapper(orig):
    @functools.wraps(orig)
    def fn(x, *args, **kwargs):
        if x.__class__ is RaggedTensor:
            return x.with_flat_values(orig(x.flat_values, *args, **kwargs))
        return orig(x, *args, **kwargs)

    fn._ember_ragged_original = orig
    return fn


def _binary_wrapper(orig):
    @functools.wraps(orig)
    def fn(x, y, *args, **kwargs):
        if x.__class__ is RaggedTensor or y.__class__ is RaggedTensor:
            return binary(lambda a, b: orig(a, b, *args, **kwargs), x, y)
        return orig(x, y, *args, **kwargs)

    fn._ember_ragged_original = orig
    return fn


def _reduce_wrapper(orig, kind):
    @functools.wraps(orig)
    def fn(input_tensor, axis=None, keepdims=False, name=None, **kwargs):
        if input_tensor.__class__ is RaggedTensor:
            if kind == "mean":
                return ragged_ops.reduce_mean(input_tensor, axis, keepdims)
            return ragged_ops.reduce(kind, input_tensor, axis, keepdims)
        return orig(input_tensor, axis, keepdims, name, **kwargs)

    fn._ember_ragged_original = orig
    return fn


def _list_wrapper(orig, ragged_fn):
    @functools.wraps(orig)
    def fn(values, axis=0, *args, **kwargs):
        if isinstance(values, (list, tuple)) and any(v.__class__ is RaggedTensor for v in values):
            return ragged_fn(values, axis)
        return orig(values, axis, *args, **kwargs)

    fn._ember_ragged_original = orig
    return fn


def _gather_wrapper(orig):
    @functools.wraps(orig)
    def fn(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
        if params.__class__ is RaggedTensor or indices.__class__ is RaggedTensor:
            if params.__class__ is not RaggedTensor:
                return indices.with_flat_values(orig(params, indices.flat_values, axis=axis))
            return ragged_ops.gather(params, indices, 0 if axis is None else axis)
        return orig(params, indices, validate_indices, axis, batch_dims, name)

    fn._ember_ragged_original = orig
    return fn


def _cast_wrapper(orig):
    @functools.wraps(orig)
    def fn(x, dtype, name=None):
        if x.__class__ is RaggedTensor:
            return x.with_flat_values(orig(x.flat_values, dtype))
        return orig(x, dtype, name)

    fn._ember_ragged_original = orig
    return fn


def _shape_wrapper(orig):
    @functools.wraps(orig)
    def fn(input, out_type=dtypes.int32, name=None):  # noqa: A002 - TF's name
        if input.__class__ is RaggedTensor:
            raise TypeError("tf.shape of a RaggedTensor: ember has no DynamicRaggedShape yet; use rt.shape, "
                            "rt.nrows() or rt.row_lengths()")
        return orig(input, out_type, name)

    return fn


def _wrap(namespace, name, make):
    orig = namespace.get(name)
    if orig is None or hasattr(orig, "_ember_ragged_original"):
        return
    namespace[name] = make(orig)


def install(modules):
    """Wraps the dispatching names in each module's namespace (ember, ember.math)."""
    from ember.ops import array_ops, math_ops

    for module in modules:
        ns = vars(module)
        for name in UNARY:
            _wrap(ns, name, _unary_wrapper)
        for name in BINARY:
            _wrap(ns, name, _binary_wrapper)
        for name, kind in REDUCE.items():
            _wrap(ns, name, lambda orig, kind=kind: _reduce_wrapper(orig, kind))
        _wrap(ns, "reduce_mean", lambda orig: _reduce_wrapper(orig, "mean"))
        _wrap(ns, "concat", lambda orig: _list_wrapper(orig, ragged_ops.concat))
        _wrap(ns, "stack", lambda orig: _list_wrapper(orig, ragged_ops.stack))
        _wrap(ns, "gather", _gather_wrapper)
        _wrap(ns, "cast", _cast_wrapper)
    del array_ops, math_ops
