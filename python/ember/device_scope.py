"""``ember.device``: a device scope, as ``tf.device``. Every kernel runs on the CPU today, so a scope only
records the requested device (TensorFlow's soft placement); it is part of ember.function's call key, so
a function traced under one scope is traced again under another."""

import contextlib
import threading

from ember import _C

_local = threading.local()


def current_device():
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else ""


@contextlib.contextmanager
def device(device_name):
    """``with ember.device("/CPU:0"): ...``"""
    if device_name is not None and not isinstance(device_name, str):
        raise TypeError(f"device name must be a string or None, got {device_name!r}")
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(device_name or "")
    _C.set_device_scope(stack[-1])
    try:
        yield
    finally:
        stack.pop()
        _C.set_device_scope(stack[-1] if stack else "")
