"""``ember.init_scope``: run code eagerly even while a function traces (variable initializers)."""

import contextlib

from ember import _C


@contextlib.contextmanager
def init_scope():
    token = _C.pause_trace()
    try:
        yield
    finally:
        _C.resume_trace(token)
