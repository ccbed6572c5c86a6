"""The operators converted code calls (``ag__.if_stmt``, ``ag__.while_stmt``, ...).

Each decides when it runs: a condition that is a graph tensor (inside ``ember.function``) stages
``ember.cond`` / ``ember.while_loop``; anything else (a Python value, or an eager tensor) runs as Python,
so Python conditions on Python values unroll while tracing, as in TensorFlow. The state a statement
changes goes in and out through ``get_state``/``set_state``; the checks here give TensorFlow's messages
("'y' must also be initialized in the else branch") with the user's file and line.
"""

import linecache
import os
import sys

import numpy as np

from ember.framework.tensor import Tensor
from ember.util import nest

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


# ---- placeholders for variables without a value -------------------------------------------------------

class Undefined:
    """The value of a variable that a converted statement may define but was not defined before it."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name):
        self.symbol_name = symbol_name

    def read(self):
        raise UnboundLocalError(f"'{self.symbol_name}' is used before assignment")

    def __repr__(self):
        return f"<Undefined {self.symbol_name}>"


class UndefinedReturnValue:
    """The return value of a function that has not returned yet."""

    __slots__ = ()


def ld(value):
    """A read of a variable that may be undefined."""
    if isinstance(value, Undefined):
        return value.read()
    return value


def ldu(read, name):
    """The value of an attribute that may not exist yet (``self.x``): Undefined where it does not."""
    try:
        return read()
    except (AttributeError, NameError, UnboundLocalError):
        return Undefined(name)


def store_attr(obj, attr, value):
    """Sets ``obj.attr``; an Undefined value removes the attribute (it did not exist before the statement:
    restoring that state before the other branch is traced)."""
    if not isinstance(value, Undefined):
        setattr(obj, attr, value)
    elif hasattr(obj, attr):
        try:
            delattr(obj, attr)
        except AttributeError:
            pass


def ret(retval, do_return):
    del do_return
    return None if isinstance(retval, UndefinedReturnValue) else retval


# ---- where the user's code is -------------------------------------------------------------------------

def _user_frame():
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame


def _location():
    """Where the user's statement is (file, line, function), taken when a converted statement starts: a
    staged branch or body may run under frames that are not the user's."""
    frame = _user_frame()
    if frame is None:
        return None
    return frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name


def in_user_code(message, where=None):
    """``message`` prefixed, as TensorFlow does, with the user's statement that the error is about."""
    where = where or _location()
    if where is None:
        return message
    filename, lineno, name = where
    line = linecache.getline(filename, lineno).strip()
    return f"in user code:\n\n    File \"{filename}\", line {lineno}, in {name}\n        {line}\n\n    {message}"


# ---- tensors ------------------------------------------------------------------------------------------

def _is_graph_tensor(value):
    """A tensor of a trace: it stages control flow. Inside ``ember.function`` every tensor does, a
    constant's too (in TensorFlow a constant created in a tf.function is a graph tensor)."""
    if not isinstance(value, Tensor):
        return False
    if value._is_symbolic:
        return True
    from ember import _C
    return _C.in_trace()


def _truth(value):
    return bool(value)


def _control_flow_ops():
    from ember.ops import control_flow_ops
    return control_flow_ops


def _is_tensor_array(value):
    return type(value).__name__ == "TensorArray" and hasattr(value, "read") and hasattr(value, "size")


_CONVERTIBLE = (bool, int, float, np.ndarray, np.generic)


def _as_tensors(value):
    """State leaves as the staged op needs them: Python numbers become tensors (TensorFlow's
    conversion of loop and cond outputs)."""
    from ember.framework.tensor import convert_to_tensor

    def convert(v):
        if isinstance(v, _CONVERTIBLE):
            return convert_to_tensor(v)
        return v
    return nest.map_structure(convert, value)


