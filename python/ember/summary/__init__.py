"""``ember.summary``: TensorBoard summaries, as ``tf.summary`` (docs/summary.md).

    writer = tf.summary.create_file_writer("/tmp/logs")
    with writer.as_default(step=0), tf.summary.record_if(True):
        tf.summary.scalar("loss", 0.5)                # eagerly, or inside an ember.function

Event files are TensorBoard's (TFRecord framing of Event protos, TensorFlow's field numbers). Each summary is
one stateful op, ``ContextWriteSummary``, that names no writer: when it runs it takes the default writer,
the record condition and (when none was given) the step of that moment, which this module hands to C++
(``_C.set_summary_context``) whenever they change. So a traced function writes to whichever writer is
default at each call and writes nothing under ``record_if(False)``, with no retrace (the seed's "resolved
at function invocation time"; TensorFlow 2.21 bakes both in when it traces).
"""

import contextlib
import threading
import time
import types

import numpy as np

from ember import _C

__all__ = ["SummaryWriter", "audio", "create_file_writer", "create_noop_writer", "experimental", "flush", "graph",
           "histogram", "image", "record_if", "scalar", "should_record_summaries", "text", "trace_export",
           "trace_off", "trace_on", "write"]

_NO_STEP_MESSAGE = ("No step set. Please specify one either through the `step` argument or through "
                    "tf.summary.experimental.set_step()")
_STEP_FROM_CONTEXT = -(2**63)  # ops/summary.h kSummaryStepFromContext
_RECORD_ALWAYS, _RECORD_NEVER, _RECORD_DEFERRED = 0, 1, 2
_KIND_TENSOR, _KIND_HISTOGRAM, _KIND_IMAGE, _KIND_AUDIO, _KIND_PAYLOAD = range(5)
_DEFAULT_BUCKET_COUNT = 30

_WriteSummary = _C.op("ContextWriteSummary")
_FlushSummary = _C.op("ContextFlushSummary")


class _State(threading.local):
    def __init__(self):
        self.writer = None
        self.conditions = []
        self.step = None


_state = _State()


def _install_trace_hook():
    from ember import polymorphic_function
    if _note_trace not in polymorphic_function.TRACE_HOOKS:
        polymorphic_function.TRACE_HOOKS.append(_note_trace)


def _push_context():
    """Hands the thread's writer, record condition and step to C++ (ops/summary.h)."""
    writer = _state.writer
    native = writer._native if isinstance(writer, _FileWriter) and not writer._closed else None
    step, has_step, step_variable = 0, False, 0
    value = _state.step
    if getattr(value, "_ember_variable", False):
        step_variable = value._id
    elif value is not None and not _is_symbolic(value):
        step, has_step = int(np.asarray(value)), True
    _C.set_summary_context(native, _record_mode(), has_step, step, step_variable)


def _is_symbolic(value):
    return bool(getattr(value, "_is_symbolic", False))


def _record_mode():
    if not _state.conditions:
        return _RECORD_ALWAYS
    condition = _state.conditions[-1]
    if callable(condition) or _is_symbolic(condition):
        return _RECORD_DEFERRED
    return _RECORD_ALWAYS if bool(np.asarray(condition)) else _RECORD_NEVER


def _condition_value():
    """The record condition as a Python bool, or a graph tensor while tracing."""
    if not _state.conditions:
        return True
    condition = _state.conditions[-1]
    if callable(condition):
        condition = condition()
    if _is_symbolic(condition):
        return condition
    return bool(np.asarray(condition))


# ---- writers ------------------------------------------------------------------------------------------


class SummaryWriter:
    """A summary writer (``tf.summary.SummaryWriter``): ``as_default``, ``set_as_default``, ``flush``,
    ``close``."""

    def set_as_default(self, step=None):
        """Makes this the default writer for the rest of the thread (and ``step`` its default step)."""
        _state.writer = self
        if step is not None:
            _state.step = step
        _push_context()

    @contextlib.contextmanager
    def as_default(self, step=None):
        """``with writer.as_default(step=None):`` the default writer (and step) inside; flushes on exit."""
        old_writer, old_step = _state.writer, _state.step
        _state.writer = self
        if step is not None:
            _state.step = step
        _push_context()
        try:
            yield self
        finally:
            _state.writer = old_writer
            if step is not None:
                _state.step = old_step
            _push_context()
            self.flush()

    def init(self):
        pass

    def flush(self):
        pass

    def close(self):
        pass


