"""``ember.profiler``: per-node timings of graph function calls, as a timeline and a table.

While a profiling session records, every node that a graph function (``ember.function``) runs is timed,
on every thread, with its op, its output bytes and the source line that created it. Eager ops and
functions run eagerly (``ember.config.run_functions_eagerly(True)``) are not recorded.

    with ember.profiler.profile() as prof:
        f(x)
    print(prof.table(top=10))          # the slowest op types and nodes
    prof.save("/tmp/f.trace.json")     # open in chrome://tracing or https://ui.perfetto.dev

TensorFlow's API is here too: ``ember.profiler.experimental.start(logdir)`` / ``stop()``, the
``Profile(logdir)`` context manager and ``Trace(name)`` annotations. TensorFlow writes an XPlane protobuf
for TensorBoard; ember writes the timeline as Chrome-trace JSON at
``<logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json``.

The seeds' "run with RunOptions, get RunMetadata" is ``concrete_function.run_with_metadata(*args)``,
returning ``(outputs, metadata)``.

Sessions may nest and overlap; each sees every node that started while it recorded, including nodes run
meanwhile by other threads.
"""

import collections
import contextlib
import datetime
import os
import socket
import sys
import types

from ember import _C

__all__ = ["RunMetadata", "profile", "run_with_metadata", "experimental"]


class RunMetadata:
    """What a profiling session recorded: the node events of the calls made while it ran."""

    def __init__(self, profile=None):
        self._profile = profile
        self._events = None
        self.path = None  # where experimental.stop() saved the trace

    def _core(self):
        if self._profile is None:
            raise RuntimeError("ember.profiler: the session is still recording; read its results after the "
                               "`with` block")
        return self._profile

    @property
    def events(self):
        """One dict per event, by start time: kind ("node" or "span"), name (the node's), op, function,
        location ("file.py:42"), start_ns, end_ns, duration_ns, bytes (of the outputs), thread."""
        if self._events is None:
            self._events = self._core().events
        return self._events

    @property
    def start_ns(self):
        return self._core().start_ns

    @property
    def end_ns(self):
        return self._core().end_ns

    def chrome_trace(self):
        """The timeline as Chrome trace event format JSON (a str)."""
        return self._core().chrome_trace()

    def save(self, path):
        """Writes chrome_trace() to ``path`` (creating its directory) and returns ``path``."""
        path = os.fspath(path)
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self._core().save(path)
        return path

    def table(self, top=10):
        """A text table of the ``top`` slowest op types and nodes (count, total and mean µs, % of node
        time, output bytes)."""
        return self._core().table(int(top))

    def by_op(self):
        """Per op type, slowest first: dicts with name, count, total_ns, bytes."""
        return self._core().by_op()

    def by_node(self):
        """Per node, slowest first: dicts with name, op, function, location, count, total_ns, bytes."""
        return self._core().by_node()

    def __str__(self):
        return self.table() if self._profile is not None else "<RunMetadata: recording>"

    def __repr__(self):
        if self._profile is None:
            return "<ember.profiler.RunMetadata recording>"
        return f"<ember.profiler.RunMetadata {len(self.events)} events>"


@contextlib.contextmanager
def profile():
    """Records the nodes run inside the ``with`` block; yields a RunMetadata, filled when the block ends."""
    metadata = RunMetadata()
    collector = _C.ProfilerCollector()
    try:
        yield metadata
    finally:
        metadata._profile = collector.stop()


def run_with_metadata(fn, *args, **kwargs):
    """Calls ``fn(*args, **kwargs)`` under a profiling session; returns ``(outputs, RunMetadata)``."""
    with profile() as metadata:
        outputs = fn(*args, **kwargs)
    return outputs, metadata


def _caller_location(depth):
    frame = sys._getframe(depth + 1)
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


# ---- TensorFlow's tf.profiler.experimental ---------------------------------------------------------------

ProfilerOptions = collections.namedtuple(
    "ProfilerOptions", ["host_tracer_level", "python_tracer_level", "device_tracer_level", "delay_ms"],
    defaults=[2, 0, 1, None])
ProfilerOptions.__doc__ = "Accepted for TensorFlow compatibility; ember records node events whatever it says."

_global = {"logdir": None}


def _start(logdir, options=None):
    """Starts the process-wide profiling session; ``stop()`` writes its trace under ``logdir``.

    Raises ``ember.errors.AlreadyExistsError`` while another one runs."""
    _C.profiler_start_global()
    _global["logdir"] = os.fspath(logdir)


def _stop(save=True):
    """Stops the process-wide session and, when ``save``, writes Chrome-trace JSON (TensorFlow writes an
    XPlane protobuf) to ``<logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json``. Returns the
    RunMetadata (TensorFlow returns None). Raises ``ember.errors.UnavailableError`` when none runs."""
    metadata = RunMetadata(_C.profiler_stop_global())
    logdir, _global["logdir"] = _global["logdir"], None
    if save and logdir is not None:
        run = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
        metadata.path = metadata.save(
            os.path.join(logdir, "plugins", "profile", run, f"{socket.gethostname()}.trace.json"))
    return metadata


class _Profile:
    """``with Profile(logdir):`` — start(logdir) on entry, stop() on exit (TensorFlow's context manager)."""

    def __init__(self, logdir, options=None):
        self._logdir = logdir
        self._options = options
        self.metadata = None

    def __enter__(self):
        _start(self._logdir, self._options)
        return self

    def __exit__(self, *exc):
        self.metadata = _stop()
        return False


class _Trace:
    """``with Trace("train", step_num=3):`` marks a span on the timeline (when a session records).

    Keyword arguments are appended TensorFlow-style: ``train#step_num=3#``."""

    def __init__(self, name, **kwargs):
        if kwargs:
            name = f"{name}#{','.join(f'{k}={v}' for k, v in kwargs.items())}#"
        self._name = name
        self._start = None
        self._location = ""

    def __enter__(self):
        if _C.profiler_active():
            self._location = _caller_location(1)
            self._start = _C.profiler_now_ns()
        return self

    def __exit__(self, *exc):
        if self._start is not None:
            _C.profiler_record_span(self._name, self._location, self._start, _C.profiler_now_ns())
            self._start = None
        return False


experimental = types.ModuleType(
    __name__ + ".experimental", "TensorFlow's tf.profiler.experimental: start/stop, Profile, Trace.")
experimental.start = _start
experimental.stop = _stop
experimental.Profile = _Profile
experimental.Trace = _Trace
experimental.ProfilerOptions = ProfilerOptions
for _f in (_start, _stop):
    _f.__name__ = _f.__qualname__ = _f.__name__.lstrip("_")
    _f.__module__ = experimental.__name__
for _cls, _name in ((_Profile, "Profile"), (_Trace, "Trace")):
    _cls.__name__ = _cls.__qualname__ = _name
    _cls.__module__ = experimental.__name__
sys.modules[experimental.__name__] = experimental  # `from ember.profiler.experimental import Trace` works
del _f, _cls, _name
