"""``ember.init_scope``: run code eagerly even while a function traces (variable initializers)."""

import contextlib

from ember import _C, eager_context


@contextlib.contextmanager
def init_scope():
    token = _C.pause_trace()
    eager_context.note_trace_paused(token)
    try:
        yield
    finally:
        eager_context.note_trace_resumed(token)
        _C.resume_trace(token)