def _branch_results(value):
    """A staged branch's (or loop body's) results, each made by an op of the branch: a tensor of the
    enclosing trace returned unchanged (``if c: y = x``) goes through an identity inside the branch, so it
    is a lifted input of the branch like any other tensor it reads (ember.cond and while_loop lift only
    what ops read: a result that is an outer tensor made the call and the function disagree on arguments)."""
    from ember.ops import array_ops

    def own(v):
        return array_ops.identity(v) if _is_graph_tensor(v) else v
    return nest.map_structure(own, _as_tensors(value))


def _structure(value):
    """A printable skeleton of a nested structure: its containers, with '.' for each leaf."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_structure(value[k])}" for k in nest._sorted_keys(value)) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_structure(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    return "."


def _same_structure(a, b):
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and sorted(map(repr, a)) == sorted(map(repr, b)) and \
            all(_same_structure(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b) and \
            all(_same_structure(x, y) for x, y in zip(a, b))
    return True


def _structure_mismatch(a, b, first, second):
    """The description of two structures that differ (None when they are the same)."""
    if _same_structure(a, b):
        return None
    return (f"The two structures don't have the same nested structure.\n\nFirst structure ({first}): "
            f"{_structure(a)}\n\nSecond structure ({second}): {_structure(b)}")


# ---- if ----------------------------------------------------------------------------------------------

def if_stmt(cond, body, orelse, get_state, set_state, symbol_names, nouts):
    """``if cond: body() else: orelse()``; a graph-tensor ``cond`` stages ``ember.cond``."""
    del nouts
    if _is_graph_tensor(cond):
        _staged_if(cond, body, orelse, get_state, set_state, symbol_names, _location())
    elif _truth(cond):
        body()
    else:
        orelse()


def _branch_outputs(values, symbol_names, branch, where):
    for name, value in zip(symbol_names, values):
        if isinstance(value, UndefinedReturnValue):
            raise ValueError(in_user_code(f"the {branch} branch must also have a return statement.", where))
        if isinstance(value, Undefined):
            raise ValueError(in_user_code(f"'{name}' must also be initialized in the {branch} branch", where))
        if value is None:
            raise ValueError(in_user_code(f"'{name}' is None at the end of the {branch} branch.", where))
    return tuple(_branch_results(v) for v in values)


def _compare_branches(main, other, symbol_names, where):
    """TensorFlow's messages for state that differs between the branches (after both were traced)."""
    for name, a, b in zip(symbol_names, main, other):
        label = "the return value" if name.startswith("retval_") else f"'{name}'"
        mismatch = _structure_mismatch(a, b, "main branch", "else branch")
        if mismatch:
            raise TypeError(in_user_code(f"{label} must have the same nested structure in the main and else "
                                         f"branches:\n\n{mismatch}", where))
        for x, y in zip(nest.flatten(a), nest.flatten(b)):
            dx, dy = getattr(x, "dtype", None), getattr(y, "dtype", None)
            if dx is not None and dy is not None and dx != dy:
                raise TypeError(in_user_code(f"{label} has dtype {dx.name} in the main branch, but dtype "
                                             f"{dy.name} in the else branch", where))


def _staged_if(cond, body, orelse, get_state, set_state, symbol_names, where):
    init = get_state()
    outputs = {}

    def branch(fn, which):
        def staged():
            set_state(init)
            fn()
            outputs[which] = _branch_outputs(get_state(), symbol_names, which, where)
            return outputs[which]
        return staged

    try:
        final = _control_flow_ops().cond(cond, branch(body, "main"), branch(orelse, "else"))
    except (TypeError, ValueError):
        if "main" in outputs and "else" in outputs:
            _compare_branches(outputs["main"], outputs["else"], symbol_names, where)
        raise
    if not symbol_names:
        return
    set_state(tuple(final) if isinstance(final, (list, tuple)) else (final,))


def if_exp(cond, if_true, if_false, expr_repr):
    """``if_true() if cond else if_false()``."""
    del expr_repr
    if _is_graph_tensor(cond):
        return _control_flow_ops().cond(cond, lambda: _branch_results(if_true()), lambda: _branch_results(if_false()))
    return if_true() if _truth(cond) else if_false()


