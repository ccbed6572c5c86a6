"""Automatic differentiation: ``ember.GradientTape``, ``stop_gradient``, ``custom_gradient`` and
``recompute_grad`` (architecture.md §7). The tape itself is C++ (``ember._C.Tape``): ops record themselves
as they run, eagerly or while a function traces; this module is the TensorFlow-shaped front."""
import contextlib
import enum
import functools
import inspect

from ember import _C, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.util import nest

_StopGradient = _C.op("StopGradient")
_Identity = _C.op("Identity")
_ZerosLike = _C.op("ZerosLike")


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for a source the target does not depend on."""
    NONE = "none"
    ZERO = "zero"


def _is_variable(x):
    return getattr(x, "_ember_variable", False)


def _variable_by_id(variable_id):
    from ember import variables

    return variables._live_variables.get(variable_id)


def stop_gradient(input, name=None):  # noqa: A002 - TensorFlow's argument name
    """The value of ``input``, through which no gradient flows."""
    return _StopGradient(convert_to_tensor(input))


# The GradientTapes recording now, outermost first: Variable.sparse_read asks which of them watch its
# variable.
_recording_tapes = []


class GradientTape:
    """Records operations for automatic differentiation, like ``tf.GradientTape``.

    Tensors are recorded once watched (``tape.watch(x)``); trainable variables are watched when read
    (unless ``watch_accessed_variables=False``). Tapes nest: an outer tape records the inner tape's
    gradient computation, which gives higher-order derivatives."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._tape = _C.Tape(bool(persistent), bool(watch_accessed_variables))
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._recording = False
        self._paused = False
        self._used = False
        self._sparse_reads = []  # (variable id, flat indices, rows): see record_sparse_read
        self._trace = 0

    # ---- recording
    def __enter__(self):
        self._push()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._pop()

    def _push(self):
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to re-enter an already-active "
                             "tape.")
        if self._used and not self._persistent:
            self.reset()  # TensorFlow's takes a new tape then: nothing of the first recording is kept
        self._tape.push()
        self._recording = True
        self._trace = _C.trace_token()  # which trace (0: none) pushed it: see record_sparse_read
        _recording_tapes.append(self)

    def _pop(self):
        self._tape.pop()
        self._recording = False
        _recording_tapes.remove(self)

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stops recording: ops run inside are not differentiated."""
        if not self._recording:
            raise ValueError("Tape.stop_recording() called while the tape is not recording (outside its "
                             "`with` block).")
        self._tape.pause()
        self._paused = True
        try:
            yield
        finally:
            self._tape.resume()
            self._paused = False

    def reset(self):
        """Clears everything recorded so far (the tape keeps recording if it was)."""
        self._tape.reset()
        self._used = False
        self._sparse_reads = []

    def watch(self, tensor):
        """Ensures ``tensor`` (a tensor, a variable, or a nested structure of them) is traced."""
        if self._used and not self._persistent and not self._recording:
            # TensorFlow's tape is gone then (its watch fails on None); entering the tape again starts afresh.
            raise errors.FailedPreconditionError(
                None, None, "GradientTape.watch: this non-persistent tape has computed its gradient and released "
                "what it recorded; enter it again (`with tape:`) to record anew, or create it with persistent=True")
        for t in nest.flatten(tensor):
            if _is_variable(t):
                self._tape.watch_variable(t._id)
            elif isinstance(t, Tensor):
                self._tape.watch(t)
            else:
                raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, not tf.Tensor or "
                                 "tf.Variable or ExtensionType.")

    def watched_variables(self):
        """The variables watched, in the order they were first watched."""
        found = (_variable_by_id(i) for i in self._tape.watched_variables())
        return tuple(v for v in found if v is not None)

    # ---- differentiation
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(target)/d(sources) (the target's elements summed), with the structure of ``sources``."""
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of "
                               "gradients (or jacobians)")
        unconnected = UnconnectedGradients(unconnected_gradients)
        # A variable target stands for itself, as TensorFlow's (its handle): d v / d v is ones, and it is
        # connected to no other source.
        all_targets = nest.flatten(target)
        variable_targets = [(i, t) for i, t in enumerate(all_targets) if _is_variable(t)]
        flat_targets = [t if isinstance(t, Tensor) else convert_to_tensor(t) for t in all_targets
                        if not _is_variable(t)]
        flat_sources = nest.flatten(sources)
        keys = _source_keys(flat_sources, ValueError, "GradientTape.gradient: a source")
        flat_output_grads, variable_output_grads = [], [None] * len(variable_targets)
        if output_gradients is not None:
            given = nest.flatten(output_gradients)
            if len(given) != len(all_targets):
                raise ValueError(f"GradientTape.gradient: output_gradients has {len(given)} "
                                 f"element(s) but target has {len(all_targets)}")
            variable_indices = {i for i, _ in variable_targets}
            variable_output_grads = [None if given[i] is None else convert_to_tensor(given[i], dtype=t.dtype)
                                     for i, t in variable_targets]
            given = [g for i, g in enumerate(given) if i not in variable_indices]
            flat_output_grads = [None if g is None else convert_to_tensor(g, dtype=t.dtype)
                                 for g, t in zip(given, flat_targets)]
        self._used = True
        grads = self._gradient_with_sparse_reads(flat_targets, flat_output_grads, flat_sources, keys) \
            if flat_targets else [None] * len(flat_sources)
        if not self._persistent:
            self._sparse_reads = []
        for (_, v), seed in zip(variable_targets, variable_output_grads):
            for k, s in enumerate(flat_sources):
                if _is_variable(s) and s._id == v._id:
                    own = seed if seed is not None else _ones_for(v)
                    grads[k] = own if grads[k] is None else grads[k] + own
        if unconnected is UnconnectedGradients.ZERO:
            grads = [_zeros_for(s) if g is None else g for g, s in zip(grads, flat_sources)]
        return nest.pack_sequence_as(sources, grads)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """d(target[i...])/d(source[j...]): for each source a tensor of shape target.shape + source.shape."""
        from ember import jacobians

        return jacobians.jacobian(self, target, sources, unconnected_gradients, experimental_use_pfor)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example jacobians: target [b, ...] and source [b, ...] give [b, target... , source...]."""
        from ember import jacobians

        return jacobians.batch_jacobian(self, target, source, unconnected_gradients, experimental_use_pfor)

    def _gradient_with_sparse_reads(self, targets, output_gradients, sources, keys):
        """The C++ tape's gradients of ``sources`` (their ``keys``), where a variable read by sparse_read
        under this tape also gets the IndexedSlices of its rows' gradients (record_sparse_read)."""
        source_ids = {s._id for s in sources if _is_variable(s)}
        sparse_reads = [r for r in self._sparse_reads if r[0] in source_ids]
        rows = [r[2] for r in sparse_reads]
        grads = self._tape.gradient(targets, output_gradients, keys + rows)
        grads, row_grads = grads[:len(sources)], grads[len(sources):]
        if sparse_reads:
            _add_sparse_gradients(sources, grads, sparse_reads, row_grads)
        return grads

    def _gradient_again(self, targets, sources, output_gradients):
        """A gradient call for the jacobian loop: allowed repeatedly on any tape. Dense: the jacobian of a
        variable read by sparse_read has the variable's full shape."""
        keys = [s._id if _is_variable(s) else s for s in sources]
        self._tape.allow_reuse()
        grads = self._gradient_with_sparse_reads(list(targets), list(output_gradients), list(sources), keys)
        return [g if g is None or isinstance(g, Tensor) else convert_to_tensor(g) for g in grads]