class _FileWriter(SummaryWriter):
    def __init__(self, logdir, max_queue, flush_millis, filename_suffix):
        self._native = _C.EventFileWriter.create(logdir, max_queue, flush_millis, filename_suffix)
        self._closed = False

    @property
    def _path(self):
        return self._native.path

    def flush(self):
        if not self._closed:
            self._native.flush()

    def close(self):
        if not self._closed:
            self._closed = True
            self._native.close()
            if _state.writer is self:
                _push_context()

    def _write_event(self, event):
        if self._closed:
            from ember import errors
            raise errors.FailedPreconditionError(None, None, f"the summary writer for {self._path} is closed")
        self._native.write_event(event.SerializeToString())


class _NoopWriter(SummaryWriter):
    pass


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None, name=None,
                       experimental_trackable=False, experimental_mesh=None):
    """A writer of TensorBoard event files in ``logdir`` (created if missing): events queue until more than
    ``max_queue`` (default 10) wait or ``flush_millis`` (default 120000) have passed; the file is named
    ``events.out.tfevents.<seconds>.<host>.<pid>.<n><filename_suffix>`` (suffix ``.v2`` by default)."""
    import os
    if _C.in_trace():
        raise RuntimeError("create_file_writer inside ember.function is not supported: create the writer "
                           "outside and make it default around the call")
    if logdir is None:
        return create_noop_writer()
    return _FileWriter(os.fspath(logdir), 10 if max_queue is None else int(max_queue),
                       120000 if flush_millis is None else int(flush_millis),
                       ".v2" if filename_suffix is None else str(filename_suffix))


def create_noop_writer():
    """A writer that writes nothing (``tf.summary.create_noop_writer``)."""
    return _NoopWriter()


def flush(writer=None, name=None):
    """Flushes ``writer`` or, by default, the default writer (inside a function: the one default when it
    runs)."""
    if writer is not None:
        if _C.in_trace():
            raise RuntimeError("flush(writer) inside ember.function: call flush() for the default writer")
        writer.flush()
        return None
    if _C.in_trace():
        _FlushSummary()
    elif _state.writer is not None:
        _state.writer.flush()
    return None


# ---- conditions and steps -----------------------------------------------------------------------------


@contextlib.contextmanager
def record_if(condition):
    """``with record_if(condition):`` summaries record only where ``condition`` (a Python bool, a tensor or
    a callable returning either) holds. Inside a traced function a bool or eager tensor condition is the
    one in effect when the function is called."""
    _state.conditions.append(condition)
    _push_context()
    try:
        yield
    finally:
        _state.conditions.pop()
        _push_context()


def should_record_summaries():
    """Whether summaries record here: a default writer (not a no-op one) and a true condition."""
    from ember.framework.tensor import constant
    if not isinstance(_state.writer, _FileWriter):
        return constant(False)
    value = _condition_value()
    return value if _is_symbolic(value) else constant(bool(value))


def _set_step(step):
    """Sets the default step of summaries written without one on this thread (``experimental.set_step``)."""
    _state.step = step
    _push_context()


def _get_step():
    return _state.step


# ---- the summary ops ----------------------------------------------------------------------------------


def _metadata(plugin_name, description=None, content=b""):
    from ember.framework import protos
    m = protos.message_class("SummaryMetadata")()
    m.plugin_data.plugin_name = plugin_name
    if content:
        m.plugin_data.content = content
    if description:
        m.summary_description = description
    return m.SerializeToString()


def _tag(name):
    from ember.name_scope import current_prefix
    return current_prefix() + name


def _write(name, tensor, step, metadata, kind=_KIND_TENSOR, param=0, sample_rate=0.0, payload=b""):
    """Runs (or stages) one ContextWriteSummary; returns whether it wrote (a bool tensor)."""
    from ember import dtypes
    from ember.framework.tensor import constant, convert_to_tensor
    from ember.ops.math_ops import cast
    tracing = _C.in_trace()
    if not tracing:
        # Eagerly the condition is known now: skip the op when nothing would be written.
        if not isinstance(_state.writer, _FileWriter) or _state.writer._closed or not _condition_value():
            return constant(False)
        if step is None and _state.step is None:
            raise ValueError(_NO_STEP_MESSAGE)
    if tensor is None:
        tensor = constant(0.0)
    condition = _condition_value() if tracing and _state.conditions else True
    if not _is_symbolic(condition):
        condition = constant(bool(condition))
    if step is None:
        step = constant(_STEP_FROM_CONTEXT, dtypes.int64)
    else:
        step = convert_to_tensor(step)
        if step.dtype != dtypes.int64:
            step = cast(step, dtypes.int64)
    # Protobuf bytes travel as hex: string attributes hold text (ops/summary.cc).
    return _WriteSummary(condition, step, tensor, _tag(name), bytes(metadata).hex(), int(kind), int(param),
                         float(sample_rate), bytes(payload).hex())


