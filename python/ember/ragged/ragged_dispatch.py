"""TensorFlow's dispatch for RaggedTensors: ``tf.add(rt, 1)``, ``tf.math.sin(rt)``, ``tf.reduce_sum(rt, 1)``,
``tf.concat([rt1, rt2], 0)`` run the op on the flat values (or the ragged version of the op).

The public op functions are ``_C.ApiFunction`` wrappers (python/ember/util/dispatch.py). A call with a
RaggedTensor argument goes to ``_pre_dispatch`` before the function runs: it finds the ragged version made here
for the functions named below and runs it. The check happens before the op, not after a failure: NumPy would
read a RaggedTensor of equal-length rows as a dense array, and the op would return a dense result.
"""

import functools
import inspect
import sys

from ember import _C
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


def _first_parameter(orig):
    try:
        return next(iter(inspect.signature(orig).parameters))
    except (StopIteration, TypeError, ValueError):
        return None


def _unary_wrapper(orig):
    if _parameter_names(orig) == ["x", "name"]:
        @functools.wraps(orig)
        def fast(x, name=None):
            if x.__class__ is RaggedTensor:
                return x.with_flat_values(orig(x.flat_values))
            return orig(x)

        return fast
    first = _first_parameter(orig)  # TensorFlow's name for it (x, input, features): callers may pass it so

    @functools.wraps(orig)
    def fn(*args, **kwargs):
        if args:
            if args[0].__class__ is RaggedTensor:
                return args[0].with_flat_values(orig(args[0].flat_values, *args[1:], **kwargs))
        elif kwargs.get(first).__class__ is RaggedTensor:
            x = kwargs.pop(first)
            return x.with_flat_values(orig(x.flat_values, **kwargs))
        return orig(*args, **kwargs)

    return fn


def _parameter_names(orig):
    try:
        return list(inspect.signature(orig).parameters)
    except (TypeError, ValueError):
        return None


def _binary_wrapper(orig):
    if _parameter_names(orig) == ["x", "y", "name"]:
        # The common signature (the generated wrappers): no argument forwarding on the dense path.
        @functools.wraps(orig)
        def fast(x, y, name=None):
            if x.__class__ is RaggedTensor or y.__class__ is RaggedTensor:
                return binary(orig, x, y)
            return orig(x, y)

        return fast

    @functools.wraps(orig)
    def fn(x, y, *args, **kwargs):
        if x.__class__ is RaggedTensor or y.__class__ is RaggedTensor:
            return binary(lambda a, b: orig(a, b, *args, **kwargs), x, y)
        return orig(x, y, *args, **kwargs)

    return fn


def _reduce_wrapper(orig, kind):
    @functools.wraps(orig)
    def fn(*args, **kwargs):
        x = args[0] if args else kwargs.get("input_tensor")
        if x.__class__ is RaggedTensor:
            bound = inspect.signature(orig).bind(*args, **kwargs)
            axis, keepdims = bound.arguments.get("axis"), bound.arguments.get("keepdims", False)
            if kind == "mean":
                return ragged_ops.reduce_mean(x, axis, keepdims)
            return ragged_ops.reduce(kind, x, axis, keepdims)
        return orig(*args, **kwargs)

    return fn


def _list_wrapper(orig, ragged_fn):
    @functools.wraps(orig)
    def fn(*args, **kwargs):
        values = args[0] if args else kwargs.get("values")
        if isinstance(values, (list, tuple)) and any(v.__class__ is RaggedTensor for v in values):
            bound = inspect.signature(orig).bind(*args, **kwargs)
            bound.apply_defaults()
            return ragged_fn(values, bound.arguments["axis"])
        return orig(*args, **kwargs)

    return fn


def _gather_wrapper(orig):
    @functools.wraps(orig)
    def fn(*args, **kwargs):
        params = args[0] if args else kwargs.get("params")
        indices = args[1] if len(args) > 1 else kwargs.get("indices")
        if params.__class__ is RaggedTensor or indices.__class__ is RaggedTensor:
            axis = inspect.signature(orig).bind(*args, **kwargs).arguments.get("axis")
            if params.__class__ is not RaggedTensor:
                return indices.with_flat_values(orig(params, indices.flat_values, axis=axis))
            return ragged_ops.gather(params, indices, 0 if axis is None else axis)
        return orig(*args, **kwargs)

    return fn




def _wrappers():
    """(name, how to wrap it) for every dispatching name."""
    out = [(name, _unary_wrapper) for name in UNARY + ["cast"]]
    out += [(name, _binary_wrapper) for name in BINARY]
    out += [(name, lambda orig, kind=kind: _reduce_wrapper(orig, kind)) for name, kind in REDUCE.items()]
    out += [("reduce_mean", lambda orig: _reduce_wrapper(orig, "mean")),
            ("concat", lambda orig: _list_wrapper(orig, ragged_ops.concat)),
            ("stack", lambda orig: _list_wrapper(orig, ragged_ops.stack)),
            ("gather", _gather_wrapper)]
    return out


_HANDLERS = {}  # id(original function) -> its ragged-aware version


def _pre_dispatch(api_function, args, kwargs, _):
    """util/dispatch.py's pre-dispatch for calls with a RaggedTensor argument: the ragged version of the
    function, or NotImplemented (the function then refuses the RaggedTensor: it converts to nothing)."""
    from ember.util import dispatch

    handler = _HANDLERS.get(id(dispatch.unwrap(api_function)))
    if handler is None:
        return NotImplemented
    return handler(*args, **kwargs)


def install():
    """Registers the ragged versions of the dispatching functions with util/dispatch.py's pre-dispatch: the
    public op functions are _C.ApiFunction wrappers, which hand a call holding a RaggedTensor (directly or in a
    list argument) to _pre_dispatch before the op runs, at the cost of a type comparison on the normal path."""
    from ember import math as math_namespace
    from ember.util import dispatch

    root = sys.modules["ember"]
    for name, make in _wrappers():
        for public in (getattr(root, name, None), getattr(math_namespace, name, None)):
            orig = dispatch.unwrap(public) if public is not None else None
            if orig is not None and id(orig) not in _HANDLERS:
                _HANDLERS[id(orig)] = make(orig)
    dispatch.set_pre_dispatch((RaggedTensor,), _pre_dispatch)