# ---- logical operators ---------------------------------------------------------------------------------

def and_(a, b):
    """``a() and b()``, ``b`` evaluated only when needed (a staged ``cond`` for a graph tensor)."""
    a_value = a()
    if _is_graph_tensor(a_value):
        return _control_flow_ops().cond(a_value, lambda: _branch_results(b()), lambda: _branch_results(a_value))
    return a_value and b()


def or_(a, b):
    a_value = a()
    if _is_graph_tensor(a_value):
        return _control_flow_ops().cond(a_value, lambda: _branch_results(a_value), lambda: _branch_results(b()))
    return a_value or b()


def not_(a):
    if isinstance(a, Tensor):
        from ember.ops import math_ops
        return math_ops.logical_not(a)
    return not a


# ---- assert ------------------------------------------------------------------------------------------

def assert_stmt(expression1, expression2):
    """``assert expression1, expression2()``: ``ember.debugging.Assert`` for a tensor (ordered among the
    function's side effects), Python's ``assert`` otherwise."""
    if isinstance(expression1, Tensor):
        import ember
        message = expression2() if expression2 is not None else "Assertion failed"
        data = list(message) if isinstance(message, (list, tuple)) else [message]
        return ember.debugging.Assert(expression1, data)
    if not expression1:
        raise AssertionError(expression2() if expression2 is not None else None)
    return None


# ---- loops -------------------------------------------------------------------------------------------

_LOOP_HELP = ("\nSee https://github.com/tensorflow/tensorflow/blob/master/tensorflow/python/autograph/g3doc/"
              "reference/limitations.md#consistency-of-control-flow-types for more info.")


def while_stmt(test, body, get_state, set_state, symbol_names, opts):
    """``while test(): body()``; a graph-tensor test stages ``ember.while_loop``."""
    cond = _dispatch_test(test)
    if _is_graph_tensor(cond):
        _staged_while(test, body, get_state, set_state, symbol_names, opts, _location())
        return
    while True:
        if _is_graph_tensor(cond):
            raise NotImplementedError(in_user_code(
                "The condition of while loop started as non-Tensor, then changed to Tensor. This may happen "
                "either because variables changed type, or when a break or return statement inside the loop "
                "depends on a Tensor condition. In both cases, changing to a TF loop should remove the error."
                + _LOOP_HELP, _location()))
        if not _truth(cond):
            return
        body()
        cond = test()


# Note [Range loops]
# ``for i in tf.range(n)`` (or ``range(n)`` on a tensor) stages a loop whose variable is ``i`` itself: it
# starts at ``start`` and steps by ``delta`` while below ``limit``, as TensorFlow's range loops do, instead of
# indexing the materialised range (a gather per iteration and a second counter). ``range_tensor`` made the
# range through ``converted_call``; this table maps it back to its bounds. It keeps the tensor alive so its
# id is not reused, and stays small (only the latest few ranges matter: a for loop uses its range at once).
_RANGES = {}
_MAX_RANGES = 64


def range_tensor(start, limit, delta, dtype=None, name="range"):
    from ember.ops import array_ops
    tensor = array_ops.range(start, limit, delta, dtype=dtype, name=name)
    if len(_RANGES) >= _MAX_RANGES:
        _RANGES.pop(next(iter(_RANGES)))
    _RANGES[id(tensor)] = (tensor, start, limit, delta)
    return tensor


def _range_bounds(iter_):
    entry = _RANGES.get(id(iter_))
    if entry is None or entry[0] is not iter_:
        return None
    return entry[1:]


def _dispatch_test(test):
    """The loop's first test, to decide between a staged and a Python loop. Inside a trace it is traced
    into a scratch trace that is thrown away, so a staged loop's test (traced again as the loop's
    condition) leaves no ops, stateful ones included, in the enclosing graph."""
    from ember import _C
    if not _C.in_trace():
        return test()
    scratch = _C.Trace("autograph_loop_test", True)
    scratch.enter()
    try:
        return test()
    finally:
        scratch.exit()


