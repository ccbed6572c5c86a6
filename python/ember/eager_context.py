"""Whether code runs eagerly: ``tf.executing_eagerly`` and ``tf.inside_function``, as TensorFlow 2 answers.

``executing_eagerly()`` is False exactly while a function traces (and True inside ``init_scope``, which
pauses the trace, and inside functions run eagerly by ``tf.config.run_functions_eagerly(True)``).
``inside_function()`` is True while any function traces, ``init_scope`` or not: TensorFlow answers it from the
graph being built, which ``init_scope`` does not leave.
"""

import threading

from ember import _C

_paused = threading.local()


def executing_eagerly():
    return not _C.in_trace()


def inside_function():
    return _C.in_trace() or getattr(_paused, "traces", 0) > 0


def note_trace_paused(token):
    """Called by init_scope with the token of the trace it paused (0: none was running)."""
    if token:
        _paused.traces = getattr(_paused, "traces", 0) + 1


def note_trace_resumed(token):
    if token:
        _paused.traces -= 1
