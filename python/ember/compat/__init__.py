"""``ember.compat``: ``compat.v1`` for code written against TensorFlow 1.x (wrap_function and friends), and
TensorFlow's Python 2/3 helpers (``as_bytes``, ``as_str``, ``dimension_value`` ...), which TF 2 code still
calls."""

import datetime as _datetime
import numbers as _numbers
import os as _os
import sys as _sys

import numpy as _np

from ember.compat import v1  # noqa: F401

v2 = _sys.modules["ember"]  # tf.compat.v2: TensorFlow 2's API, which is ember's own

bytes_or_text_types = (bytes, str)
integral_types = (_numbers.Integral, _np.integer)
real_types = (_numbers.Real, _np.integer, _np.floating)
complex_types = (_numbers.Complex, _np.number)


def as_bytes(bytes_or_text, encoding="utf-8"):
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8"):
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value, encoding="utf-8"):
    return as_str(value, encoding) if isinstance(value, bytes) else str(value)


def path_to_str(path):
    return _os.fspath(path) if isinstance(path, _os.PathLike) else path


def dimension_value(dimension):
    """An int or None from a TensorShape entry (ember's entries are already ints or None)."""
    return getattr(dimension, "value", dimension)


def dimension_at_index(shape, index):
    from ember.framework.tensor_shape import TensorShape

    shape = TensorShape(shape)
    if shape.rank is None:
        return None
    return shape[index]


# TensorFlow code asks whether the consumers of its graphs are new enough for an op or attribute added on a
# date. ember reads and writes the graphs of TensorFlow 2.21, so it answers with 2.21's horizon.
_FORWARD_COMPATIBILITY_HORIZON = _datetime.date(2026, 1, 16)


def forward_compatible(year, month, day):
    return _FORWARD_COMPATIBILITY_HORIZON > _datetime.date(year, month, day)


def forward_compatibility_horizon(year, month, day):
    import contextlib

    @contextlib.contextmanager
    def scope():
        global _FORWARD_COMPATIBILITY_HORIZON
        saved = _FORWARD_COMPATIBILITY_HORIZON
        _FORWARD_COMPATIBILITY_HORIZON = _datetime.date(year, month, day)
        try:
            yield
        finally:
            _FORWARD_COMPATIBILITY_HORIZON = saved

    return scope()
