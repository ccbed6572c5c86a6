"""``GradientTape.jacobian`` and ``batch_jacobian``: one backward pass per element of the target, each
seeded with a one-hot output gradient, stacked into target.shape + source.shape."""
import numpy as np

from ember import _C
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.util import nest

_Pack = _C.op("Pack")
_Reshape = _C.op("Reshape")


def _static_shape(t, what):
    dims = t.shape.as_list() if t.shape.rank is not None else None
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"{what}: the shape {t.shape} must be fully known")
    return dims


def _source_shape(s):
    return list(s.shape.as_list())


def _rows(tape, target, flat_sources):
    """For each element i of target: the gradients of target[i] w.r.t. each source (None if unconnected)."""
    dims = _static_shape(target, "GradientTape.jacobian target")
    n = int(np.prod(dims)) if dims else 1
    dtype = target.dtype.as_numpy_dtype
    rows = []
    with _no_recording(tape):
        for i in range(n):
            seed = np.zeros(n, dtype=dtype)
            seed[i] = 1
            seed_tensor = convert_to_tensor(seed.reshape(dims))
            rows.append(tape._gradient_again([target], flat_sources, [seed_tensor]))
    return dims, n, rows


class _no_recording:
    """The jacobian's own backward passes are not recorded by the tape being differentiated."""

    def __init__(self, tape):
        self._tape = tape

    def __enter__(self):
        self._tape._tape.pause()

    def __exit__(self, *exc):
        self._tape._tape.resume()


def jacobian(tape, target, sources, unconnected_gradients, use_pfor):
    from ember.backprop import UnconnectedGradients, _zeros_for as _zeros

    target = target if isinstance(target, Tensor) else convert_to_tensor(target)
    flat_sources = nest.flatten(sources)
    dims, n, rows = _rows(tape, target, flat_sources)
    results = []
    for j, source in enumerate(flat_sources):
        column = [row[j] for row in rows]
        if all(g is None for g in column) and UnconnectedGradients(unconnected_gradients) is UnconnectedGradients.NONE:
            results.append(None)
            continue
        column = [_zeros(source) if g is None else g for g in column]
        stacked = _Pack(column, 0)
        results.append(_Reshape(stacked, dims + _source_shape(source)))
    tape._used = True
    return nest.pack_sequence_as(sources, results)


def batch_jacobian(tape, target, source, unconnected_gradients, use_pfor):
    """target [b, y...], source [b, x...] -> [b, y..., x...], assuming example i of the target depends only
    on example i of the source (as TensorFlow does)."""
    from ember.backprop import UnconnectedGradients, _zeros_for as _zeros

    target = target if isinstance(target, Tensor) else convert_to_tensor(target)
    tdims = _static_shape(target, "GradientTape.batch_jacobian target")
    sdims = _source_shape(source)
    if not tdims or not sdims or tdims[0] != sdims[0]:
        raise ValueError(f"GradientTape.batch_jacobian: the target {target.shape} and the source "
                         f"{source.shape} must have the same first (batch) dimension")
    batch = tdims[0]
    per_example = int(np.prod(tdims[1:])) if len(tdims) > 1 else 1
    dtype = target.dtype.as_numpy_dtype
    rows = []
    with _no_recording(tape):
        for k in range(per_example):
            # One backward pass gives element k of every example at once (examples are independent).
            seed = np.zeros((batch, per_example), dtype=dtype)
            seed[:, k] = 1
            rows.append(tape._gradient_again([target], [source], [convert_to_tensor(seed.reshape(tdims))])[0])
    tape._used = True
    if all(g is None for g in rows):
        if UnconnectedGradients(unconnected_gradients) is UnconnectedGradients.NONE:
            return None
        rows = [_zeros(source) for _ in rows]
    rows = [_zeros(source) if g is None else g for g in rows]
    stacked = _Pack(rows, 1)  # [b, per_example, x...]
    return _Reshape(stacked, [batch] + tdims[1:] + sdims[1:])