def record_sparse_read(variable, indices, gather):
    """``Variable.sparse_read``: ``gather(value, indices)``. Under a tape that watches the variable and was
    entered in the same trace (or, eagerly, outside any), the variable's gradient through these rows is an
    IndexedSlices, as TensorFlow's ResourceGather gives (Note [Sparse reads])."""
    from ember.variables import Variable

    value = Variable.read_value(variable)  # a read: tapes that watch accessed variables now watch this one
    if not _recording_tapes:
        return gather(value, indices)
    trace = _C.trace_token()
    tapes = [t for t in _recording_tapes
             if not t._paused and t._trace == trace and variable._id in t._tape.watched_variables()]
    if not tapes:
        return gather(value, indices)
    from ember.ops.array_ops import reshape

    indices = convert_to_tensor(indices)
    for tape in tapes:
        tape._tape.pause()
    try:
        rows = gather(value, indices)
    finally:
        for tape in tapes:
            tape._tape.resume()
    flat_indices = reshape(indices, [-1])
    for tape in tapes:
        tape._tape.watch(rows)
        tape._sparse_reads.append((variable._id, flat_indices, rows))
    return rows


# Note [Sparse reads]
# TensorFlow's gradient of ResourceGather (a variable's sparse_read, which tf.gather and embedding_lookup
# of a variable are) is an IndexedSlices: the rows' gradients and their indices, never a dense
# [vocabulary, dim] tensor. ember's C++ tape gives dense gradients, so a sparse read is recorded in two
# parts. Each tape that watches the variable and was entered in this trace (its `_trace`) does not record
# the gather: it watches the rows instead, as a source of their own, and gradient() makes the rows'
# gradient an IndexedSlices for the variable (_add_sparse_gradients). Every other tape records the gather
# as usual, and so does the traced graph, so a tape outside a function, differentiating a call of it, or
# tf.gradients, sees an ordinary gather and gets a dense gradient. Tapes of an enclosing trace are left out
# because the rows are the inner trace's tensors. A gradient of that gradient on an outer tape that also
# watches the variable goes through the rows the same way.