def for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts):
    """``for x in iter_: body(x)`` while ``extra_test()`` holds (break/return flags): over a graph tensor's
    first dimension or a TensorArray, a staged ``ember.while_loop``; over anything else, Python."""
    where = _location()
    staged_for = getattr(iter_, "_ember_staged_for", None)
    if staged_for is not None:
        from ember import _C
        if _C.in_trace():  # a tf.data dataset: a staged loop over its iterator (ember/data/staged.py)
            staged_for(extra_test, body, get_state, set_state, symbol_names, opts)
            return
    bounds = _range_bounds(iter_) if _is_graph_tensor(iter_) else None
    if bounds is not None:
        _staged_range_for(iter_.dtype, *bounds, extra_test, body, get_state, set_state, symbol_names, opts, where)
        return
    if _is_graph_tensor(iter_):
        from ember.ops import array_ops
        n = array_ops.shape(iter_)[0]
        static_n = iter_.shape[0] if iter_.shape.rank else None
        if iter_.shape.rank == 0:
            raise ValueError(in_user_code("Cannot iterate over a scalar tensor.", where))
        _staged_for(lambda i: array_ops.gather(iter_, i), n, static_n, extra_test, body, get_state, set_state,
                    symbol_names, opts, where)
        return
    if _is_tensor_array(iter_) and _is_graph_tensor(iter_.size()):
        _staged_for(iter_.read, iter_.size(), None, extra_test, body, get_state, set_state, symbol_names, opts,
                    where)
        return
    if _is_tensor_array(iter_):
        iter_ = [iter_.read(i) for i in range(int(iter_.size()))]
    for item in iter_:
        if extra_test is not None:
            keep_going = extra_test()
            if _is_graph_tensor(keep_going):
                raise NotImplementedError(in_user_code(
                    "break and return statements which depend on a TF condition are not supported in Python "
                    "for loops. Did you intend to make it a TF loop?" + _LOOP_HELP, where))
            if not keep_going:
                break
        body(item)


def _staged_for(element, n, static_n, extra_test, body, get_state, set_state, symbol_names, opts, where):
    from ember.framework.tensor import constant
    from ember.ops import math_ops
    index = [constant(0)]

    def test():
        more = math_ops.less(index[0], n)
        if extra_test is None:
            return more
        keep_going = extra_test()
        return math_ops.logical_and(more, keep_going) if isinstance(keep_going, Tensor) else (
            more if keep_going else constant(False))

    def loop_body():
        i = index[0]
        body(element(i))
        index[0] = i + 1

    def get_counted():
        return (index[0],) + tuple(get_state())

    def set_counted(values):
        index[0] = values[0]
        set_state(tuple(values[1:]))

    del static_n
    _staged_while(test, loop_body, get_counted, set_counted, ("<loop index>",) + tuple(symbol_names), opts, where)


def _staged_range_for(dtype, start, limit, delta, extra_test, body, get_state, set_state, symbol_names, opts,
                      where):
    """Note [Range loops]."""
    from ember.framework.tensor import convert_to_tensor
    from ember.ops import math_ops

    def bound(v):
        v = v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype)
        return v if v.dtype == dtype else math_ops.cast(v, dtype)
    limit_t, delta_t = bound(limit), bound(delta)
    iterate = [bound(start)]

    def test():
        i = iterate[0]
        if isinstance(delta, (int, float, np.integer, np.floating)):
            more = math_ops.less(i, limit_t) if delta > 0 else math_ops.greater(i, limit_t)
        else:
            more = math_ops.logical_or(math_ops.logical_and(delta_t > 0, i < limit_t),
                                       math_ops.logical_and(delta_t < 0, i > limit_t))
        if extra_test is None:
            return more
        keep_going = extra_test()
        if isinstance(keep_going, Tensor):
            return math_ops.logical_and(more, keep_going)
        return more if keep_going else math_ops.logical_and(more, False)

    def loop_body():
        i = iterate[0]
        body(i)
        iterate[0] = i + delta_t

    def get_counted():
        return (iterate[0],) + tuple(get_state())

    def set_counted(values):
        iterate[0] = values[0]
        set_state(tuple(values[1:]))

    _staged_while(test, loop_body, get_counted, set_counted, ("<range iterate>",) + tuple(symbol_names), opts,
                  where)


