"""``ember.debugging``: ``Assert``, the ``assert_*`` checks of ``tf.debugging`` and ``tf.ensure_shape``.

``Assert`` is the stateful op of that name (src/ember/ops/print.cc): eagerly it raises at once, inside
ember.function it runs where the program put it, ordered with the other stateful ops by automatic control
dependencies. The ``assert_*`` checks raise while tracing when the answer is already known (static shapes,
constant values), as TensorFlow does, and otherwise stage an Assert. ``ensure_shape`` is the EnsureShape op
(print.cc): its shape function refines the static shape while tracing, its kernel checks the run-time shape.
"""

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor

_Assert = _C.op("Assert")
_EnsureShape = _C.op("EnsureShape")
_CheckNumerics = _C.op("CheckNumerics")
_SLOT = "\x1f"


def _is_tensor_like(value):
    return isinstance(value, (Tensor, np.ndarray)) or getattr(value, "_ember_variable", False) or \
        (not isinstance(value, (str, bytes)) and isinstance(value, (int, float, bool, list, tuple)))


def _as_int(value, what):
    """``value`` as a Python int; a clear TypeError for a float (inf and nan included) or anything else."""
    if isinstance(value, Tensor):
        if not value.dtype.is_integer or value.shape.rank != 0 or value._is_symbolic:
            raise TypeError(f"{what} must be an integer scalar known while tracing, got {value!r}")
        return int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return int(value)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TensorFlow's name
    """Raises InvalidArgumentError printing ``data`` when ``condition`` (a bool scalar) is false."""
    condition = convert_to_tensor(condition)
    if condition.dtype != dtypes.bool:
        condition = _as_bool(condition)
    if not _C.in_trace() and condition.shape.rank not in (None, 0):
        raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                         "a.all()")
    pieces, tensors = [], []
    for value in data if isinstance(data, (list, tuple)) else [data]:
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if _is_tensor_like(value):
            tensors.append(convert_to_tensor(value))
            pieces.append(_SLOT)
        else:
            pieces.append(f"[{value}]")
    if condition.shape.rank not in (None, 0):
        raise ValueError(f"Assert: the condition must be a scalar, got shape {condition.shape}")
    _Assert(condition, tensors, " ".join(pieces), 3 if summarize is None else _as_int(summarize, "Assert: summarize"))
    return None


def ensure_shape(x, shape, name=None):
    """``x``, checked to have a shape compatible with ``shape`` (a list with None for any size, a
    TensorShape, or None for any shape); inside ``ember.function`` the static shape after it is refined."""
    from ember.framework.tensor_shape import TensorShape

    x = convert_to_tensor(x)
    expected = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    if expected.rank is None:
        return _EnsureShape(x, [], True)
    if x._is_symbolic and not x.shape.is_compatible_with(expected):  # TensorFlow's shape function raises
        raise ValueError(f"EnsureShape: the input's static shape {x.shape} is not compatible with the expected "
                         f"shape {expected}")
    return _EnsureShape(x, [-1 if d is None else d for d in expected.as_list()], False)


def check_numerics(tensor, message, name=None):
    """``tensor``, after checking that it holds no NaN or Inf: else InvalidArgumentError with ``message``
    (TensorFlow's text, "message : Tensor had NaN values"). Gradients pass through."""
    if not isinstance(message, (str, bytes)):
        raise TypeError(f"check_numerics: message must be a string, got {type(message).__name__} {message!r}")
    return _CheckNumerics(convert_to_tensor(tensor), message.decode() if isinstance(message, bytes) else message)


def _as_bool(t):
    from ember.ops import math_ops

    return math_ops.not_equal(t, convert_to_tensor(0, dtype=t.dtype))


def _static_value(t):
    """t's value as a NumPy array when it is known while tracing (eager or constant), else None."""
    if isinstance(t, Tensor) and not t._is_symbolic:
        return t.numpy()
    return None


def _name(t, fallback):
    return _C.symbolic_name(t) if isinstance(t, Tensor) and t._is_symbolic and _C.symbolic_name(t) else fallback


def _check(condition, message, data, summarize, static_ok=None):
    """Stages or runs an Assert of ``condition``; when its value is known now, raises at once."""
    from ember.ops import math_ops

    if summarize is not None:
        summarize = _as_int(summarize, "summarize")
    condition = math_ops.reduce_all(condition)
    known = _static_value(condition)
    if known is not None:
        if not bool(known):
            text = "\n".join(str(d) if not isinstance(d, Tensor) else
                             np.array2string(np.asarray(d.numpy()), threshold=summarize or 3) for d in data)
            raise errors.InvalidArgumentError(None, None, (f"{message}\n" if message else "") + text)
        return None
    return Assert(condition, ([message] if message else []) + list(data), summarize=summarize)


