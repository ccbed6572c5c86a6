"""Element structures of tf.data: nested tuples, namedtuples and dicts of tensors, described by nested
TensorSpecs (``element_spec``). As in TensorFlow's tf.data, a Python list is a value (converted to one
tensor), not a structure. Datasets pass elements around flat (a tuple of tensors, in ``flatten`` order:
dict values by sorted key) and pack them back only at the user's boundary."""

import numpy as np

from ember import errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_structure(x):
    return isinstance(x, (tuple, dict))


def flatten(structure):
    out = []
    _flatten_into(structure, out)
    return out


def _flatten_into(x, out):
    if isinstance(x, dict):
        for k in sorted(x):
            _flatten_into(x[k], out)
    elif isinstance(x, tuple):
        for v in x:
            _flatten_into(v, out)
    else:
        out.append(x)


def pack(structure, flat):
    it = iter(flat)
    return _pack(structure, it)


def _pack(x, it):
    if isinstance(x, dict):
        packed = {k: _pack(x[k], it) for k in sorted(x)}
        return type(x)((k, packed[k]) for k in x) if type(x) is not dict else {k: packed[k] for k in x}
    if _is_namedtuple(x):
        return type(x)(*[_pack(v, it) for v in x])
    if isinstance(x, tuple):
        return tuple(_pack(v, it) for v in x)
    return next(it)


def map_structure(fn, structure):
    return pack(structure, [fn(v) for v in flatten(structure)])


def same_structure(a, b):
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b)
                and all(same_structure(a[k], b[k]) for k in a))
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(same_structure(x, y) for x, y in zip(a, b)))
    return True


def to_tensor(value, what, dtype=None):
    """A leaf as a tensor; TypeError naming ``what`` for a value no tensor can hold."""
    if isinstance(value, Tensor) and (dtype is None or value.dtype == dtype):
        return value
    if isinstance(value, str) or (isinstance(value, np.ndarray) and value.dtype.kind in "USO"):
        raise TypeError(f"{what}: ember has no string tensors; got {value!r}")
    try:
        return convert_to_tensor(value, dtype=dtype)
    except (TypeError, ValueError, errors.OpError) as e:
        try:
            kind = np.asarray(value).dtype.kind
        except Exception:  # noqa: BLE001 - only for a better message
            kind = None
        if kind in ("U", "S"):
            raise TypeError(f"{what}: ember has no string tensors; got {value!r}") from None
        raise TypeError(f"{what}: expected a value convertible to a tensor, got {value!r} "
                        f"({type(value).__name__}): {e}") from None


def normalize(value, what):
    """``value`` with every leaf converted to a tensor (lists are leaves)."""
    if value is None:
        raise TypeError(f"{what}: expected tensors or a nested structure of tensors, got None")
    return map_structure(lambda v: to_tensor(v, what), value)


def spec_of(t):
    return TensorSpec(t.shape, t.dtype)


def specs_of(structure):
    return map_structure(spec_of, structure)


def unknown_batch(spec, batch=None):
    """``spec`` with a new first dimension (``batch``, or unknown)."""
    dims = spec.shape.as_list() if spec.shape.rank is not None else None
    return TensorSpec(TensorShape(None if dims is None else [batch] + dims), spec.dtype)


def drop_first(spec, what):
    if spec.shape.rank is not None and spec.shape.rank == 0:
        raise ValueError(f"{what}: Unbatching a tensor is only supported for rank >= 1")
    if spec.shape.rank is None:
        return TensorSpec(TensorShape(None), spec.dtype)
    return TensorSpec(TensorShape(spec.shape.as_list()[1:]), spec.dtype)


def most_specific_compatible(a, b, what):
    """The spec both ``a`` and ``b`` fit (concatenate, cond branches); TypeError when the structure or a
    dtype differs, as TensorFlow's "Incompatible dataset elements"."""
    if not same_structure(a, b):
        raise TypeError(f"{what}: Incompatible dataset elements:\n  {a} vs.\n  {b}")
    fa, fb = flatten(a), flatten(b)
    out = []
    for x, y in zip(fa, fb):
        if x.dtype != y.dtype:
            raise TypeError(f"{what}: Incompatible dataset elements:\n  {a} vs.\n  {b}")
        out.append(TensorSpec(_join_shapes(x.shape, y.shape), x.dtype))
    return pack(a, out)


def _join_shapes(a, b):
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def check_element(flat, specs, what):
    """Checks an element (flat tensors) against flat specs: InvalidArgumentError naming ``what``."""
    if len(flat) != len(specs):
        raise errors.InvalidArgumentError(None, None, f"{what}: expected an element of {len(specs)} "
                                          f"component(s), got {len(flat)}")
    for i, (t, s) in enumerate(zip(flat, specs)):
        if t.dtype != s.dtype:
            raise errors.InvalidArgumentError(None, None, f"{what}: component {i} should be {s.dtype.name}, "
                                              f"got {t.dtype.name}")
        if not s.shape.is_compatible_with(t.shape):
            raise errors.InvalidArgumentError(None, None, f"{what}: component {i} should have shape {s.shape}, "
                                              f"got {t.shape}")