def scalar(name, data, step=None, description=None):
    """Writes a scalar (as float32) for the Scalars dashboard; returns whether it wrote."""
    from ember import dtypes
    from ember.framework.tensor import convert_to_tensor
    from ember.ops.math_ops import cast
    data = convert_to_tensor(data)
    if data.shape.rank is not None and data.shape.rank != 0:
        raise ValueError(f"Expected scalar shape, saw shape: {data.shape}.")
    if data.dtype != dtypes.float32:
        data = cast(data, dtypes.float32)
    return _write(name, data, step, _metadata("scalars", description))


def histogram(name, data, step=None, buckets=None, description=None):
    """Writes TensorBoard's histogram of ``data`` (``buckets`` equal-width buckets, 30 by default)."""
    from ember.framework.tensor import convert_to_tensor
    data = convert_to_tensor(data)
    count = _DEFAULT_BUCKET_COUNT if buckets is None else int(buckets)
    return _write(name, data, step, _metadata("histograms", description), _KIND_HISTOGRAM, count)


def image(name, data, step=None, max_outputs=3, description=None):
    """Writes up to ``max_outputs`` images of ``data`` ([k, h, w, c], c in 1..4; uint8, or floats in
    [0, 1]) as PNGs."""
    from ember.framework.tensor import convert_to_tensor
    data = convert_to_tensor(data)
    if data.shape.rank is not None and data.shape.rank != 4:
        raise ValueError(f"image data must be [k, h, w, c], got shape {data.shape}")
    return _write(name, data, step, _metadata("images", description), _KIND_IMAGE, int(max_outputs))


def audio(name, data, sample_rate, step=None, max_outputs=3, encoding=None, description=None):
    """Writes up to ``max_outputs`` clips of ``data`` ([k, t, c] float32 in [-1, 1]) as 16-bit WAV."""
    from ember import dtypes
    from ember.framework.tensor import convert_to_tensor
    from ember.ops.math_ops import cast
    if encoding is not None and encoding != "wav":
        raise ValueError(f"Unknown encoding: {encoding}")
    data = convert_to_tensor(data)
    if data.dtype != dtypes.float32:
        data = cast(data, dtypes.float32)
    if data.shape.rank is not None and data.shape.rank != 3:
        raise ValueError(f"audio data must be [k, t, c], got shape {data.shape}")
    if hasattr(sample_rate, "numpy"):
        if _is_symbolic(sample_rate):
            raise NotImplementedError("audio: sample_rate must be known while tracing")
        sample_rate = sample_rate.numpy()
    # AudioPluginData {encoding: WAV (11)}
    return _write(name, data, step, _metadata("audio", description, content=b"\x10\x0b"), _KIND_AUDIO,
                  int(max_outputs), float(sample_rate))


def _string_tensor_proto(data):
    from ember.framework import protos
    array = np.asarray(data, dtype=object)
    proto = protos.message_class("TensorProto")()
    proto.dtype = 7  # DT_STRING
    for d in array.shape:
        proto.tensor_shape.dim.add(size=d)
    for v in array.reshape(-1):
        proto.string_val.append(v.encode() if isinstance(v, str) else bytes(v))
    return proto.SerializeToString()


def text(name, data, step=None, description=None):
    """Writes text (a Python str, bytes or nested list or array of them) for the Text dashboard. ember has
    no string tensors: inside a function the text is a constant of the trace."""
    if _is_symbolic(data) or hasattr(data, "numpy"):
        raise TypeError("text: data must be a Python str, bytes or an array of them (ember has no string tensors)")
    return _write(name, None, step, _metadata("text", description), _KIND_PAYLOAD,
                  payload=_string_tensor_proto(data))


def write(tag, tensor, step=None, metadata=None, name=None):
    """Writes ``tensor`` under ``tag`` with ``metadata`` (a SummaryMetadata, its bytes, or None)."""
    from ember.framework.tensor import convert_to_tensor
    if metadata is None:
        metadata = b""
    elif not isinstance(metadata, (bytes, bytearray)):
        metadata = metadata.SerializeToString()
    if callable(tensor):
        tensor = tensor()
    if isinstance(tensor, (str, bytes)) or (isinstance(tensor, (list, tuple, np.ndarray)) and
                                            np.asarray(tensor).dtype.kind in "OSU"):
        return _write(tag, None, step, bytes(metadata), _KIND_PAYLOAD, payload=_string_tensor_proto(tensor))
    # tf.summary.write names the tag exactly (no name scope)
    return _write_exact(tag, convert_to_tensor(tensor), step, bytes(metadata))


def _write_exact(tag, tensor, step, metadata):
    from ember.name_scope import _local as scope_state
    saved = getattr(scope_state, "stack", None)
    scope_state.stack = []
    try:
        return _write(tag, tensor, step, metadata)
    finally:
        scope_state.stack = saved


