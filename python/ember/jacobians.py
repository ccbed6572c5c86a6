"""``GradientTape.jacobian`` and ``batch_jacobian``.

With ``experimental_use_pfor=True`` (the default, as in TensorFlow) the backward pass is traced once as a
function of its seed and run for all one-hot seeds at once (pfor.py, Note [Vectorising a backward
graph]). Where that graph has an op without a batching rule, the backward pass cannot be traced, or
another tape is recording, the jacobian falls back to the loop that ``experimental_use_pfor=False`` asks
for: one backward pass per element of the target, each seeded with a one-hot output gradient. Inside a
function traced with unknown dimensions the seeds are built in the graph (Note [Batching with unknown
dimensions] in pfor.py); a target whose size is unknown while tracing has no loop to fall back to (it
would need control flow in the graph), so there an unbatchable backward pass is an error.

``stats`` counts what happened, for tests and for curious users: ``vectorized`` (jacobians computed by
one vectorised pass), ``fallback`` (vectorisation attempted but the loop ran; ``last_fallback`` says
why), ``backward_passes`` (backward passes run: one per traced graph, one per loop iteration).
"""
import collections

import numpy as np

from ember import _C, pfor
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.util import nest

_Pack = _C.op("Pack")
_Reshape = _C.op("Reshape")
_Transpose = _C.op("Transpose")

stats = collections.Counter()
last_fallback = None  # why the latest fallback happened (pfor.Unbatchable's message)


def _static_shape(t, what):
    dims = t.shape.as_list() if t.shape.rank is not None else None
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"{what}: the shape {t.shape} must be fully known")
    return dims


def _source_shape(s):
    return list(s.shape.as_list())


def _result_shape(dims, source):
    """dims + the source's shape: a list where the source's shape is known, else computed in the graph."""
    sdims = _source_shape(source)
    if all(d is not None for d in sdims):
        return dims + sdims
    from ember.ops import array_ops

    return array_ops.concat([convert_to_tensor(dims, dtype="int32"), array_ops.shape(source)], 0)


class _no_recording:
    """The jacobian's own backward passes are not recorded by the tape being differentiated."""

    def __init__(self, tape):
        self._tape = tape

    def __enter__(self):
        self._tape._tape.pause()

    def __exit__(self, *exc):
        self._tape._tape.resume()


def _one_hot_seeds(count, dims, dtype, repeat=1):
    """count seeds, seed k one-hot at element k of each of `repeat` blocks: [count] + dims."""
    eye = np.eye(count, dtype=dtype)
    return convert_to_tensor(np.tile(eye[:, None, :], (1, repeat, 1)).reshape([count] + dims))


def _gradients(tape, target, sources, seeds, use_pfor):
    """For each source, the gradients for every seed stacked on a leading dimension (None if unconnected
    for all seeds). Vectorised if asked for and possible, else one backward pass per seed."""
    global last_fallback
    with _no_recording(tape):
        if use_pfor:
            try:
                grads = pfor.vectorized_gradients(tape, target, sources, seeds)
                stats["vectorized"] += 1
                stats["backward_passes"] += 1
                return grads
            except pfor.Unbatchable as e:
                stats["fallback"] += 1
                last_fallback = str(e)
        count = seeds.shape.as_list()[0]
        if count is None:
            raise ValueError("GradientTape.jacobian: the target's size is known only when the function runs, so "
                             "the per-element loop cannot be built; the vectorised path could not be used: "
                             f"{last_fallback if use_pfor else 'experimental_use_pfor=False'}")
        rows = []
        for k in range(count):
            rows.append(tape._gradient_again([target], sources, [seeds[k]]))
            stats["backward_passes"] += 1
    stacked = []
    for j, source in enumerate(sources):
        column = [row[j] for row in rows]
        if all(g is None for g in column):
            stacked.append(None)
            continue
        stacked.append(_Pack([_zeros_for(source) if g is None else g for g in column], 0))
    return stacked


def _zeros_for(source):
    from ember.backprop import _zeros_for as zeros

    return zeros(source)


def _unconnected_as_zeros(unconnected_gradients):
    from ember.backprop import UnconnectedGradients

    return UnconnectedGradients(unconnected_gradients) is UnconnectedGradients.ZERO


def _dynamic_one_hot_seeds(count, shape, dtype):
    """count seeds (a scalar tensor), seed k one-hot at element k: [count] + shape (an int vector tensor)."""
    from ember.ops import array_ops

    index = array_ops.range(count)
    eye = _C.op("Cast")(_C.op("Equal")(array_ops.reshape(index, [-1, 1]), index), dtype)
    return array_ops.reshape(eye, array_ops.concat([array_ops.reshape(count, [1]), shape], 0))


def _dynamic_jacobian(tape, target, flat_sources, sources, unconnected_gradients, use_pfor):
    """jacobian inside a function traced with unknown dimensions in the target: the number of seeds is the
    target's size at run time, so only the vectorised path can run (pfor.py, Note [Batching with unknown
    dimensions]); the per-element loop would need that size while tracing."""
    from ember.ops import array_ops

    if target.shape.rank is None:
        raise ValueError(f"GradientTape.jacobian target: the rank of {target.shape} must be known")
    target_shape = array_ops.shape(target)
    seeds = _dynamic_one_hot_seeds(array_ops.size(target), target_shape, target.dtype)
    grads = _gradients(tape, target, flat_sources, seeds, use_pfor)
    tape._used = True
    results = []
    for source, g in zip(flat_sources, grads):
        shape = array_ops.concat([target_shape, array_ops.shape(source)], 0)
        if g is None:
            results.append(array_ops.zeros(shape, source.dtype)
                           if _unconnected_as_zeros(unconnected_gradients) else None)
            continue
        results.append(array_ops.reshape(g, shape))
    return nest.pack_sequence_as(sources, results)


