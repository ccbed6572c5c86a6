"""``ember.device``: a device scope, as ``tf.device``. Eager ops in the scope run on the device it names
(their results' ``.device``), traced nodes record it as their requested device and the function's placer
honours it (docs/devices.md). The merged scope is part of ember.function's call key, so a function traced
under one scope is traced again under another."""

import contextlib
import threading

from ember import _C, errors

_local = threading.local()


def current_device():
    """The merged requested device of this thread's scopes ('' outside every scope)."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else ""


def _merge(outer, device_name):
    try:
        return _C.device_merge(outer, device_name)
    except errors.InvalidArgumentError as e:  # TensorFlow's DeviceSpec raises ValueError here
        raise ValueError(e.message if hasattr(e, "message") else str(e)) from None


@contextlib.contextmanager
def device(device_name):
    """``with ember.device("/CPU:1"): ...``; ``None`` or ``''`` clears the enclosing scopes."""
    if device_name is not None and not isinstance(device_name, str):
        name = getattr(device_name, "name", None)  # a LogicalDevice or a DeviceSpec-like object
        if not isinstance(name, str):
            raise TypeError(f"device name must be a string or None, got {device_name!r}")
        device_name = name
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    merged = _merge(current_device(), device_name) if device_name else ""
    stack.append(merged)
    _C.set_device_scope(merged)
    _C.set_eager_device_scope(merged)
    try:
        yield
    finally:
        stack.pop()
        outer = stack[-1] if stack else ""
        _C.set_device_scope(outer)
        _C.set_eager_device_scope(outer)