def _loop_shape_error(name, before, after, where):
    return ValueError(in_user_code(
        f"'{name}' has shape {before} before the loop, but shape {after} after one iteration. Use "
        f"ember.autograph.experimental.set_loop_options to set shape invariants.", where))


def _check_loop_vars(init, new, symbol_names, invariants, where):
    for k, (name, a, b) in enumerate(zip(symbol_names, init, new)):
        mismatch = _structure_mismatch(a, b, "before the loop", "after one iteration")
        if mismatch:
            raise TypeError(in_user_code(f"'{name}' does not have the same nested structure after one "
                                         f"iteration.\n\n{mismatch}", where))
        for x, y in zip(nest.flatten(a), nest.flatten(b)):
            if not (isinstance(x, Tensor) and isinstance(y, Tensor)):
                continue
            if x.dtype != y.dtype:
                raise TypeError(in_user_code(f"'{name}' has dtype {x.dtype.name} before the loop, but dtype "
                                             f"{y.dtype.name} after one iteration", where))
            allowed = invariants.get(k, x.shape)
            if not _shape_allows(allowed, y.shape):
                raise _loop_shape_error(name, x.shape, y.shape, where)


def _shape_allows(invariant, shape):
    if invariant.rank is None:
        return True
    if shape.rank is None or shape.rank != invariant.rank:
        return False
    return all(a is None or a == b for a, b in zip(invariant.as_list(), shape.as_list()))


def _shape_invariants(init, opts):
    """``set_loop_options(shape_invariants=[(var, shape), ...])``: the loop variable is found by identity."""
    from ember.framework.tensor_shape import TensorShape
    out = {}
    for var, shape in opts.get("shape_invariants", ()) or ():
        for k, value in enumerate(init):
            if value is var:
                out[k] = TensorShape(shape)
    return out


def _staged_while(test, body, get_state, set_state, symbol_names, opts, where):
    init = tuple(get_state())
    for name, value in zip(symbol_names, init):
        if isinstance(value, UndefinedReturnValue):
            raise NotImplementedError(in_user_code(
                "a return statement cannot be placed inside this TensorFlow loop; this may happen if a return "
                "statement depends on a static Python condition such as a hyperparameter", where))
    undefined = [k for k, v in enumerate(init) if isinstance(v, Undefined) or v is None]
    invariants = _shape_invariants(init, opts)
    if undefined:
        init = _initialize_undefined(body, get_state, set_state, init, undefined, symbol_names, invariants, where)
        return _staged_while_checking_first_iteration(test, body, get_state, set_state, init, symbol_names, opts,
                                                      where, [symbol_names[k] for k in undefined])
    init = tuple(_as_tensors(v) for v in init)
    lists = _tracked_lists(opts)
    dummy = not init
    if dummy:  # a loop that only has side effects still needs one loop variable
        from ember.framework.tensor import constant
        init = (constant(0),)

    def cond_fn(*values):
        if not dummy:
            set_state(values)
        result = test()
        return result if isinstance(result, Tensor) else _as_tensors(bool(result))

    def body_fn(*values):
        if not dummy:
            set_state(values)
        body()
        _check_lists(lists, where)
        if dummy:
            return values
        new = tuple(_branch_results(v) for v in get_state())
        for name, value in zip(symbol_names, new):
            if isinstance(value, Undefined) or value is None:
                raise ValueError(in_user_code(f"'{name}' must be defined before the loop.", where))
        _check_loop_vars(init, new, symbol_names, invariants, where)
        return new

    kwargs = {}
    if invariants:
        kwargs["shape_invariants"] = tuple(
            invariants[k] if k in invariants else nest.map_structure(lambda t: getattr(t, "shape", None), v)
            for k, v in enumerate(init))
    for key in ("maximum_iterations", "parallel_iterations", "swap_memory"):
        if opts.get(key) is not None:
            kwargs[key] = opts[key]
    final = _control_flow_ops().while_loop(cond_fn, body_fn, init, **kwargs)
    if not dummy:
        set_state(tuple(final))


