"""``tf.py_function`` and ``tf.numpy_function``: a Python function as an op.

Eagerly they call the function. Inside ``ember.function`` each call becomes an op (TensorFlow's names:
``EagerPyFunc`` for py_function, ``PyFunc`` / ``PyFuncStateless`` for numpy_function; src/ember/ops/py_func.cc)
whose ``token`` attribute names the function in ``_registry``; the kernel calls ``_run_token`` (through
src/python/py_script_ops.cc), on whatever executor thread runs it, with the GIL. A py_function hands the
function eager tensors and is differentiable: once a gradient of its op is built, each call runs the function
on a GradientTape and keeps the tape for the gradient (Note [The gradient of a py_function] in py_func.cc). A
numpy_function hands NumPy arrays and is not differentiable. Both are stateful (they keep program order with
the other stateful ops of the function) unless ``numpy_function(stateful=False)``.

``_registry`` holds the functions weakly: each op holds its registration through a handle attribute, so the
function goes with the last graph that has the op (Note [Who keeps a py_function alive] in ops/py_func.h).
"""

import itertools
import threading
import weakref

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor

_EagerPyFunc = _C.op("EagerPyFunc")
_PyFunc = _C.op("PyFunc")
_PyFuncStateless = _C.op("PyFuncStateless")

_GRAD_SUFFIX = "_grad"


class _Registered:
    """A traced function: ``recorded`` is (tape, inputs, outputs) of its last call, kept for its gradient."""
    __slots__ = ("func", "tout", "recorded", "__weakref__")

    def __init__(self, func, tout):
        self.func = func
        self.tout = tout
        self.recorded = None


_registry = weakref.WeakValueDictionary()  # token -> _Registered, alive while a graph holds its op
_registry_lock = threading.Lock()
_tokens = itertools.count(1)


def _register(func, tout):
    """A new token for ``func`` and the handle (an op attribute) that keeps it registered."""
    entry = _Registered(func, tout)
    with _registry_lock:
        token = f"pyfunc_{next(_tokens)}"
        _registry[token] = entry
    return token, _C.py_func_callable_handle(entry)


def registered_in(function_defs):
    """The registrations still alive of the py_function and numpy_function ops of ``function_defs``
    (FunctionDef protos, as a SavedModel's library holds them): whoever holds them keeps those ops runnable."""
    entries = []
    for function_def in function_defs:
        for node in function_def.node_def:
            if node.op in ("EagerPyFunc", "PyFunc", "PyFuncStateless"):
                entry = _registry.get(node.attr["token"].s.decode())
                if entry is not None:
                    entries.append(entry)
    return entries


def _as_dtypes(Tout, api):  # noqa: N803 - TensorFlow's name
    """(dtypes, how to return them): a list or tuple gives a list (an empty one: the function's result is
    dropped), one dtype a tensor."""
    if Tout is None:  # TensorFlow's message
        raise TypeError(f"Missing required argument: 'Tout'\n  If using tf.{api} as a decorator, set `Tout`\n"
                        f"  **by name** above the function:\n  `@tf.{api}(Tout=tout)`")
    if isinstance(Tout, (list, tuple)):
        return [dtypes.as_dtype(t) for t in Tout], "list"
    return [dtypes.as_dtype(Tout)], "single"


def _shape_result(outputs, form):
    if form == "single":
        return outputs[0]
    return list(outputs)


# TensorFlow's mapping of a Python exception raised by the function to an op error (script_ops.py):
# errors of the arguments are InvalidArgument, the end of an iteration OutOfRange, anything else Unknown.
_CODE_OF = ((TypeError, errors.INVALID_ARGUMENT), (ValueError, errors.INVALID_ARGUMENT),
            (StopIteration, errors.OUT_OF_RANGE), (IndexError, errors.OUT_OF_RANGE),
            (MemoryError, errors.RESOURCE_EXHAUSTED), (NotImplementedError, errors.UNIMPLEMENTED))


def _error_status(e):
    code = next((c for cls, c in _CODE_OF if isinstance(e, cls)), errors.UNKNOWN)
    return code, f"{type(e).__name__}: {e}"


