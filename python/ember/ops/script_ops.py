"""``tf.py_function`` and ``tf.numpy_function``: a Python function as an op.

Eagerly they call the function. Inside ``ember.function`` each call becomes an op (TensorFlow's names:
``EagerPyFunc`` for py_function, ``PyFunc`` / ``PyFuncStateless`` for numpy_function; src/ember/ops/py_func.cc)
whose ``token`` attribute names the function in ``_registry``; the kernel calls ``_run_token`` (through
src/python/py_script_ops.cc), on whatever executor thread runs it, with the GIL. A py_function hands the
function eager tensors and is differentiable: its ops run eagerly on a GradientTape and the op's gradient
(Note [The gradient of a py_function] in py_func.cc) runs it again on a tape. A numpy_function hands NumPy arrays
and is not differentiable. Both are stateful (they keep program order with the other stateful ops of the
function) unless ``numpy_function(stateful=False)``.
"""

import itertools
import threading

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor

_EagerPyFunc = _C.op("EagerPyFunc")
_PyFunc = _C.op("PyFunc")
_PyFuncStateless = _C.op("PyFuncStateless")

_GRAD_SUFFIX = "_grad"


class _Registered:
    __slots__ = ("func", "tout")

    def __init__(self, func, tout):
        self.func = func
        self.tout = tout


_registry = {}
_registry_lock = threading.Lock()
_tokens = itertools.count(1)


def _register(func, tout):
    token = f"pyfunc_{next(_tokens)}"
    with _registry_lock:
        _registry[token] = _Registered(func, tout)
    return token


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


def _run_token(token, eager, inputs):
    """The kernels' callback: runs the function registered as ``token`` on ``inputs`` (eager tensors)."""
    grad_of = token[:-len(_GRAD_SUFFIX)] if token.endswith(_GRAD_SUFFIX) else None
    entry = _registry.get(grad_of or token)
    if entry is None:
        return errors.FAILED_PRECONDITION, f"py_function: no function is registered as {token!r}"
    try:
        if grad_of is not None:
            return _gradient(entry, inputs)
        if not eager:
            values = entry.func(*[t.numpy() for t in inputs])
            return _results(values, entry.tout, True, token)
        return _results(entry.func(*inputs), entry.tout, False, token)
    except errors.OpError as e:
        return e.error_code, str(e)
    except Exception as e:  # noqa: BLE001 - every error of the function becomes the op's
        return _error_status(e)


def _gradient(entry, args):
    """``args`` are the forward inputs followed by the gradients of its outputs; gives the gradients of the
    floating-point inputs (zeros where an input does not reach the outputs). The function runs again, on a
    tape: TensorFlow keeps the forward call's tape instead, but a tape held from every forward call until a
    gradient that may never come would exhaust the tapes (at most 32 live at once)."""
    from ember.backprop import GradientTape

    n_in = len(args) - len(entry.tout)
    inputs, output_grads = list(args[:n_in]), list(args[n_in:])
    with GradientTape() as tape:
        for t in inputs:
            tape.watch(t)
        outputs = _results(entry.func(*inputs), entry.tout, False, "py_function")
    wanted = [i for i, t in enumerate(inputs) if t.dtype.is_floating or t.dtype.is_complex]
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
    token = _register(func, tout)
    return _shape_result(_as_list(_EagerPyFunc(inputs, token, tout)), form)


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
    token = _register(func, tout)
    op = _PyFunc if stateful else _PyFuncStateless
    return _shape_result(_as_list(op(inputs, token, tout)), form)


def _as_list(outputs):
    if outputs is None:
        return []
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