def _initialize_undefined(body, get_state, set_state, init, undefined, symbol_names, invariants, where):
    """Values for the loop variables first assigned inside the loop (``None`` or undefined before it), as
    TensorFlow finds them: the body runs once in a scratch trace that is thrown away, and each such variable
    starts as zeros of the dtype and shape it gets there (unknown dimensions become shape invariants). The
    body's Python side effects happen once more, as in TensorFlow."""
    from ember import _C
    from ember.ops import array_ops
    from ember.framework.tensor_shape import TensorShape
    scratch = _C.Trace("autograph_undefined_loop_vars", True)
    scratch.enter()
    try:
        set_state(init)
        body()
        after = tuple(get_state())
    finally:
        scratch.exit()
        set_state(init)
    init = list(init)
    for k in undefined:
        value = _as_tensors(after[k])
        if isinstance(value, Undefined) or value is None or not all(isinstance(t, Tensor) for t in nest.flatten(value)):
            raise ValueError(in_user_code(f"'{symbol_names[k]}' must be defined before the loop.", where))

        def zeros(t):
            return array_ops.zeros([d if d is not None else 0 for d in t.shape.as_list()], dtype=t.dtype)
        init[k] = nest.map_structure(zeros, value)
        if not isinstance(value, Tensor):
            continue
        if k not in invariants and not value.shape.is_fully_defined():
            invariants[k] = TensorShape(value.shape)
    return tuple(init)


def _staged_while_checking_first_iteration(test, body, get_state, set_state, init, symbol_names, opts, where,
                                           names):
    """The loop, with a flag telling whether it ran: the variables it initialises have no value of their own
    after zero iterations, and using them is TensorFlow's run-time error."""
    from ember.framework.tensor import constant
    state = [constant(False)]

    def get_flagged():
        return (state[0],) + tuple(get_state())

    def set_flagged(values):
        state[0] = values[0]
        set_state(tuple(values[1:]))

    def flagged_body():
        body()
        state[0] = constant(True)

    set_state(init)
    _staged_while(test, flagged_body, get_flagged, set_flagged, ("<iterated>",) + tuple(symbol_names), opts, where)
    import ember
    assert_op = getattr(getattr(ember, "debugging", None), "Assert", None)
    if assert_op is not None:
        assert_op(state[0], [f"loop must iterate at least once to initialize {', '.join(names)}"])


def _tracked_lists(opts):
    """The Python lists the loop body appends to (``opts["lists"]``), with their lengths now."""
    getter = opts.get("lists")
    if getter is None:
        return ()
    try:
        pairs = getter()
    except NameError:
        return ()
    return tuple((name, value, len(value)) for name, value in pairs if isinstance(value, list))


def _check_lists(lists, where):
    for name, value, length in lists:
        if len(value) != length:
            del value[length:]
            raise ValueError(in_user_code(
                f"'{name}' is a Python list appended to inside a loop that is staged (its condition is a tensor): "
                f"the loop body's tensors cannot be used outside the loop. Use an ember.TensorArray "
                f"(ta = ta.write(i, value)) for values computed in the loop, or loop over a Python range to "
                f"unroll it.", where))


# ---- calls -------------------------------------------------------------------------------------------

def converted_call(f, args, kwargs):
    from ember.autograph import api
    return api.converted_call(f, args, kwargs)