def _binary(op, symbol, x, y, data, summarize, message, name):
    from ember.ops import math_ops

    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype_hint=x.dtype)
    if x.dtype != y.dtype:
        raise errors.InvalidArgumentError(
            None, None, f"cannot compare {x.dtype.name} with {y.dtype.name}: assert_* needs one dtype")
    condition = getattr(math_ops, op)(x, y)
    if data is None:
        data = [f"Condition x {symbol} y did not hold element-wise:", f"x ({_name(x, 'x')}) = ", x,
                f"y ({_name(y, 'y')}) = ", y]
    return _check(condition, message, data, summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x == y element-wise."""
    return _binary("equal", "==", x, y, data, summarize, message, name)


def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x != y element-wise."""
    return _binary("not_equal", "!=", x, y, data, summarize, message, name)


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x < y element-wise."""
    return _binary("less", "<", x, y, data, summarize, message, name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x <= y element-wise."""
    return _binary("less_equal", "<=", x, y, data, summarize, message, name)


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x > y element-wise."""
    return _binary("greater", ">", x, y, data, summarize, message, name)


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x >= y element-wise."""
    return _binary("greater_equal", ">=", x, y, data, summarize, message, name)


def _sign(op, symbol, x, data, summarize, message):
    from ember.ops import math_ops

    x = convert_to_tensor(x)
    zero = convert_to_tensor(0, dtype=x.dtype)
    if data is None:
        data = [f"Condition x {symbol} 0 did not hold element-wise:", f"x ({_name(x, 'x')}) = ", x]
    return _check(getattr(math_ops, op)(x, zero), message, data, summarize)


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    """Asserts x > 0 element-wise."""
    return _sign("greater", ">", x, data, summarize, message)


def assert_negative(x, data=None, summarize=None, message=None, name=None):
    """Asserts x < 0 element-wise."""
    return _sign("less", "<", x, data, summarize, message)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """Asserts x >= 0 element-wise."""
    return _sign("greater_equal", ">=", x, data, summarize, message)


def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    """Asserts x <= 0 element-wise."""
    return _sign("less_equal", "<=", x, data, summarize, message)


def _rank_check(x, ranks, what, message, summarize):
    from ember.ops import array_ops, math_ops

    x = convert_to_tensor(x)
    rank = x.shape.rank
    label = _name(x, "")
    if rank is not None:
        if not any(rank == r for r in ranks) if what != "at least" else rank < ranks[0]:
            expected = {"exactly": f"rank {ranks[0]}", "in": f"rank in {tuple(ranks)}",
                        "at least": f"rank at least {ranks[0]}"}[what]
            raise ValueError(f"{message + '.  ' if message else ''}Tensor {label} must have {expected}.  Received "
                             f"rank {rank}, shape {tuple(x.shape.as_list())}")
        return None
    actual = array_ops.rank(x)
    if what == "at least":
        condition = math_ops.greater_equal(actual, ranks[0])
    else:
        condition = math_ops.reduce_any(math_ops.equal(actual, convert_to_tensor(list(ranks), dtype=dtypes.int32)))
    return Assert(condition, ([message] if message else []) +
                  [f"Tensor {label} must have rank {what} {list(ranks)}. Received rank: ", actual],
                  summarize=summarize)


def assert_rank(x, rank, message=None, name=None):
    """Asserts x has the given rank (statically: ValueError while tracing)."""
    return _rank_check(x, [_as_int(rank, "assert_rank: rank")], "exactly", message, None)


def assert_rank_at_least(x, rank, message=None, name=None):
    return _rank_check(x, [_as_int(rank, "assert_rank_at_least: rank")], "at least", message, None)


def assert_rank_in(x, ranks, message=None, name=None):
    return _rank_check(x, [_as_int(r, "assert_rank_in: ranks") for r in ranks], "in", message, None)


def assert_scalar(tensor, message=None, name=None):
    tensor = convert_to_tensor(tensor)
    if tensor.shape.rank is not None and tensor.shape.rank != 0:
        raise ValueError(f"{message + ' ' if message else ''}Expected scalar shape, saw shape: "
                         f"{tuple(tensor.shape.as_list())}.")
    return tensor


def assert_type(tensor, tf_type, message=None, name=None):
    tensor = convert_to_tensor(tensor)
    tf_type = dtypes.as_dtype(tf_type)
    if tensor.dtype != tf_type:
        raise TypeError(f"{message + ', ' if message else ''}tensor must be of type tf.{tf_type.name}; got "
                        f"tf.{tensor.dtype.name}")
    return None


def assert_integer(x, message=None, name=None):
    x = convert_to_tensor(x)
    if not x.dtype.is_integer:
        raise TypeError(f"{message + ' ' if message else ''}Expected integer type for tensor, got "
                        f"tf.{x.dtype.name}")
    return None


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Asserts that the tensors' shapes agree with the symbolic dimensions given for them:
    ``assert_shapes([(x, ('N', 'D')), (y, ('N',))])``."""
    from ember.ops import array_ops, math_ops

    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    sizes = {}  # symbol -> (static size or None, dynamic size tensor, where it was first given)
    for x, spec in pairs:
        x = convert_to_tensor(x)
        if isinstance(spec, str):
            spec = (spec,)
        spec = list(spec)
        if spec and spec[0] == ".":
            raise NotImplementedError("assert_shapes: the '...' prefix is not supported")
        if spec and spec[0] == "*":
            raise NotImplementedError("assert_shapes: the '*' prefix is not supported")
        _rank_check(x, [len(spec)] if len(spec) else [0, 1], "exactly" if len(spec) else "in", message, summarize)
        static = x.shape.as_list() if x.shape.rank is not None else [None] * len(spec)
        dynamic = None
        for d, symbol in enumerate(spec):
            if isinstance(symbol, int):
                expected_static, expected_dyn, where = symbol, None, "fixed"
            elif symbol in sizes:
                expected_static, expected_dyn, where = sizes[symbol]
            else:
                if static[d] is None and dynamic is None:
                    dynamic = array_ops.shape(x)
                sizes[symbol] = (static[d], None if static[d] is not None else dynamic[d],
                                 f"tensor {_describe(x)} dimension {d}")
                continue
            if static[d] is not None and expected_static is not None:
                if static[d] != expected_static:
                    prefix = "" if where == "fixed" else f"Specified by {where}.  "
                    raise ValueError(f"{message + '.  ' if message else ''}{prefix}Tensor {_describe(x)} "
                                     f"dimension {d} must have size {expected_static}.  Received size "
                                     f"{static[d]}, shape {tuple(static)}")
                continue
            if dynamic is None:
                dynamic = array_ops.shape(x)
            got = dynamic[d] if static[d] is None else convert_to_tensor(static[d])
            want = expected_dyn if expected_static is None else convert_to_tensor(expected_static)
            Assert(math_ops.equal(got, want), ([message] if message else []) +
                   [f"Specified by {where}", f"Tensor {_describe(x)} dimension", d, "must have size", want,
                    "Received shape: ", got], summarize=summarize)
    return None


def _describe(x):
    return f"shape={tuple(x.shape.as_list()) if x.shape.rank is not None else '<unknown>'} dtype={x.dtype.name}"


def assert_all_finite(x, message, name=None):
    from ember.ops import math_ops

    x = convert_to_tensor(x)
    _check(math_ops.reduce_all(math_ops.is_finite(x)) if hasattr(math_ops, "is_finite") else
           math_ops.reduce_all(math_ops.equal(x - x, x - x)), message, ["Tensor had NaN or Inf values"], None)
    return x


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None):
    """Asserts |x - y| <= atol + rtol * |y| element-wise; both tolerances default to 10 machine epsilons of
    x's dtype, as TensorFlow's."""
    from ember.ops import math_ops

    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype_hint=x.dtype)
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise ValueError(f"assert_near: x must be a floating or complex tensor, got {x.dtype.name}")
    if y.dtype != x.dtype:
        raise ValueError(f"assert_near: y must be {x.dtype.name} like x, got {y.dtype.name}")
    real = x.dtype.real_dtype
    eps = float(np.finfo(real.as_numpy_dtype).eps)
    rtol = convert_to_tensor(10 * eps if rtol is None else rtol, dtype=real)
    atol = convert_to_tensor(10 * eps if atol is None else atol, dtype=real)
    tolerance = atol + rtol * math_ops.abs(y)
    condition = math_ops.less_equal(math_ops.abs(x - y), tolerance)
    if data is None:
        data = [f"x and y not equal to tolerance rtol = {float(np.asarray(rtol.numpy()))}, atol = "
                f"{float(np.asarray(atol.numpy()))}" if _static_value(rtol) is not None and
                _static_value(atol) is not None else "x and y not equal to tolerance",
                f"x ({_describe(x)}) = ", x, f"y ({_describe(y)}) = ", y]
    return _check(condition, message, data, summarize)


def assert_same_float_dtype(tensors=None, dtype=None):
    """The floating dtype every tensor of ``tensors`` (and ``dtype``, when given) shares; float32 when
    there is nothing to check. ValueError for a mix or a non-floating dtype, as TensorFlow's."""
    expected = None if dtype is None else dtypes.as_dtype(dtype)
    first = None
    for t in tensors or []:
        if t is None:
            continue
        t_dtype = dtypes.as_dtype(t.dtype)
        if expected is None:
            expected, first = t_dtype, t
        elif t_dtype != expected:
            raise ValueError(f"{t}, type={t_dtype}, must be of the same type ({expected})"
                             + (f" as {first}." if first is not None else "."))
    if expected is None:
        return dtypes.float32
    if not expected.is_floating:
        raise ValueError(f"Expected floating point type, got {expected}.")
    return expected


def is_numeric_tensor(tensor):
    """Whether ``tensor`` is a tensor of a numeric dtype (not bool, not string), as TensorFlow's."""
    return isinstance(tensor, Tensor) and tensor.dtype not in (dtypes.bool, dtypes.string) and (
        tensor.dtype.is_integer or tensor.dtype.is_floating or tensor.dtype.is_complex)


def enable_traceback_filtering():
    from ember import traceback_filter

    traceback_filter.set_enabled(True)


def disable_traceback_filtering():
    from ember import traceback_filter

    traceback_filter.set_enabled(False)


def is_traceback_filtering_enabled():
    from ember import traceback_filter

    return traceback_filter.enabled()