def jacobian(tape, target, sources, unconnected_gradients, use_pfor):
    """d(target[i...])/d(source[j...]): for each source, target.shape + source.shape."""
    target = target if isinstance(target, Tensor) else convert_to_tensor(target)
    flat_sources = nest.flatten(sources)
    if target.shape.rank is None or any(d is None for d in target.shape.as_list()):
        return _dynamic_jacobian(tape, target, flat_sources, sources, unconnected_gradients, use_pfor)
    dims = _static_shape(target, "GradientTape.jacobian target")
    n = int(np.prod(dims)) if dims else 1
    seeds = _one_hot_seeds(n, dims, target.dtype.as_numpy_dtype)
    grads = _gradients(tape, target, flat_sources, seeds, use_pfor)
    tape._used = True
    results = []
    for source, g in zip(flat_sources, grads):
        shape = _result_shape(dims, source)
        if g is None:
            if not _unconnected_as_zeros(unconnected_gradients):
                results.append(None)
                continue
            from ember.ops.array_ops import zeros

            results.append(zeros(shape, source.dtype))
            continue
        results.append(_Reshape(g, shape))
    return nest.pack_sequence_as(sources, results)


def batch_jacobian(tape, target, source, unconnected_gradients, use_pfor):
    """target [b, y...], source [b, x...] -> [b, y..., x...], assuming example i of the target depends only
    on example i of the source (as TensorFlow does): seed k is one-hot at element k of every example, so
    one backward pass gives element k's row for all examples."""
    target = target if isinstance(target, Tensor) else convert_to_tensor(target)
    if target.shape.rank is not None and target.shape.rank > 0 and target.shape[0] is None:
        return _dynamic_batch_jacobian(tape, target, source, unconnected_gradients, use_pfor)
    tdims = _static_shape(target, "GradientTape.batch_jacobian target")
    sdims = _source_shape(source)
    if not tdims or not sdims or tdims[0] != sdims[0]:
        raise ValueError(f"GradientTape.batch_jacobian: the target {target.shape} and the source "
                         f"{source.shape} must have the same first (batch) dimension")
    batch = tdims[0]
    per_example = int(np.prod(tdims[1:])) if len(tdims) > 1 else 1
    seeds = _one_hot_seeds(per_example, tdims, target.dtype.as_numpy_dtype, repeat=batch)
    (g,) = _gradients(tape, target, [source], seeds, use_pfor)  # [per_example, b, x...]
    tape._used = True
    if g is None:
        # TensorFlow's batch_jacobian gives zeros for an unconnected source whatever unconnected_gradients
        # says (its jacobian gives None): followed, since code indexes the result.
        from ember.ops.array_ops import zeros

        return zeros([batch] + tdims[1:] + sdims[1:], source.dtype)
    g = _Transpose(g, [1, 0] + list(range(2, len(sdims) + 1)))  # [b, per_example, x...]
    return _Reshape(g, [batch] + tdims[1:] + sdims[1:])


def _dynamic_batch_jacobian(tape, target, source, unconnected_gradients, use_pfor):
    """batch_jacobian inside a function traced with an unknown batch size: one backward pass per
    per-example element (each seeded with that element one-hot in every example, the batch taken from the
    target's shape at run time), a loop of known length where the per-example size is known, and only the
    vectorised pass where it is not (Note [Batching with unknown dimensions] in pfor.py)."""
    from ember.ops import array_ops

    tdims, sdims = target.shape.as_list(), source.shape.as_list()
    if sdims is None or len(sdims) < 1:
        raise ValueError(f"GradientTape.batch_jacobian: the source {source.shape} must have a known rank of at "
                         "least 1")
    target_shape = array_ops.shape(target)
    if all(d is not None for d in tdims[1:]):
        per_example = int(np.prod(tdims[1:])) if len(tdims) > 1 else 1
        eye = np.eye(per_example, dtype=target.dtype.as_numpy_dtype).reshape([per_example, 1] + tdims[1:])
        seeds = array_ops.broadcast_to(convert_to_tensor(eye), [per_example, target_shape[0]] + tdims[1:])
    else:
        inner = target_shape[1:]
        per_example = _C.op("Prod")(inner, [0], False)
        eye = _dynamic_one_hot_seeds(per_example, array_ops.concat([[1], inner], 0), target.dtype)
        seeds = array_ops.broadcast_to(eye, array_ops.concat([array_ops.reshape(per_example, [1]), target_shape], 0))
    (g,) = _gradients(tape, target, [source], seeds, use_pfor)  # [per_example, b, x...]
    tape._used = True
    shape = array_ops.concat([target_shape, array_ops.shape(source)[1:]], 0)
    if g is None:  # zeros whatever unconnected_gradients says, as TensorFlow's (see batch_jacobian)
        return array_ops.zeros(shape, source.dtype)
    g = _Transpose(g, [1, 0] + list(range(2, len(sdims) + 1)))  # [b, per_example, x...]
    return array_ops.reshape(g, shape)