def graph(graph_data):
    """Writes a graph (a GraphDef, or what has ``as_graph_def``) to the default writer, eagerly."""
    if _C.in_trace():
        raise ValueError("graph() cannot be invoked inside a graph context.")
    writer = _state.writer
    if not isinstance(writer, _FileWriter) or not _condition_value():
        return False
    graph_def = graph_data.as_graph_def() if hasattr(graph_data, "as_graph_def") else graph_data
    from ember.framework import protos
    event = protos.message_class("Event")(wall_time=time.time(), graph_def=graph_def.SerializeToString())
    writer._write_event(event)
    return True


# ---- tracing ------------------------------------------------------------------------------------------

_trace = {"on": False, "graph": False, "profiler": False, "functions": []}


def _note_trace(concrete):
    """Called for each function traced while trace_on(graph=True) is in effect."""
    if _trace["on"] and _trace["graph"]:
        _trace["functions"].append(concrete)


def trace_on(graph=True, profiler=False, profiler_outdir=None):
    """Starts recording the graphs of the functions traced from now on (and, with ``profiler``, a profile of
    the graph functions run, written by ember's profiler under ``profiler_outdir``)."""
    if _C.in_trace():
        return
    if _trace["on"]:
        import warnings
        warnings.warn("Cannot enable trace inside a trace: trace_on has already been called.")
        return
    _install_trace_hook()
    _trace.update(on=True, graph=bool(graph), profiler=bool(profiler), functions=[], outdir=profiler_outdir)
    if profiler:
        from ember import profiler as prof
        prof.experimental.start(profiler_outdir or ".")


def trace_export(name, step=None, profiler_outdir=None):
    """Writes the recorded graphs as one summary ``name`` (TensorBoard's run-metadata graph: a RunMetadata
    whose function_graphs hold each function's GraphDef), stops the profiler, and ends the trace."""
    if not _trace["on"]:
        raise ValueError("Must enable trace before export through tf.summary.trace_on.")
    if step is None:
        step = _state.step
        if step is None:
            raise ValueError(_NO_STEP_MESSAGE)
    try:
        from ember.framework import protos
        run_metadata = protos.message_class("RunMetadata")()
        for concrete in _trace["functions"]:
            run_metadata.function_graphs.add().pre_optimization_graph.CopyFrom(concrete.graph.as_graph_def())
        payload = _string_tensor_proto(run_metadata.SerializeToString())
        with record_if(True):
            _write_payload(name, step, payload)
    finally:
        trace_off()


def _write_payload(name, step, payload):
    from ember.name_scope import _local as scope_state
    saved = getattr(scope_state, "stack", None)
    scope_state.stack = []
    try:
        return _write(name, None, step, _metadata("graph_run_metadata_graph", content=b"1"), _KIND_PAYLOAD,
                      payload=payload)
    finally:
        scope_state.stack = saved


def trace_off():
    """Stops recording graphs (and the profiler) without writing."""
    was_profiling = _trace["on"] and _trace["profiler"]
    _trace.update(on=False, graph=False, profiler=False, functions=[])
    if was_profiling:
        from ember import profiler as prof
        prof.experimental.stop()


# ---- tf.summary.experimental --------------------------------------------------------------------------


@contextlib.contextmanager
def _summary_scope(name, default_name=None, values=None):
    from ember.name_scope import name_scope
    name = name or default_name
    with name_scope(name) as scope:
        yield _tag(""), scope


experimental = types.ModuleType(__name__ + ".experimental", "tf.summary.experimental: set_step, get_step, "
                                "summary_scope, write_raw_pb.")  # filled below
experimental.set_step = _set_step
experimental.get_step = _get_step
experimental.summary_scope = _summary_scope


def _write_raw_pb(tensor, step=None, name=None):
    """Writes serialized Summary protos (bytes, or a list of them) as events at ``step``, eagerly."""
    if _C.in_trace():
        raise NotImplementedError("write_raw_pb inside ember.function: ember has no string tensors")
    writer = _state.writer
    if not isinstance(writer, _FileWriter) or writer._closed or not _condition_value():
        return False
    if step is None:
        step = _state.step
        if step is None:
            raise ValueError(_NO_STEP_MESSAGE)
    from ember.framework import protos
    step = int(np.asarray(step.numpy() if hasattr(step, "numpy") else step))
    for raw in [tensor] if isinstance(tensor, (bytes, bytearray)) else list(tensor):
        event = protos.message_class("Event")(wall_time=time.time(), step=step)
        event.summary.ParseFromString(bytes(raw))
        writer._write_event(event)
    return True


experimental.write_raw_pb = _write_raw_pb