def _as_op_error(e):
    code, message = _error_status(e)
    error = errors.exception_type_from_error_code(code)(None, None, message)
    error.__cause__ = e
    return error


def _results(values, tout, numpy_results, token):
    """The function's return value as tensors of the dtypes ``tout`` names."""
    if not tout:
        return []
    flat = list(values) if isinstance(values, (list, tuple)) else [values]
    if len(flat) != len(tout):
        raise ValueError(f"{token}: the function returned {len(flat)} values, Tout names {len(tout)}")
    out = []
    for i, (value, dtype) in enumerate(zip(flat, tout)):
        if numpy_results and not isinstance(value, Tensor):
            array = np.asarray(value, dtype=object if dtype == dtypes.string else None)
            if dtype != dtypes.string and array.dtype != np.dtype(dtype.as_numpy_dtype):
                got = dtypes.as_dtype(array.dtype).name
                raise errors.InvalidArgumentError(
                    None, None, f"{i}-th value returned by {token} is {_tf_type_name(got)}, but expects "
                                f"{_tf_type_name(dtype.name)}")
            value = array
        out.append(convert_to_tensor(value, dtype=dtype))
    return out


def _tf_type_name(name):  # TensorFlow's messages say "double", "float", "int32"
    return {"float64": "double", "float32": "float", "float16": "half"}.get(name, name)


def _run_token(token, eager, entry, keep_for_gradient, inputs):
    """The kernels' callback: runs the function registered as ``token`` (``entry``, or when the op has no
    handle, as in a graph read back from a GraphDef, whatever ``_registry`` still holds) on ``inputs`` (eager
    tensors); a call whose gradient was built (``keep_for_gradient``) keeps its tape for it."""
    grad_of = token[:-len(_GRAD_SUFFIX)] if token.endswith(_GRAD_SUFFIX) else None
    if entry is None:
        entry = _registry.get(grad_of or token)
    if entry is None:
        return errors.FAILED_PRECONDITION, f"py_function: no function is registered as {token!r}"
    try:
        if grad_of is not None:
            return _gradient(entry, inputs)
        if not eager:
            values = entry.func(*[t.numpy() for t in inputs])
            return _results(values, entry.tout, True, token)
        if keep_for_gradient:
            return _call_recorded(entry, token, inputs)
        return _results(entry.func(*inputs), entry.tout, False, token)
    except errors.OpError as e:
        return e.error_code, str(e)
    except Exception as e:  # noqa: BLE001 - every error of the function becomes the op's
        return _error_status(e)


# Guards each _Registered's `recorded`: the call that keeps a tape and the gradient that takes it may run on
# different threads. A kept tape holds no tape slot (a tape has one only while it records), so every
# function keeps its last call's.
_recorded_lock = threading.Lock()


def _watched_inputs(inputs):
    return [i for i, t in enumerate(inputs) if t.dtype.is_floating or t.dtype.is_complex]


def _call_recorded(entry, token, inputs):
    """Calls the function on a GradientTape and keeps (tape, inputs, outputs) for ``_gradient``, as
    TensorFlow's EagerFunc keeps them for its graph gradient: the gradient then replays the tape."""
    from ember.backprop import GradientTape

    with _recorded_lock:
        entry.recorded = None  # this function's earlier call gives its tape up
    tape = GradientTape()
    try:
        tape._push()
    except errors.ResourceExhaustedError:  # 32 tapes record already: keep nothing, the gradient reruns
        return _results(entry.func(*inputs), entry.tout, False, token)
    try:
        for i in _watched_inputs(inputs):
            tape.watch(inputs[i])
        outputs = _results(entry.func(*inputs), entry.tout, False, token)
    finally:
        tape._pop()
    with _recorded_lock:
        entry.recorded = (tape, inputs, outputs)
    return outputs


def _same_values(recorded, inputs):
    if len(recorded) != len(inputs):
        return False
    for a, b in zip(recorded, inputs):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        equal_nan = a.dtype.is_floating or a.dtype.is_complex
        if not np.array_equal(a.numpy(), b.numpy(), equal_nan=equal_nan):
            return False
    return True