def _add_sparse_gradients(sources, grads, sparse_reads, row_grads):
    """Each variable source read by sparse_read gets the IndexedSlices of its rows' gradients (several
    reads concatenated), added to the dense gradient of its other reads where it has one."""
    from ember.framework.indexed_slices import IndexedSlices
    from ember.ops.array_ops import concat, reshape, shape

    for k, source in enumerate(sources):
        if not _is_variable(source):
            continue
        # The last read first, in the order TensorFlow's backprop aggregates them.
        parts = [(indices, g) for (vid, indices, _), g in zip(reversed(sparse_reads), reversed(row_grads))
                 if vid == source._id and g is not None]
        if not parts:
            continue
        dense_shape = shape(source.read_value())
        row_shape = concat([[-1], dense_shape[1:]], 0)  # rows of indices of any rank, flattened
        values = [reshape(g, row_shape) for _, g in parts]
        indices = [i for i, _ in parts]
        slices = IndexedSlices(values[0] if len(values) == 1 else concat(values, 0),
                               indices[0] if len(indices) == 1 else concat(indices, 0), dense_shape)
        grads[k] = slices if grads[k] is None else grads[k] + convert_to_tensor(slices)


def _source_keys(sources, error, what):
    """What the C++ tape takes for each source: a variable's id, or the tensor; else ``error`` naming
    ``what``."""
    keys = []
    for s in sources:
        if _is_variable(s):
            keys.append(s._id)
        elif isinstance(s, Tensor):
            keys.append(s)
        else:
            raise error(f"{what} must be a Tensor or a Variable, got {type(s).__name__} {s!r}")
    return keys


def _ones_for(variable):
    from ember.ops.array_ops import ones

    return ones(variable.shape, variable.dtype)


def _zeros_for(source):
    if _is_variable(source):
        from ember.ops.array_ops import zeros

        return zeros(source.shape, source.dtype)
    return _ZerosLike(source)


# ---- custom gradients


