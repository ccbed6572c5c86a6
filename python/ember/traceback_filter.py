"""Hides ember's own frames from the tracebacks of uncaught exceptions (style.md rule 5), so an error
points at the user's line; ``EMBER_TRACEBACK_FILTERING=off`` shows everything."""

import os
import sys
import types

# The one definition of "ember's own code": the C++ side (source locations of graph nodes) uses it too.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _is_ember_frame(tb):
    return tb.tb_frame.f_code.co_filename.startswith(PACKAGE_DIR)


def filter_traceback(tb):
    """The traceback without ember's frames (unchanged if that would leave nothing)."""
    kept = []
    while tb is not None:
        if not _is_ember_frame(tb):
            kept.append(tb)
        tb = tb.tb_next
    if not kept:
        return None
    filtered = None
    for frame_tb in reversed(kept):
        filtered = types.TracebackType(filtered, frame_tb.tb_frame, frame_tb.tb_lasti, frame_tb.tb_lineno)
    return filtered


_enabled_by_call = None  # tf.debugging.enable/disable_traceback_filtering; overrides the environment


def enabled():
    if _enabled_by_call is not None:
        return _enabled_by_call
    return os.environ.get("EMBER_TRACEBACK_FILTERING", "on").lower() not in ("off", "0", "false", "no")


def set_enabled(on):
    global _enabled_by_call
    _enabled_by_call = bool(on)


def _filter_chain(exc, seen):
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if exc.__traceback__ is not None:
            filtered = filter_traceback(exc.__traceback__)
            if filtered is not None:
                exc.__traceback__ = filtered
        _filter_chain(exc.__cause__, seen)
        exc = exc.__context__


def _make_hook(previous):
    def hook(exc_type, exc, tb):
        if enabled() and exc is not None:
            filtered = filter_traceback(tb) if tb is not None else None
            _filter_chain(exc, set())
            tb = filtered if filtered is not None else tb
        previous(exc_type, exc, tb)

    hook._ember_filter = True
    return hook


def install():
    if not getattr(sys.excepthook, "_ember_filter", False):
        sys.excepthook = _make_hook(sys.excepthook)