def _gradient(entry, args):
    """``args`` are the forward inputs followed by the gradients of its outputs; gives the gradients of the
    floating-point inputs (zeros where an input does not reach the outputs). It replays the tape the forward
    call kept. When there is none (a second gradient of a persistent tape, which TensorFlow refuses with a
    KeyError, or a tape given up to newer calls) or it is of another call (one on other inputs since, whose
    tape TensorFlow would replay all the same), the function runs again, on a new tape."""
    from ember.backprop import GradientTape

    n_in = len(args) - len(entry.tout)
    inputs, output_grads = list(args[:n_in]), list(args[n_in:])
    wanted = _watched_inputs(inputs)
    with _recorded_lock:
        recorded, entry.recorded = entry.recorded, None
    if recorded is not None and _same_values(recorded[1], inputs):
        tape, inputs, outputs = recorded
    else:
        with GradientTape() as tape:
            for i in wanted:
                tape.watch(inputs[i])
            outputs = _results(entry.func(*inputs), entry.tout, False, "py_function")
    grads = tape.gradient(outputs, [inputs[i] for i in wanted], output_gradients=output_grads,
                          unconnected_gradients="zero")
    return [convert_to_tensor(g, dtype=inputs[i].dtype) for g, i in zip(grads, wanted)]


_C.set_py_func_callback(_run_token)


def _inputs(inp):
    if inp is None:
        return []
    return [convert_to_tensor(t) for t in (inp if isinstance(inp, (list, tuple)) else [inp])]


def py_function(func=None, inp=None, Tout=None, name=None):  # noqa: N803 - TensorFlow's names
    """Calls ``func`` on the tensors ``inp`` (eager tensors, also inside ``ember.function``) and gives its
    results as tensors of the dtypes ``Tout`` names (a list gives a list, one dtype a tensor).
    Gradients flow through the ops ``func`` runs."""
    if func is None:  # the decorator form: @tf.py_function(Tout=...)
        return lambda f: (lambda *args: py_function(f, list(args), Tout, name))
    tout, form = _as_dtypes(Tout, "py_function")
    inputs = _inputs(inp)
    if not _C.in_trace():
        try:
            return _shape_result(_results(_call_flushing_denormals(func, inputs), tout, False, "py_function"), form)
        except errors.OpError:
            raise
        except Exception as e:
            raise _as_op_error(e) from e
    token, handle = _register(func, tout)
    return _shape_result(_as_list(_EagerPyFunc(inputs, token, tout, handle)), form)


def _call_flushing_denormals(func, inputs):
    """func(*inputs) with FTZ/DAZ set on this thread, as TensorFlow runs an eager py_function's Python inside
    its kernel: NumPy there flushes subnormals (docs/subnormals.md). The thread's own bits come back after."""
    saved = _C.denormal_flags()
    _C.set_denormal_flags(_C.FLUSH_DENORMALS)
    try:
        return func(*inputs)
    finally:
        _C.set_denormal_flags(saved)


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):  # noqa: N803
    """Calls ``func`` on NumPy arrays of ``inp`` and gives its results as tensors: eagerly as they are (one
    result bare, as TensorFlow), inside ``ember.function`` of ``Tout``'s dtypes (a result of another dtype is
    InvalidArgumentError there). Not differentiable."""
    if func is None:
        return lambda f: (lambda *args: numpy_function(f, list(args), Tout, stateful, name))
    tout, form = _as_dtypes(Tout, "numpy_function")
    inputs = _inputs(inp)
    if not _C.in_trace():
        # As TensorFlow's: the results keep their own dtypes, and a single one comes back bare.
        values = func(*[t.numpy() for t in inputs])
        flat = [None if v is None else convert_to_tensor(v)
                for v in (values if isinstance(values, (list, tuple)) else [values])]
        return flat[0] if len(flat) == 1 else flat
    token, handle = _register(func, tout)
    op = _PyFunc if stateful else _PyFuncStateless
    return _shape_result(_as_list(op(inputs, token, tout, handle)), form)


def _as_list(outputs):
    if outputs is None:
        return []
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