def _accepts_variables(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return "variables" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def custom_gradient(f=None):
    """Decorates ``f(*x) -> (y, grad_fn)`` so that the gradient of ``y`` is ``grad_fn(*dy)`` rather than
    the gradient of the ops ``f`` ran. If ``f`` reads variables, ``grad_fn(*dy, variables=...)`` returns
    ``(input_grads, variable_grads)``, as in TensorFlow."""
    if f is None:
        return custom_gradient
    return _custom_gradient(f, differs_from_ordinary=True)


def _custom_gradient(f, differs_from_ordinary):
    """``differs_from_ordinary=False`` (recompute_grad): the custom gradient equals the ops' own, so a
    function whose trace lost it may still be differentiated from outside."""

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        # While tracing, mark the nodes this call adds (FunctionGraph::CustomGradientRegion). The graph
        # cannot carry grad_fn: differentiating the function from outside reruns f there, with a tape
        # recording, on the replay's values; tf.gradients in this same trace instead records one node over
        # the region whose backward is the grad_fn kept here, as TensorFlow's graph-mode custom_gradient.
        first = _C.trace_num_nodes() if differs_from_ordinary else -1
        result, backward = _record_or_run(f, args, kwargs, keep_backward=first >= 0)
        if first >= 0:
            arg_tensors = [a for a in nest.flatten(args) if isinstance(a, Tensor)]
            out_tensors = [r for r in nest.flatten(result) if isinstance(r, Tensor)]

            def replay(tensors):
                if out_tensors and _C.trace_owns(out_tensors[0]):
                    return _record_traced_region(tensors, out_tensors, backward)
                it = iter(tensors)
                new_args = nest.pack_sequence_as(
                    args, [next(it) if isinstance(a, Tensor) else a for a in nest.flatten(args)])
                again = decorated(*new_args, **kwargs)
                return [r for r in nest.flatten(again) if isinstance(r, Tensor)]

            _C.note_custom_gradient_region(first, _C.trace_num_nodes(), arg_tensors, out_tensors,
                                           getattr(f, "__qualname__", repr(f)), replay)
        return result

    return decorated


def _record_or_run(f, args, kwargs, keep_backward):
    """Runs f; when a tape records, records one node whose backward is f's grad_fn. Returns the result and,
    where it was recorded or ``keep_backward`` asks for it, that backward (else None)."""
    inputs = [a for a in nest.flatten(args) if isinstance(a, Tensor)]
    if not _C.recording_active():
        if not keep_backward:
            result, _ = f(*args, **kwargs)
            return result, None
        first = _C.trace_num_nodes()
        result, grad_fn = f(*args, **kwargs)
        # Traced with nothing recording: the variables f read are those its nodes read.
        found = (_variable_by_id(i) for i in _C.trace_resources_read(first, _C.trace_num_nodes()))
        variables = [v for v in found if v is not None and v.trainable]
        return result, _custom_backward(f, grad_fn, inputs, variables)
    token = _C.pause_recording()
    reads = _C.Tape(False, True)  # learns which variables f reads
    reads.push()
    try:
        try:
            result, grad_fn = f(*args, **kwargs)
        finally:
            reads.pop()
        # Fresh tensors (nothing recorded them) become the outputs of the custom node.
        outputs = [_Identity(r) if isinstance(r, Tensor) else r for r in nest.flatten(result)]
    finally:
        _C.resume_recording(token)
    variables = [v for v in (_variable_by_id(i) for i in reads.watched_variables()) if v is not None]
    backward = _custom_backward(f, grad_fn, inputs, variables)
    out_tensors = [o for o in outputs if isinstance(o, Tensor)]
    _C.record_custom(inputs, [v._id for v in variables], out_tensors, backward)
    return nest.pack_sequence_as(result, outputs), backward


def _custom_backward(f, grad_fn, inputs, variables):
    """The backward of a custom node: output gradients to the gradients of ``inputs`` then ``variables``."""
    if variables and not _accepts_variables(grad_fn):
        raise TypeError("If using @custom_gradient with a function that uses variables, then grad_fn must "
                        "accept a keyword argument 'variables'.")

    def backward(output_grads):
        if variables:
            input_grads, variable_grads = grad_fn(*output_grads, variables=variables)
        else:
            input_grads, variable_grads = grad_fn(*output_grads), []
        input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
        if len(input_grads) != len(inputs):
            raise ValueError(f"custom_gradient: grad_fn returned {len(input_grads)} gradient(s) for "
                             f"{len(inputs)} tensor input(s)")
        grads = [None if g is None else convert_to_tensor(g) for g in input_grads]
        grads += [None if g is None else convert_to_tensor(g) for g in variable_grads]
        return grads

    backward.__name__ = getattr(f, "__name__", "custom_gradient")  # errors name the decorated function
    backward.variables = variables
    return backward


def _record_traced_region(tensors, out_tensors, backward):
    """tf.gradients through a custom_gradient region of the trace it is in: one node over the region's
    inputs (``tensors``, as tf.gradients' tape sees them) and the variables f read, whose outputs stand
    for the region's; nothing of f runs again."""
    token = _C.pause_recording()
    try:
        outputs = [_Identity(o) for o in out_tensors]
    finally:
        _C.resume_recording(token)
    _C.record_custom(list(tensors), [v._id for v in backward.variables], outputs, backward)
    return outputs


def recompute_grad(f):
    """Runs ``f`` without keeping its intermediates; the backward pass recomputes them."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        def inner(*inputs):
            result = f(*inputs, **kwargs)

            def grad_fn(*dresult, variables=None):
                watched = [a for a in inputs if isinstance(a, Tensor)]
                with GradientTape(watch_accessed_variables=True) as tape:
                    tape.watch(watched)
                    recomputed = f(*inputs, **kwargs)
                sources = watched + list(variables or [])
                grads = tape.gradient(nest.flatten(recomputed), sources, output_gradients=list(dresult))
                if variables is None:  # f read no variable: custom_gradient takes the inputs' gradients alone
                    return grads[:len(watched)]
                return grads[:len(watched)], grads[len(watched):]

            return result, grad_fn

        return _custom_gradient(inner, differs_from_ordinary=False)(*args)

    return wrapper

